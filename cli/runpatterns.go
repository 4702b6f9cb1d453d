package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/opencontainers/go-digest"
	"github.com/spf13/cobra"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/stack"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// patternFlags are inrun run's flags for patterns run by reference or by
// Stack.
type patternFlags struct {
	stack           string
	cacheDir        string
	keys            []string
	allowUnverified bool
	plainHTTP       bool
	poll            time.Duration
}

func (f *patternFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.stack, "stack", "", "run every pattern of this Stack file, each resolved to a verified version (docs/registry.md#stacks)")
	fl.StringVar(&f.cacheDir, "pattern-cache", "", "the OCI layout patterns are cached in and read from offline (default: inrun/patterns in the user's cache directory)")
	fl.StringSliceVar(&f.keys, "key", nil, "verify patterns' proofs with this public key file (repeatable; default: every .pub in the keys directory)")
	fl.BoolVar(&f.allowUnverified, "allow-unverified", false, "run a pattern whose proof does not verify, with a warning")
	fl.BoolVar(&f.plainHTTP, "plain-http", false, "talk HTTP, not HTTPS, to pattern registries (the default for localhost and loopback addresses)")
	fl.DurationVar(&f.poll, "pattern-poll", DefaultPatternPoll, "while running, read the index of each running pattern again this often, to put the Deprecated condition on its custom resources when a newer push deprecates its version; 0: never")
}

// DefaultPatternPoll is how often inrun run reads the index of a running
// pattern again: a deprecation shows within minutes, at a few small reads
// per pattern an hour.
const DefaultPatternPoll = 5 * time.Minute

// patternRef reads an argument of inrun run as a pattern reference,
// REGISTRY/[NAMESPACE/]NAME[@VERSION|:VERSION|@sha256:DIGEST]: one that is
// not a file and whose first element is a registry host. ok is false for a
// Blueprint file.
func patternRef(arg string) (e *stack.Entry, ok bool, err error) {
	if dir, isLayout := registry.IsLayoutRegistry(arg); isLayout {
		return layoutRef(arg, dir)
	}
	if _, statErr := os.Stat(arg); statErr == nil || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return nil, false, nil
	}
	host, rest, found := strings.Cut(arg, "/")
	if !found || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return nil, false, nil
	}
	repo, version, dgst := rest, "", ""
	if r, d, found := strings.Cut(rest, "@sha256:"); found {
		repo, dgst = r, "sha256:"+d
		if _, err := digest.Parse(dgst); err != nil {
			return nil, true, fmt.Errorf("%s: %q is not a sha256 digest (%v); copy it from inrun inspect or inrun patterns", arg, dgst, err)
		}
	} else if i := strings.LastIndexAny(rest, "@:"); i > 0 {
		repo, version = rest[:i], rest[i+1:]
	}
	e = &stack.Entry{Name: repo[strings.LastIndex(repo, "/")+1:], Registry: host, Version: version}
	if i := strings.LastIndex(repo, "/"); i > 0 {
		e.Registry = host + "/" + repo[:i]
	}
	if e.Version == "" {
		e.Version = "*" // the newest
	}
	s, err := stack.Read(arg, []byte(fmt.Sprintf("apiVersion: inrun.dev/v1alpha1\nkind: Stack\npatterns:\n  - {name: %q, registry: %q, version: %q}\n", e.Name, e.Registry, e.Version)))
	if err != nil {
		return nil, true, fmt.Errorf("%s is not a pattern reference: write REGISTRY/[NAMESPACE/]NAME[@VERSION] with a semver VERSION, such as localhost:5000/team/website@1.2.0, or NAME@sha256:DIGEST", arg)
	}
	e = s.Patterns[0]
	e.Digest = dgst
	e.Pos = ir.Pos{File: arg}
	return e, true, nil
}

