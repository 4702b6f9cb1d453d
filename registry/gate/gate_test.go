package gate_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/registry/gate"
)

func website(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "website")
	if err := packs.Copy("website", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCollect(t *testing.T) {
	dir := website(t)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("SECRET=1"), 0o600)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("x"), 0o644)
	// What inrun build and inrun install generated from the pattern, in
	// their default places, and a file of the same name that is the
	// author's.
	write := func(name, content string) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("build/website-operator/internal/blueprint/blueprint.go", "// "+codegen.Header+"\npackage blueprint\n")
	write("build/website-operator/go.mod", "module example.com/website-operator\n")
	write("chart/Chart.yaml", install.Header+"apiVersion: v2\n")
	write("chart/templates/deployment.yaml", install.Header)
	write("notes/Chart.yaml", "# the author's own\n")
	files, err := gate.Collect(filepath.Join(dir, "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(files))
	want := []string{"README.md", "blueprint.yaml", "manifests/cr.yaml", "manifests/crd.yaml", "notes/Chart.yaml", "test/e2e.yaml", "test/simulate.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("Collect = %v, want %v (hidden files and generated output left out)", got, want)
	}
}

func TestCollectRefuses(t *testing.T) {
	dir := website(t)
	// The CRD moved out of the pattern's directory.
	outside := filepath.Join(filepath.Dir(dir), "crd.yaml")
	if err := os.Rename(filepath.Join(dir, "manifests", "crd.yaml"), outside); err != nil {
		t.Fatal(err)
	}
	bp := filepath.Join(dir, "blueprint.yaml")
	data, _ := os.ReadFile(bp)
	os.WriteFile(bp, []byte(strings.Replace(string(data), "file: manifests/crd.yaml", "file: ../crd.yaml", 1)), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := gate.Collect(bp)
	if err == nil || !strings.Contains(err.Error(), "E0005 the Blueprint names ../crd.yaml, outside its directory") || !strings.Contains(err.Error(), "link.yaml: E0019 not a regular file") {
		t.Errorf("Collect = %v, want both the outside file and the link named", err)
	}
}

func TestTestNeedsBothFiles(t *testing.T) {
	dir := website(t)
	os.Remove(filepath.Join(dir, "test", "e2e.yaml"))
	files, err := gate.Collect(filepath.Join(dir, "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Refused before any cluster starts.
	_, err = gate.Test(context.Background(), files, gate.Options{AssetsDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "the pattern has no test/e2e.yaml") {
		t.Errorf("Test = %v", err)
	}
}
