package kro_test

import (
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/inrun/inrun/importer/kro"
	"github.com/inrun/inrun/internal/diag"
)

// FuzzConvert feeds Convert arbitrary files: it must not panic, every
// problem must be a diagnostic with a position in the file, and every
// Blueprint it writes must be YAML.
func FuzzConvert(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.txtar")
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range ar.Files {
			if !isOutput(file.Name) {
				f.Add(file.Data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := kro.Convert([]kro.File{{Name: "rgd.yaml", Data: data}})
		for _, d := range diag.All(err) {
			if d.Pos.File != "rgd.yaml" {
				t.Errorf("diagnostic without the file's position: %v", d)
			}
		}
		if err != nil && len(diag.All(err)) == 0 {
			t.Errorf("an error that holds no diagnostic: %v", err)
		}
		for _, bp := range res.Blueprints {
			var v any
			if err := yaml.Unmarshal(bp.YAML, &v); err != nil {
				t.Errorf("%s is not YAML: %v\n%s", bp.Path, err, bp.YAML)
			}
		}
	})
}