// layoutRef reads oci:DIR/NAME[@VERSION|@sha256:DIGEST], a pattern in an
// OCI layout directory.
func layoutRef(arg, rest string) (*stack.Entry, bool, error) {
	const form = "write oci:DIR/NAME[@VERSION], such as oci:./patterns/website@1.2.0: the layout's directory, then the pattern's name"
	i := strings.LastIndex(rest, "/")
	if i <= 0 {
		return nil, true, fmt.Errorf("%s names no pattern: %s", arg, form)
	}
	dir, name, version := rest[:i], rest[i+1:], "*"
	e := &stack.Entry{Registry: registry.LayoutScheme + dir, Pos: ir.Pos{File: arg}}
	if n, d, found := strings.Cut(name, "@sha256:"); found {
		name, e.Digest = n, "sha256:"+d
		if _, err := digest.Parse(e.Digest); err != nil {
			return nil, true, fmt.Errorf("%s: %q is not a sha256 digest (%v)", arg, e.Digest, err)
		}
	} else if n, v, found := strings.Cut(name, "@"); found {
		name, version = n, v
	}
	s, err := stack.Read(arg, []byte(fmt.Sprintf("apiVersion: inrun.dev/v1alpha1\nkind: Stack\npatterns:\n  - {name: %q, registry: %q, version: %q}\n", name, e.Registry, version)))
	if err != nil || name == "" {
		return nil, true, fmt.Errorf("%s is not a pattern in an OCI layout: %s", arg, form)
	}
	s.Patterns[0].Digest, s.Patterns[0].Pos = e.Digest, e.Pos
	return s.Patterns[0], true, nil
}

// resolve takes the patterns out of args (and the --stack's), resolves
// each to a verified version, caches it, and compiles its Blueprint. It
// returns those Blueprints and the args that are Blueprint files. A
// registry that does not answer is read from the cache instead.
func (f *patternFlags) resolve(ctx context.Context, out io.Writer, args []string) ([]*ir.Blueprint, []string, *patternWatch, error) {
	s := &stack.Stack{}
	var files []string
	for _, a := range args {
		e, ok, err := patternRef(a)
		if err != nil {
			return nil, nil, nil, err
		}
		if !ok {
			files = append(files, a)
			continue
		}
		s.Patterns = append(s.Patterns, e)
	}
	if f.stack != "" {
		st, err := stack.ReadFile(f.stack)
		if err != nil {
			return nil, nil, nil, err
		}
		s.Patterns = append(s.Patterns, st.Patterns...)
	}
	if len(s.Patterns) == 0 {
		return nil, files, nil, nil
	}
	trusted, err := trustedKeys(f.keys)
	if err != nil {
		return nil, nil, nil, err
	}
	dir := f.cacheDir
	if dir == "" {
		if dir, err = registry.DefaultCacheDir(); err != nil {
			return nil, nil, nil, err
		}
	}
	cache, err := registry.OpenLayout(ctx, dir, func() {
		fmt.Fprintf(out, "Waiting for another inrun that is using the pattern cache %s...\n", dir)
	})
	if err != nil {
		return nil, nil, nil, err
	}
	defer cache.Close()
	online := map[string]registry.Registry{}
	open := func(ctx context.Context, host string) (registry.Registry, error) {
		if dir, ok := registry.IsLayoutRegistry(host); ok {
			return registry.OpenLayoutDir(ctx, dir) // local already: not cached
		}
		if r, ok := online[host]; ok {
			return r, nil
		}
		r := registry.NewRemote(host)
		r.PlainHTTP = r.PlainHTTP || f.plainHTTP
		if err := r.Reachable(ctx); err != nil {
			if !cache.Has(ctx, host) {
				return nil, fmt.Errorf("%w\n(nothing of %s is in the pattern cache %s to run offline)", err, host, dir)
			}
			fmt.Fprintf(out, "Registry %s does not answer; resolving its patterns from the cache %s.\n", host, dir)
			return cache.Registry(host), nil
		}
		// What the cache holds by digest is not fetched again.
		online[host] = registry.ReadThrough(r, cache.Registry(host))
		return online[host], nil
	}
	resolved, err := stack.Resolve(ctx, s, stack.Options{Open: open, Trusted: trusted, AllowUnverified: f.allowUnverified})
	if err != nil {
		return nil, nil, nil, err
	}
	var bps []*ir.Blueprint
	w := &patternWatch{interval: f.poll, plainHTTP: f.plainHTTP, out: out}
	for _, r := range resolved {
		fetched := r.Fetched
		ref := fetched.Reference
		ref.Reference = r.Version
		if reg, ok := online[ref.Registry]; ok {
			if err := cache.Save(ctx, reg, fetched); err != nil {
				fmt.Fprintf(out, "WARNING: %v (the pattern runs, but is not cached for offline use)\n", err)
			}
		}
		bp, err := compiler.Compile(fetched.Pattern.Source(ref.String()), compileOptions())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s (%s) does not compile with this Inrun:\n%w", ref, fetched.Descriptor.Digest, err)
		}
		how := "verified, signed by " + shortID(fetched)
		if fetched.Unverified != nil {
			how = fmt.Sprintf("NOT VERIFIED: %v", fetched.Unverified)
		}
		fmt.Fprintf(out, "Pattern %s: %s (%s).\n", ref, fetched.Descriptor.Digest, how)
		if d := r.Deprecation; d != nil {
			// The IR is not changed after compiling: the running copy
			// carries the deprecation.
			run := *bp
			run.Deprecated = runningDeprecation(ref.String(), r)
			bp = &run
			fmt.Fprintf(out, "WARNING: %s is deprecated: %s; the Stack accepts it until %s.\n", ref, d, r.Until.Format("2006-01-02"))
		}
		bps = append(bps, bp)
		w.patterns = append(w.patterns, &watchedPattern{ref: ref.String(), blueprint: bp.Name, resolved: r, holder: reconciler.NewDeprecationHolder(bp.Deprecated)})
	}
	return bps, files, w, nil
}

