package compiler_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
)

// FuzzCompile compiles arbitrary Blueprints against arbitrary CRD
// manifests. Compile must not panic, and must return either a Blueprint or
// an error holding at least one diagnostic, never both or neither.
//
// The CRD is the second input: ReadFile serves it for whatever crd.file
// names, or reports the file missing when it is empty, so the fuzzer never
// reads the disk. The seeds are every Blueprint in testdata and in the
// packs, each with the CRD it names.
func FuzzCompile(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"testdata/*.yaml", "testdata/errors/*.yaml", "../packs/*/blueprint.yaml", "../packs/*/*/blueprint.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) < 10 {
		f.Fatalf("only %d seeds", len(seeds))
	}
	for _, file := range seeds {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src, seedCRD(file, src))
	}

	f.Fuzz(func(t *testing.T, src, crd []byte) {
		source := load.Bytes("fuzz/blueprint.yaml", src)
		source.Files = fuzzFiles(crd)
		bp, err := compiler.Compile(source, compiler.Options{})
		if err == nil {
			if bp == nil {
				t.Fatal("Compile returned neither a Blueprint nor an error")
			}
			checkComplete(t, bp)
			return
		}
		if bp != nil {
			t.Errorf("Compile returned a Blueprint and an error: %v", err)
		}
		errs := diag.All(err)
		if len(errs) == 0 {
			t.Fatalf("Compile's error holds no diagnostic: %v", err)
		}
		for _, e := range errs {
			if e.Code < 1 || e.Code > diag.UnknownType || e.Msg == "" || e.Pos.Line < 0 || e.Pos.Col < 0 {
				t.Errorf("malformed diagnostic %#v", e)
			}
		}
	})
}

// checkComplete checks what Compile promises of a Blueprint it returns
// without error: every child has an id and a kind, and every expression
// was type-checked.
func checkComplete(t *testing.T, bp *ir.Blueprint) {
	t.Helper()
	for _, ch := range bp.Children {
		if ch.ID == "" || ch.Kind == "" || ch.Version == "" || ch.Template == nil || ch.DependsOn == nil {
			t.Errorf("incomplete child %+v", ch)
		}
	}
	for _, x := range bp.Exprs() {
		if x.Type == "" || x.Refs == nil || x.Checked == nil {
			t.Errorf("${%s} was not checked: Type %q, Refs %v, Checked %v", x.Source, x.Type, x.Refs, x.Checked != nil)
		}
	}
}

// seedCRD returns the CRD manifest the Blueprint src names in crd.file,
// or nil.
func seedCRD(file string, src []byte) []byte {
	var bp struct {
		CRD struct {
			File string `yaml:"file"`
		} `yaml:"crd"`
	}
	if yaml.Unmarshal(src, &bp) != nil || bp.CRD.File == "" {
		return nil
	}
	crd, err := os.ReadFile(filepath.Join(filepath.Dir(file), bp.CRD.File))
	if err != nil {
		return nil
	}
	return crd
}

// fuzzFiles serves the fuzzed CRD for whatever crd.file names, or reports
// the file missing when it is empty, so the fuzzer never reads the disk.
type fuzzFiles []byte

func (f fuzzFiles) ReadFile(string) ([]byte, error) {
	if len(f) == 0 {
		return nil, fs.ErrNotExist
	}
	return bytes.Clone(f), nil
}

func (f fuzzFiles) Path(name string) string { return "fuzz/" + name }
