package simulate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inrun/inrun/internal/diag/diagtest"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/simulate"
)

// TestErrors is the simulate format's check test, after go/types: every
// file in testdata/errors is wrong on purpose, and says inline which
// diagnostics it expects, as YAML comments on the line each points at:
//
//	pases: 3 # ERROR E0002 "unknown field pases; did you mean passes\?"
//
// The code must match and the quoted regexp must match the message, then
// "; " and the hint when there is one (package internal/diag/diagtest).
func TestErrors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/errors/*.yaml (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := simulate.Parse(file, src)
			if f != nil && err != nil {
				t.Errorf("Parse returned a File and an error")
			}
			diagtest.Check(t, file, src, err, false)
		})
	}
}

// TestPackFilesParse checks that every pack's test/simulate.yaml parses,
// with a case for each of its cases, and that each case's CR file reads.
func TestPackFilesParse(t *testing.T) {
	for _, pack := range packs.List() {
		dir := t.TempDir()
		if err := packs.Copy(pack.Name, dir, packs.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, ex := range packs.Examples(pack.Name) {
			file := filepath.Join(dir, filepath.FromSlash(ex), "test", "simulate.yaml")
			if _, err := os.Stat(file); err != nil && packs.GoModule(pack.Name, ex) {
				continue // a controller-runtime reconciler: e2e cases only
			}
			t.Run(pack.Name+"/"+ex, func(t *testing.T) {
				f, err := simulate.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if len(f.Cases) == 0 {
					t.Fatal("no cases")
				}
				for i := range f.Cases {
					if _, err := f.LoadCR(&f.Cases[i]); err != nil {
						t.Errorf("case %q: %v", f.Cases[i].Name, err)
					}
				}
			})
		}
	}
}

// TestReadObjectErrors checks the problems of object files (a case's cr,
// inrun render's CR) the same way.
func TestReadObjectErrors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "objects", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/objects/*.yaml (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, err = simulate.ReadObject(file)
			diagtest.Check(t, file, src, err, false)
		})
	}
}
