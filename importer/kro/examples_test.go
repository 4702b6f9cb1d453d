package kro_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/importer/kro"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/load"
)

// TestKroExamples converts kro's own examples: every directory under
// examples/kubernetes of a kro checkout is one import of the
// ResourceGraphDefinitions in it (chained ones together), which must convert
// completely and compile: "children" with the schema section set aside
// (see TestConvertedChildrenCompile), "check" as written, as inrun check
// reads them, which needs the compiler's schema section and composition.
//
// kro's files are not vendored: the test reads a checkout named by
// INRUN_KRO_REPO, and is skipped without one (make kro-examples KRO=DIR).
func TestKroExamples(t *testing.T) {
	repo := os.Getenv("INRUN_KRO_REPO")
	if repo == "" {
		t.Skip("set INRUN_KRO_REPO to a checkout of github.com/kubernetes-sigs/kro (make kro-examples KRO=DIR)")
	}
	root := filepath.Join(repo, "examples", "kubernetes")
	imports := map[string][]kro.File{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil || !holdsRGD(data) {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		imports[filepath.Dir(rel)] = append(imports[filepath.Dir(rel)], kro.File{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) == 0 {
		t.Fatalf("no ResourceGraphDefinition under %s", root)
	}
	for dir, files := range imports {
		t.Run(dir, func(t *testing.T) {
			res, err := kro.Convert(files)
			if ds := diag.All(err); len(ds) > 0 && !slices.ContainsFunc(ds, func(d *diag.Diagnostic) bool { return d.Code != diag.UnknownKind }) {
				t.Skipf("creates kinds that are neither built in nor the example's own:\n%v", err)
			}
			if err != nil {
				t.Fatalf("not converted:\n%v", err)
			}
			for _, n := range res.Notes {
				t.Log(n)
			}
			t.Run("children", func(t *testing.T) {
				for _, bp := range res.Blueprints {
					if len(bp.Uses) > 0 || readsBySelector(t, bp) {
						continue
					}
					src := withInstalledCRD(t, bp)
					if _, err := compiler.Compile(load.Bytes(bp.Path, src), compiler.Options{}); err != nil {
						t.Errorf("%v\n%s", err, src)
					}
				}
			})
			t.Run("check", func(t *testing.T) {
				out := t.TempDir()
				paths, err := kro.Write(out, res, kro.WriteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range paths[:len(res.Blueprints)] {
					if _, err := compiler.CompileFile(p, compiler.Options{}); err != nil {
						t.Errorf("%v", err)
					}
				}
			})
		})
	}
}

// holdsRGD reports whether a YAML file has a kind: ResourceGraphDefinition
// document.
func holdsRGD(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc struct{ Kind string }
		if err := dec.Decode(&doc); err != nil {
			return false
		}
		if doc.Kind == "ResourceGraphDefinition" {
			return true
		}
	}
}
