package stack

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/registry"
)

// Options configures Resolve.
type Options struct {
	// Open returns the registry at host. Required.
	Open func(ctx context.Context, host string) (registry.Registry, error)
	// Trusted are the keys a proof may be signed with.
	Trusted []registry.PublicKey
	// AllowUnverified resolves a pattern whose proof does not verify
	// instead of refusing it; Resolved.Fetched.Unverified says why.
	AllowUnverified bool
	// Now is the time acceptances and deprecations are judged at.
	// Default: time.Now.
	Now func() time.Time
}

// Resolved is an entry resolved to one verified pattern version.
type Resolved struct {
	Entry *Entry
	// Version is the version chosen: the newest that meets the entry's
	// constraint.
	Version string
	// Fetched is the pattern read by digest, with its proof.
	Fetched *registry.Fetched
	// Deprecation is the deprecation covering the version, nil when none
	// does; Accepted is then the acceptance that lets it run, and Until
	// the last day it may (the earlier of its until and the deprecation's
	// after).
	Deprecation *registry.Deprecation
	Accepted    *Acceptance
	Until       time.Time
	// Refused is set only by Recheck: why a fresh start would refuse the
	// version the deprecation covers (the Stack does not accept it, or no
	// longer does). What runs keeps running.
	Refused string
}

