package install_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
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
	var certs []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch "/" + h.Name {
		case install.ImageEntrypoint:
			got, _ := io.ReadAll(tr)
			found = bytes.Equal(got, want) && h.Mode&0o111 != 0
		case install.ImageCACertificates:
			certs, _ = io.ReadAll(tr)
			if h.Mode&0o444 != 0o444 {
				t.Errorf("%s has mode %o: the image's user cannot read it", h.Name, h.Mode)
			}
		}
	}
	if !found {
		t.Errorf("the layer lacks %s as the executable binary", install.ImageEntrypoint)
	}
	checkCACertificates(t, certs)

	dynamic := goBuild(t, "package main\n\nimport \"C\"\n\nfunc main() {}\n", true)
	if _, err := install.Image(dynamic); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("the image of a dynamically linked binary: %v, want a refusal naming CGO_ENABLED=0", err)
	}
}

// checkCACertificates: the image's CA certificates are Mozilla's roots,
// every one a CA certificate that parses, among them the one that signs
// Let's Encrypt's certificates.
func checkCACertificates(t *testing.T, pemData []byte) {
	t.Helper()
	if len(pemData) == 0 {
		t.Fatalf("the layer lacks %s", install.ImageCACertificates)
	}
	if !bytes.Equal(pemData, install.CACertificates()) {
		t.Errorf("%s in the layer is not install.CACertificates()", install.ImageCACertificates)
	}
	var n int
	var isrg bool
	for rest := pemData; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				t.Errorf("%s ends with %d bytes that are not PEM", install.ImageCACertificates, len(rest))
			}
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("certificate %d: %v", n, err)
		}
		if !cert.IsCA {
			t.Errorf("%s is not a CA", cert.Subject)
		}
		isrg = isrg || cert.Subject.CommonName == "ISRG Root X1"
		n++
	}
	// Mozilla's store holds about 150 roots.
	if n < 100 || !isrg {
		t.Errorf("%s holds %d certificates (ISRG Root X1 among them: %v): not Mozilla's roots", install.ImageCACertificates, n, isrg)
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(pemData) {
		t.Errorf("crypto/x509 reads no certificate from %s", install.ImageCACertificates)
	}
}
