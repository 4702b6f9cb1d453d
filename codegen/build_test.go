package codegen_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inrun/inrun/codegen"
)

// TestBuildWebsite is inrun build as a user runs it on the website pack,
// with the real go toolchain: go mod tidy through the module proxy, go vet,
// the generated project's own tests (simulate in memory, e2e on a local
// control plane), go build.
func TestBuildWebsite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a controller-runtime module: a minute or two")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "website-operator")
	var progress bytes.Buffer
	_, err := codegen.Build(context.Background(), "../packs/website/blueprint.yaml", codegen.BuildOptions{
		Out:      filepath.Join(dir, "website-operator"),
		Binary:   bin,
		Progress: &progress,
	})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&0o111 == 0 {
		t.Errorf("%s is not executable", bin)
	}
	for _, step := range []string{"go mod tidy", "go vet ./...", "go test", "go build"} {
		if !strings.Contains(progress.String(), step) {
			t.Errorf("progress does not report %q", step)
		}
	}
}

// TestBuildRejectsBeforeWriting: inrun build of a broken Blueprint writes
// no project.
func TestBuildRejectsBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	bp := filepath.Join(dir, "blueprint.yaml")
	if err := os.WriteFile(bp, []byte("apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata: {name: broken}\ncrd: {file: missing.yaml}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	_, err := codegen.Build(context.Background(), bp, codegen.BuildOptions{Out: out, Binary: filepath.Join(dir, "bin", "x")})
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("Build = %v, want the compiler's error about missing.yaml", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("Build wrote %s for a Blueprint the compiler rejects", out)
	}
}
