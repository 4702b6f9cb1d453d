package simulate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inrun/inrun/compiler"
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
// with a case for each of its cases, that each case's CR file reads, and
// that every child id and status field it names is its Blueprint's.
func TestPackFilesParse(t *testing.T) {
	for _, pack := range packs.List() {
		dir := t.TempDir()
		if err := packs.Copy(pack.Name, dir, packs.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, ex := range packs.Examples(pack.Name) {
			file := filepath.Join(dir, filepath.FromSlash(ex), "test", "simulate.yaml")
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
				bp, err := compiler.CompileFile(filepath.Join(filepath.Dir(filepath.Dir(file)), "blueprint.yaml"), compiler.Options{})
				if err != nil {
					t.Fatal(err)
				}
				sim, err := simulate.New(bp)
				if err != nil {
					t.Fatal(err)
				}
				if err := sim.CheckFile(f); err != nil {
					t.Error(err)
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

// TestBlueprintRefs checks a simulate file against its Blueprint: every
// child id (of a collection, of a used Blueprint's child, of the
// Blueprint's own) and status field a case names must be the Blueprint's,
// or be reported at its line with the one probably meant; a case that
// names one that is not does not run.
func TestBlueprintRefs(t *testing.T) {
	bp, err := compiler.CompileFile(filepath.Join("testdata", "refs", "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("testdata", "refs", "test", "simulate.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := simulate.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	diagtest.Check(t, file, src, sim.CheckFile(f), false)
	if _, err := sim.Serve(context.Background(), f); err == nil {
		t.Error("Serve started a file that names no child of the Blueprint")
	}
	for i := range f.Cases {
		c := &f.Cases[i]
		res := sim.RunCase(context.Background(), f, c)
		switch {
		case c.Name == "right" && !res.Passed():
			t.Errorf("case %q failed: %v\n%s", c.Name, res.Err, strings.Join(res.Failures, "\n"))
		case c.Name != "right" && (res.Err == nil || !strings.Contains(res.Err.Error(), `E0008 case "typos": expect.children[0].id "confg"`)):
			t.Errorf("case %q ran: %v", c.Name, res.Err)
		}
	}
}

// TestLoadReportsEverything: Load reports a file's own mistakes, what its
// cases name that the Blueprint lacks, and the CRs the API server would
// refuse, at once and each at its place (the simulate file, or the CR's
// file, once however many cases name it); a case that expects the refusal
// is not reported.
func TestLoadReportsEverything(t *testing.T) {
	bp, err := compiler.CompileFile(filepath.Join("testdata", "strict", "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("testdata", "load", "simulate.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := sim.Load(file)
	if f != nil {
		t.Error("Load returned a File with its errors")
	}
	elsewhere := diagtest.Check(t, file, src, err, true)
	crFile := filepath.Join("testdata", "load", "cr.yaml")
	crSrc, rerr := os.ReadFile(crFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	diagtest.Check(t, crFile, crSrc, elsewhere.Err(), false)
}
