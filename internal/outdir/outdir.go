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
	"path/filepath"
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
}

// Prepare makes dir ready to be written: it creates it when missing,
// accepts it empty, and empties an earlier output of o's. It refuses any
// other directory, so that a mistyped path is never overwritten.
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

// Holds reports whether dir holds an output of o's: its marker, starting
// with its header.
func (o Output) Holds(dir string) bool {
	head, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(o.Marker)))
	return err == nil && bytes.HasPrefix(head, []byte(o.Header))
}
