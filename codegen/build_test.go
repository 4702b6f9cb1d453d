package codegen_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
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
	const path = "../packs/website/blueprint.yaml"
	bp, err := compiler.CompileFile(path, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = codegen.Build(context.Background(), bp, os.DirFS(filepath.Dir(path)), codegen.BuildOptions{
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