// runningDeprecation is the Deprecated of a Blueprint run as r: nil when
// no deprecation covers r's version.
func runningDeprecation(ref string, r *stack.Resolved) *ir.Deprecated {
	d := r.Deprecation
	if d == nil {
		return nil
	}
	return &ir.Deprecated{Pattern: ref, Message: d.Message, Replacement: d.Replacement, Until: r.Until, Refused: r.Refused}
}

// patternWatch reads the index of each running pattern again every
// interval and tells the runtime, through each Blueprint's holder, when a
// deprecation now covers the version it runs, or no longer does. It never
// stops what runs: a Stack's acceptance decides only at start.
type patternWatch struct {
	interval  time.Duration
	plainHTTP bool
	out       io.Writer
	patterns  []*watchedPattern
}

type watchedPattern struct {
	ref       string
	blueprint string
	resolved  *stack.Resolved
	holder    *reconciler.DeprecationHolder
}

// holders are the Blueprints' deprecation holders, by Blueprint name, for
// runner.Options.Deprecations.
func (w *patternWatch) holders() map[string]*reconciler.DeprecationHolder {
	if w == nil {
		return nil
	}
	m := map[string]*reconciler.DeprecationHolder{}
	for _, p := range w.patterns {
		m[p.blueprint] = p.holder
	}
	return m
}

// run checks every interval until ctx is done. A registry that does not
// answer is logged and asked again next time; what it said last holds.
func (w *patternWatch) run(ctx context.Context, log logr.Logger) {
	if w == nil || w.interval <= 0 || len(w.patterns) == 0 {
		return
	}
	open := func(ctx context.Context, host string) (registry.Registry, error) {
		if dir, ok := registry.IsLayoutRegistry(host); ok {
			return registry.OpenLayoutDir(ctx, dir)
		}
		r := registry.NewRemote(host)
		r.PlainHTTP = r.PlainHTTP || w.plainHTTP
		return r, nil
	}
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range w.patterns {
			// A registry that hangs must not stop the other patterns'
			// reads, nor the next ones.
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			now, err := stack.Recheck(rctx, p.resolved, stack.Options{Open: open})
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					log.Error(err, "reading the pattern's index again; it keeps running, and is read again later", "pattern", p.ref, "retry", w.interval)
				}
				continue
			}
			d := runningDeprecation(p.ref, now)
			if !p.holder.Set(d) {
				continue
			}
			if d == nil {
				fmt.Fprintf(w.out, "%s is no longer deprecated.\n", p.ref)
			} else {
				fmt.Fprintf(w.out, "WARNING: %s.\n", reconciler.DeprecatedMessage(d))
			}
		}
	}
}
