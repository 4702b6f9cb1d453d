package install_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localregistry"
)

// goBuild builds a small main package with cgo on or off.
func goBuild(t *testing.T, src string, cgo bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	env := "CGO_ENABLED=0"
	if cgo {
		env = "CGO_ENABLED=1"
	}
	cmd.Env = append(os.Environ(), env, "GOOS=linux", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// TestImage makes the image of a static binary without Docker, pushes it to
// a real OCI registry (the local Distribution registry) and reads it back:
// the entry point is the binary, byte for byte, run by a non-root user; the
// same binary gives the same digest. A dynamically linked binary is refused.
func TestImage(t *testing.T) {
	bin := goBuild(t, "package main\n\nfunc main() { println(\"hello\") }\n", false)
	img, err := install.Image(bin)
	if err != nil {
		t.Fatal(err)
	}
	again, err := install.Image(bin)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("the same binary gives two digests: %s and %s", d1, d2)
	}

	reg, err := localregistry.Start(context.Background(), localregistry.Options{})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		t.Skipf("no local registry: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	ref := reg.Host + "/inrun/runtime:test"
	digest, err := install.Push(context.Background(), img, ref)
	if err != nil {
		t.Fatal(err)
	}
	if digest != d1 {
		t.Errorf("Push returned %s, the image is %s", digest, d1)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != d1 {
		t.Errorf("the registry holds %s under the tag, pushed %s", d, d1)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != install.ImageEntrypoint || cfg.Config.User != install.ImageUser || cfg.OS != "linux" {
		t.Errorf("config: entrypoint %v, user %q, os %q", cfg.Config.Entrypoint, cfg.Config.User, cfg.OS)
	}
	layers, err := pulled.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v; want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if "/"+h.Name == install.ImageEntrypoint {
			got, _ := io.ReadAll(tr)
			found = bytes.Equal(got, want) && h.Mode&0o111 != 0
		}
	}
	if !found {
		t.Errorf("the layer lacks %s as the executable binary", install.ImageEntrypoint)
	}

	dynamic := goBuild(t, "package main\n\nimport \"C\"\n\nfunc main() {}\n", true)
	if _, err := install.Image(dynamic); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("the image of a dynamically linked binary: %v, want a refusal naming CGO_ENABLED=0", err)
	}
}
