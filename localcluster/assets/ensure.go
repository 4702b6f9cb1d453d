package assets

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Ensure makes sure opts.Dir (or DefaultDir) holds every asset at the
// expected version, building what is missing, and returns the directory.
//
// What is already there is verified, not trusted: each file must match the
// sha256 recorded when it was built and each binary must report the expected
// version. Only the groups that fail are rebuilt. A build runs go build in a
// throwaway module in a temporary directory, with GOFLAGS=-mod=mod and
// GOTOOLCHAIN=local, so neither the caller's module nor its go.mod is
// involved; the Go build cache is the caller's, so rebuilds are fast.
//
// Ensure holds a lock on the directory while it works, so concurrent calls
// (a test run and "make assets", say) build once. Cancelling ctx stops a
// build and leaves what was already built in place.
func Ensure(ctx context.Context, opts Options) (string, error) {
	if err := opts.setDefaults(); err != nil {
		return "", err
	}
	dir := opts.Dir
	p := &printer{w: opts.Progress}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the assets directory: %w", err)
	}
	unlock, err := lockDir(ctx, dir, p)
	if err != nil {
		return "", err
	}
	defer unlock()

	m, err := readManifest(dir)
	if err != nil {
		m = &manifest{Versions: map[string]string{}, Files: map[string]string{}}
	}
	type stale struct {
		group
		reason error
	}
	var todo []stale
	for _, g := range groups() {
		if err := m.verify(ctx, dir, g); err != nil {
			todo = append(todo, stale{g, err})
		}
	}

	if len(todo) > 0 {
		goCmd, err := exec.LookPath(opts.GoCommand)
		if err != nil {
			return "", fmt.Errorf("building the control plane needs the go command (Go 1.26 or newer) on PATH: %w", err)
		}
		b := &builder{goCmd: goCmd, progress: p, logDir: filepath.Join(dir, "logs")}
		p.printf("Building the local control plane %s into %s", VersionTag(), dir)
		p.printf("Every binary is compiled from source through the Go module proxy; later builds reuse the Go build cache.")
		start := time.Now()
		for i, s := range todo {
			step := fmt.Sprintf("[%d/%d]", i+1, len(todo))
			p.printf("%s %s %s from %s (%s the first time)", step, s.title(), s.version, s.module, s.estimate)
			if m.Versions[s.name] != "" {
				p.printf("      rebuilding: %v", s.reason)
			}
			t := time.Now()
			if err := b.buildGroup(ctx, dir, s.group, m); err != nil {
				return "", fmt.Errorf("building %s %s: %w", s.title(), s.version, err)
			}
			p.printf("%s %s done in %s", step, s.title(), since(t))
		}
		p.printf("Built in %s.", since(start))
	}

	if len(todo) == 0 {
		p.printf("Verified the control plane assets %s in %s:", VersionTag(), dir)
	} else {
		p.printf("Control plane assets %s are in %s:", VersionTag(), dir)
	}
	for _, g := range groups() {
		for _, bin := range g.binaries {
			p.printf("  %s %s is at %s", bin, g.version, filepath.Join(dir, bin))
		}
	}
	return dir, nil
}

// buildGroup builds g into a fresh directory beside the assets, moves the
// result into place and records it in the manifest. Building beside rather
// than in os.TempDir keeps the final renames on one file system, so each
// binary is replaced atomically, even under a cluster that is running it.
func (b *builder) buildGroup(ctx context.Context, dir string, g group, m *manifest) error {
	out, err := os.MkdirTemp(dir, ".build-"+g.name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	if err := g.build(ctx, b, out); err != nil {
		return err
	}

	var files []string
	err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	// Stage files that a new build no longer has must not linger: kwok
	// would still load them.
	built := map[string]bool{}
	for _, f := range files {
		built[f] = true
	}
	for name := range m.Files {
		if g.owns(name) && !built[name] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	for _, f := range files {
		dst := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(out, filepath.FromSlash(f)), dst); err != nil {
			return err
		}
	}
	if err := m.record(dir, g, files); err != nil {
		return err
	}
	if err := m.write(dir); err != nil {
		return err
	}
	// Catch a build that succeeded but is wrong, such as a binary that
	// does not report the stamped version.
	return m.verify(ctx, dir, g)
}

func since(t time.Time) time.Duration {
	return time.Since(t).Round(time.Second)
}
