package load_test

import (
	"testing"

	"github.com/inrun/inrun/load"
)

func TestUsedConfigMap(t *testing.T) {
	for path, want := range map[string]string{
		"database/blueprint.yaml":        "database",
		"../database/blueprint.yaml":     "database",
		"./blueprints/db/blueprint.yaml": "db",
		"db.yaml":                        "db",
		"../shared/postgres.yml":         "postgres",
	} {
		if got := load.UsedConfigMap(path); got != want {
			t.Errorf("UsedConfigMap(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestOpen: a used Blueprint's files are read from its own directory.
func TestOpen(t *testing.T) {
	src := load.Bytes("testdata/app/blueprint.yaml", nil)
	used, err := src.Open("../database/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if used.Name != "testdata/database/blueprint.yaml" || string(used.Data) != "database\n" {
		t.Errorf("Open: %s %q", used.Name, used.Data)
	}
	if p := used.Files.Path("manifests/crd.yaml"); p != "testdata/database/manifests/crd.yaml" {
		t.Errorf("its crd.file is read from %s", p)
	}
	if data, err := used.Files.ReadFile("manifests/crd.yaml"); err != nil || string(data) != "crd\n" {
		t.Errorf("ReadFile: %q, %v", data, err)
	}
}
