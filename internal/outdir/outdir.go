// Package outdir prepares the directory a generator writes into, for
// inrun build's operator (package codegen) and its inrun with Go modules
// compiled in (package builder): one rule for both, so that neither can
// overwrite what it did not write.
package outdir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Output is what a generator writes: how to recognise an earlier output,
// and what to remove of it.
type Output struct {
	// Marker is a slash-separated file inside the directory that every
	// output holds, and Header how it starts.
	Marker, Header string
	// Roots are the paths an output consists of, removed before writing
	// again; nil removes every entry.
	Roots []string
	// What names the output in the refusal: "inrun build output".
	What string
	// Manifest, when set, is a slash-separated file in which an output
	// lists every file it wrote (WriteManifest). An earlier output with
	// one loses those files only, so that what its user added (a
	// controller of their own, a config overlay) is kept; one without is
	// emptied of its Roots.
	Manifest string
}

// Prepare makes dir ready to be written: it creates it when missing,
// accepts it empty, and removes an earlier output of o's (the files its
// manifest lists, else its roots). It refuses any other directory, so that
// a mistyped path is never overwritten.
func (o Output) Prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) == 0:
		return nil
	}
	if !o.Holds(dir) {
		return fmt.Errorf("%s is not empty and holds no earlier %s; choose an empty directory with --out", dir, o.What)
	}
	if o.Manifest != "" {
		if listed, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(o.Manifest))); err == nil {
			return removeListed(dir, append(strings.Split(strings.TrimSpace(string(listed)), "\n"), o.Manifest))
		}
	}
	roots := o.Roots
	if roots == nil {
		for _, e := range entries {
			roots = append(roots, e.Name())
		}
	}
	for _, name := range roots {
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			return err
		}
	}
	return nil
}

// removeListed removes the files of dir that paths name (slash-separated,
// none outside dir), then the directories that leaves empty.
func removeListed(dir string, paths []string) error {
	dirs := map[string]bool{}
	for _, p := range paths {
		clean := path.Clean(p)
		if p == "" || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(clean))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for d := path.Dir(clean); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	// Deepest first; a directory that still holds something stays.
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Slice(sorted, func(i, j int) bool { return strings.Count(sorted[i], "/") > strings.Count(sorted[j], "/") })
	for _, d := range sorted {
		if entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(d))); err == nil && len(entries) == 0 {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(d))); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteManifest records in dir the files an output of o's wrote, for the
// next Prepare.
func (o Output) WriteManifest(dir string, paths []string) error {
	sorted := slices.Clone(paths)
	sort.Strings(sorted)
	return os.WriteFile(filepath.Join(dir, filepath.FromSlash(o.Manifest)), []byte(strings.Join(sorted, "\n")+"\n"), 0o644)
}

// Holds reports whether dir holds an output of o's: its marker, starting
// with its header.
func (o Output) Holds(dir string) bool {
	head, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(o.Marker)))
	return err == nil && bytes.HasPrefix(head, []byte(o.Header))
}
