package kro_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/importer/kro"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/diag/diagtest"
	"github.com/inrun/inrun/load"
)

var update = flag.Bool("update", false, "rewrite the expected Blueprints and notes of testdata/*.txtar")

// Each testdata/*.txtar is one import: its files other than out/... and
// notes are the input, converted together. out/<path> are the Blueprints
// expected, notes the notes, one a line. What cannot be converted is
// expected inline in the input, as # ERROR E00nn "regexp" on the line the
// diagnostic points at (internal/diag/diagtest); an input with no ERROR
// comment must convert completely. -update rewrites out/... and notes.
func TestConvert(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			res, err := kro.Convert(c.inputs)
			checkDiagnostics(t, c.inputs, err)

			got := map[string][]byte{}
			for _, bp := range res.Blueprints {
				got["out/"+bp.Path] = bp.YAML
			}
			for _, crd := range res.CRDs {
				got["out/"+crd.Path] = crd.YAML
			}
			var notes bytes.Buffer
			for _, n := range res.Notes {
				notes.WriteString(n.String() + "\n")
			}
			if notes.Len() > 0 {
				got["notes"] = notes.Bytes()
			}
			if *update {
				c.write(t, got)
				return
			}
			for name, want := range c.outputs {
				if g, ok := got[name]; !ok {
					t.Errorf("%s was not made", name)
				} else if !bytes.Equal(g, want) {
					t.Errorf("%s differs (go test ./importer/kro -update rewrites it)\n--- got\n%s\n--- want\n%s", name, g, want)
				}
			}
			for name, g := range got {
				if _, ok := c.outputs[name]; !ok {
					t.Errorf("%s was made and is not expected (go test ./importer/kro -update adds it):\n%s", name, g)
				}
			}
		})
	}
}

// checkDiagnostics requires err to hold exactly the diagnostics the inputs'
// ERROR comments expect.
func checkDiagnostics(t *testing.T, inputs []kro.File, err error) {
	t.Helper()
	byFile := map[string]diag.List{}
	for _, d := range diag.All(err) {
		byFile[d.Pos.File] = append(byFile[d.Pos.File], d)
	}
	for _, f := range inputs {
		got := byFile[f.Name]
		delete(byFile, f.Name)
		if len(diagtest.Expectations(t, f.Name, f.Data)) == 0 {
			for _, d := range got {
				t.Errorf("unexpected diagnostic: %v", d)
			}
			continue
		}
		diagtest.Check(t, f.Name, f.Data, got.Err(), false)
	}
	for _, ds := range byFile {
		for _, d := range ds {
			t.Errorf("diagnostic outside the inputs: %v", d)
		}
	}
}

// TestConvertedChildrenCompile compiles every Blueprint converted without a
// problem, with its schema section replaced by crd.group, version and kind
// (the custom resource then dynamically typed): its children, kinds and
// expressions are a valid Blueprint's, whatever the schema section says.
// Blueprints that use others (composition) or CRDs, or read objects by a
// selector, need the files they use or the compiler's support for those,
// and are left to TestConvertedBlueprintsCompile.
func TestConvertedChildrenCompile(t *testing.T) {
	for _, c := range cases(t) {
		if c.expectsErrors(t) {
			continue
		}
		res, err := kro.Convert(c.inputs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, bp := range res.Blueprints {
			if len(bp.Uses) > 0 || len(bp.CRDs) > 0 || readsBySelector(t, bp) {
				continue
			}
			t.Run(c.name+"/"+bp.Path, func(t *testing.T) {
				src := withInstalledCRD(t, bp)
				if _, err := compiler.Compile(load.Bytes(bp.Path, src), compiler.Options{}); err != nil {
					t.Errorf("%v\n%s", err, src)
				}
			})
		}
	}
}

// TestConvertedBlueprintsCompile writes every import converted without a
// problem into a directory and compiles each Blueprint as it is, schema
// section and uses included: what inrun check does after inrun import kro.
//
// It needs the compiler to read the schema section and composition (uses).
func TestConvertedBlueprintsCompile(t *testing.T) {
	for _, c := range cases(t) {
		if c.expectsErrors(t) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			res, err := kro.Convert(c.inputs)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			paths, err := kro.Write(dir, res, kro.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range paths[:len(res.Blueprints)] {
				if _, err := compiler.CompileFile(p, compiler.Options{}); err != nil {
					t.Errorf("%v", err)
				}
			}
		})
	}
}

// readsBySelector reports whether bp has an externalRef with a selector.
func readsBySelector(t *testing.T, bp *kro.Blueprint) bool {
	var b struct {
		OnReconcile []struct {
			ExternalRef struct {
				Metadata map[string]any
			} `yaml:"externalRef"`
		} `yaml:"onReconcile"`
	}
	if err := yaml.Unmarshal(bp.YAML, &b); err != nil {
		t.Fatal(err)
	}
	for _, c := range b.OnReconcile {
		if _, ok := c.ExternalRef.Metadata["selector"]; ok {
			return true
		}
	}
	return false
}

// withInstalledCRD returns bp's YAML with its schema section replaced by
// crd.group, version, kind and scope.
func withInstalledCRD(t *testing.T, bp *kro.Blueprint) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(bp.YAML, &doc); err != nil {
		t.Fatal(err)
	}
	top := doc.Content[0]
	gvk := bp.GroupVersionKind
	crd := map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "schema" {
			continue
		}
		s := top.Content[i+1]
		for j := 0; j+1 < len(s.Content); j += 2 {
			if s.Content[j].Value == "scope" {
				crd["scope"] = s.Content[j+1].Value
			}
		}
		var n yaml.Node
		if err := n.Encode(crd); err != nil {
			t.Fatal(err)
		}
		top.Content[i].Value, top.Content[i+1] = "crd", &n
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testCase is one testdata/*.txtar.
type testCase struct {
	name    string
	path    string
	archive *txtar.Archive
	inputs  []kro.File
	outputs map[string][]byte
}

func cases(t *testing.T) []*testCase {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata/*.txtar: %v", err)
	}
	var out []*testCase
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := &testCase{name: strings.TrimSuffix(filepath.Base(p), ".txtar"), path: p, archive: ar, outputs: map[string][]byte{}}
		for _, f := range ar.Files {
			if isOutput(f.Name) {
				c.outputs[f.Name] = f.Data
			} else {
				c.inputs = append(c.inputs, kro.File{Name: f.Name, Data: f.Data})
			}
		}
		out = append(out, c)
	}
	return out
}

func isOutput(name string) bool { return strings.HasPrefix(name, "out/") || name == "notes" }

func (c *testCase) expectsErrors(t *testing.T) bool {
	for _, f := range c.inputs {
		if len(diagtest.Expectations(t, f.Name, f.Data)) > 0 {
			return true
		}
	}
	return false
}

// write rewrites the case's outputs with got, inputs first, then the
// Blueprints by path, then the notes.
func (c *testCase) write(t *testing.T, got map[string][]byte) {
	t.Helper()
	var files []txtar.File
	for _, f := range c.archive.Files {
		if !isOutput(f.Name) {
			files = append(files, f)
		}
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	slices.SortFunc(names, lessOutput)
	for _, name := range names {
		files = append(files, txtar.File{Name: name, Data: got[name]})
	}
	c.archive.Files = files
	if err := os.WriteFile(c.path, txtar.Format(c.archive), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lessOutput orders Blueprints by path, the notes last.
func lessOutput(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "notes":
		return 1
	case b == "notes":
		return -1
	}
	return strings.Compare(a, b)
}