// Resolve resolves every entry of s and returns them in order, or every
// entry's problem at once, each at the entry's position.
func Resolve(ctx context.Context, s *Stack, opts Options) ([]*Resolved, error) {
	var (
		out  []*Resolved
		errs diag.List
	)
	for _, e := range s.Patterns {
		r, err := ResolveEntry(ctx, e, opts)
		if err != nil {
			errs.Append(e.Pos, diag.UnresolvedPattern, err)
			continue
		}
		out = append(out, r)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ResolveEntry resolves one entry: the newest version in the index of its
// registry namespace that meets its constraint, fetched by digest and
// verified, and judged against its deprecation.
func ResolveEntry(ctx context.Context, e *Entry, opts Options) (*Resolved, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if e.Constraint == nil && e.Digest == "" {
		return nil, fmt.Errorf("pattern %s has no version constraint", e.Name)
	}
	reg, err := opts.Open(ctx, e.Host())
	if err != nil {
		return nil, err
	}
	idx, err := registry.ReadIndex(ctx, reg, e.Namespace())
	if err != nil {
		return nil, fmt.Errorf("pattern %s: %w", e.Name, err)
	}
	i := slices.IndexFunc(idx.Patterns, func(p registry.IndexPattern) bool { return p.Name == e.Name })
	if e.Digest != "" {
		ip := &registry.IndexPattern{Name: e.Name, Repository: path.Join(e.Namespace(), e.Name)}
		if i >= 0 {
			ip = &idx.Patterns[i]
		}
		return resolveDigest(ctx, e, reg, ip, opts)
	}
	if i < 0 {
		hint := "list what it holds with inrun patterns " + e.Registry
		names := make([]string, len(idx.Patterns))
		for j, p := range idx.Patterns {
			names[j] = p.Name
		}
		if near, ok := suggest.Closest(e.Name, names); ok {
			hint = "did you mean " + near + "? (" + hint + ")"
		}
		return nil, unresolved(e, "pattern %s is not in %s", hint, e.Name, e.Registry)
	}
	ip := &idx.Patterns[i]
	chosen, sv := newest(ip, e.Constraint)
	if chosen == nil {
		var all []string
		for _, v := range ip.Versions {
			all = append(all, v.Version)
		}
		return nil, unresolved(e, "no version of %s in %s meets %q (it has %s)", "change the constraint, or push a version that meets it", e.Name, e.Registry, e.Version, strings.Join(all, ", "))
	}
	ref := registry.Reference{Registry: e.Host(), Repository: ip.Repository, Reference: chosen.Digest}
	f, err := registry.Fetch(ctx, reg, ref, registry.FetchOptions{Trusted: opts.Trusted})
	if err != nil {
		return nil, err
	}
	// The index is only a list: the version it names must be the one the
	// digest holds.
	if f.Pattern.Name != e.Name || f.Pattern.Version != chosen.Version {
		return nil, unresolved(e, "the index says %s is %s %s, but it holds %s %s", "ask the publisher to push the version again, which repairs the index", chosen.Digest, e.Name, chosen.Version, f.Pattern.Name, f.Pattern.Version)
	}
	if f.Unverified != nil && !opts.AllowUnverified {
		return nil, unresolved(e, "%s %s does not verify: %v", "trust the publisher's key (inrun keys), or ask them to push it again", e.Name, chosen.Version, f.Unverified)
	}
	r := &Resolved{Entry: e, Version: chosen.Version, Fetched: f}
	r.Deprecation = registry.Covering(ip, f.Pattern, sv.Original())
	if r.Deprecation == nil {
		return r, nil
	}
	_, err = judge(e, r, opts.Now())
	return r, err
}

// Recheck reads the index of r's registry namespace again and judges the
// version r runs against the deprecations the index holds now, as
// ResolveEntry does, but without refusing it: a deprecation no acceptance
// covers any more is returned in the copy's Refused. The pattern itself
// is not read again; its digest fixes it. It is how a runtime learns,
// while it runs, that a newer push deprecated the version it runs.
func Recheck(ctx context.Context, r *Resolved, opts Options) (*Resolved, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := r.Entry
	reg, err := opts.Open(ctx, e.Host())
	if err != nil {
		return nil, err
	}
	idx, err := registry.ReadIndex(ctx, reg, e.Namespace())
	if err != nil {
		return nil, fmt.Errorf("pattern %s: %w", e.Name, err)
	}
	// A pattern gone from the index keeps the deprecation its own
	// manifest carries.
	ip := &registry.IndexPattern{Name: e.Name}
	if i := slices.IndexFunc(idx.Patterns, func(p registry.IndexPattern) bool { return p.Name == e.Name }); i >= 0 {
		ip = &idx.Patterns[i]
	}
	now := &Resolved{Entry: e, Version: r.Version, Fetched: r.Fetched}
	if now.Deprecation = registry.Covering(ip, r.Fetched.Pattern, r.Version); now.Deprecation != nil {
		now.Refused, _ = judge(e, now, opts.Now())
	}
	return now, nil
}

// resolveDigest resolves an entry that names a digest: the pattern there,
// read and verified, must be the entry's, and is judged against its
// deprecation, its own or one the index's other versions scope over it,
// as a version is. The digest needs no index entry: a pattern copied
// without its index runs by digest.
func resolveDigest(ctx context.Context, e *Entry, reg registry.Registry, ip *registry.IndexPattern, opts Options) (*Resolved, error) {
	ref := registry.Reference{Registry: e.Host(), Repository: ip.Repository, Reference: e.Digest}
	f, err := registry.Fetch(ctx, reg, ref, registry.FetchOptions{Trusted: opts.Trusted})
	if err != nil {
		return nil, err
	}
	if f.Pattern.Name != e.Name {
		return nil, unresolved(e, "%s holds the pattern %s, not %s", "check the digest: inrun inspect shows a pattern's", e.Digest, f.Pattern.Name, e.Name)
	}
	if f.Unverified != nil && !opts.AllowUnverified {
		return nil, unresolved(e, "%s@%s does not verify: %v", "trust the publisher's key (inrun keys), or ask them to push it again", e.Name, e.Digest, f.Unverified)
	}
	r := &Resolved{Entry: e, Version: f.Pattern.Version, Fetched: f}
	if r.Deprecation = registry.Covering(ip, f.Pattern, f.Pattern.Version); r.Deprecation == nil {
		return r, nil
	}
	_, err = judge(e, r, opts.Now())
	return r, err
}

// newest returns the newest version of p that meets c. Versions that are
// not semver are never chosen.
func newest(p *registry.IndexPattern, c *semver.Constraints) (*registry.IndexVersion, *semver.Version) {
	var (
		best   *registry.IndexVersion
		bestSV *semver.Version
	)
	for i := range p.Versions {
		v := &p.Versions[i]
		sv, err := semver.NewVersion(v.Version)
		if err != nil || !c.Check(sv) {
			continue
		}
		if bestSV == nil || sv.GreaterThan(bestSV) {
			best, bestSV = v, sv
		}
	}
	return best, bestSV
}

// judge lets a deprecated version run only while the Stack accepts it and
// the publisher's after date has not passed. When it does not, refused
// says why in a few words, and err is the diagnostic at the entry (or at
// the lapsed acceptance).
func judge(e *Entry, r *Resolved, now time.Time) (refused string, err error) {
	d := r.Deprecation
	move := "move to " + d.Replacement
	if d.Replacement == "" {
		move = "move off it"
	}
	if d.Ended(now) {
		return "no longer accepted since " + d.After, deprecated(e.Pos, move, "%s %s is deprecated (%s) and no longer accepted since %s", e.Name, r.Version, d.Message, d.After)
	}
	sv, _ := semver.NewVersion(r.Version)
	i := slices.IndexFunc(e.Accept, func(a *Acceptance) bool { return a.Constraint != nil && a.Constraint.Check(sv) })
	if i < 0 {
		return "no Stack accepts it", deprecated(e.Pos, move+fmt.Sprintf(", or accept it in the Stack: accept: {version: %q, until: YYYY-MM-DD}", r.Version), "%s %s is deprecated: %s", e.Name, r.Version, d.Message)
	}
	a := e.Accept[i]
	day := a.Until.Format(time.DateOnly)
	if registry.DayPassed(day, now) {
		return "the Stack's acceptance lapsed after " + day, deprecated(a.Pos, move+", or extend until if the team truly needs more time", "the Stack's acceptance of %s %s lapsed after %s: %s", e.Name, r.Version, day, d.Message)
	}
	r.Accepted, r.Until = a, a.Until
	if d.After != "" {
		if after, err := time.Parse(time.DateOnly, d.After); err == nil && after.Before(r.Until) {
			r.Until = after
		}
	}
	return "", nil
}

func deprecated(pos diag.Pos, hint, format string, args ...any) error {
	var l diag.List
	l.Add(pos, diag.DeprecatedPattern, hint, format, args...)
	return l.Err()
}

func unresolved(e *Entry, format, hint string, args ...any) error {
	var l diag.List
	l.Add(e.Pos, diag.UnresolvedPattern, hint, format, args...)
	return l.Err()
}
