package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/inrun/inrun/registry"
)

// TestRunPatternFromLayout runs patterns from an OCI layout that plain
// oras-go wrote, as oras cp -r --to-oci-layout does, with the registry
// gone: listed, inspected and resolved by version, verified; a deprecated
// version only through a Stack beside the layout that accepts it; a
// changed blob refused.
func TestRunPatternFromLayout(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := initPattern(t)
	ctx := context.Background()
	work := t.TempDir()
	layoutDir := filepath.Join(work, "patterns")
	layout, err := oci.New(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := remote.NewRepository(host + "/team/website")
	if err != nil {
		t.Fatal(err)
	}
	src.PlainHTTP = true
	digests := map[string]string{}
	for _, v := range []struct {
		version string
		dep     *registry.Deprecation
	}{{"1.0.0", nil}, {"1.1.0", &registry.Deprecation{Message: "use webapp", Replacement: "webapp"}}} {
		digests[v.version] = pushWebsite(t, host, dir, v.version, v.dep)
		// Plain oras-go, no Inrun code: the pattern with its referrers.
		if _, err := oras.ExtendedCopy(ctx, src, v.version, layout, v.version, oras.DefaultExtendedCopyOptions); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()

	out, err := run(t, work, "patterns", "oci:"+layoutDir)
	if err != nil || !strings.Contains(out, "website") || !strings.Contains(out, "1.1.0 [deprecated], 1.0.0") {
		t.Errorf("patterns oci:DIR: %v\n%s", err, out)
	}
	out, err = run(t, work, "inspect", "oci:"+layoutDir+"/website@1.0.0")
	if err != nil || !strings.Contains(out, digests["1.0.0"]) {
		t.Errorf("inspect oci:DIR/website@1.0.0: %v\n%s", err, out)
	}

	flags := &patternFlags{cacheDir: t.TempDir()}
	var buf bytes.Buffer
	bps, _, _, err := flags.resolve(ctx, &buf, []string{"oci:" + layoutDir + "/website@1.0.0"})
	if err != nil {
		t.Fatalf("oci:DIR/website@1.0.0: %v\n%s", err, buf.String())
	}
	if len(bps) != 1 || bps[0].Resource.Kind != "Website" || !strings.Contains(buf.String(), digests["1.0.0"]+" (verified, signed by") {
		t.Errorf("oci:DIR/website@1.0.0: %d Blueprints\n%s", len(bps), buf.String())
	}
	if _, _, _, err := flags.resolve(ctx, &buf, []string{"oci:" + layoutDir + "/website"}); err == nil || !strings.Contains(err.Error(), "website 1.1.0 is deprecated: use webapp") {
		t.Errorf("the newest, deprecated, by reference: %v", err)
	}
	// A Stack names the layout relative to itself.
	stackFile := filepath.Join(work, "stack.yaml")
	if err := os.WriteFile(stackFile, []byte("apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: oci:patterns\npatterns:\n  - name: website\n    version: ^1\n    accept: {version: 1.1.0, until: 2999-01-31}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags.stack = stackFile
	bps, _, _, err = flags.resolve(ctx, &buf, nil)
	if err != nil {
		t.Fatalf("a Stack over the layout: %v", err)
	}
	if len(bps) != 1 || bps[0].Deprecated == nil || bps[0].Deprecated.Replacement != "webapp" {
		t.Errorf("a Stack over the layout: %+v", bps)
	}
	flags.stack = ""

	// One byte of a layer of 1.0.0 changed.
	manifest, err := os.ReadFile(filepath.Join(layoutDir, "blobs", "sha256", strings.TrimPrefix(digests["1.0.0"], "sha256:")))
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(manifest, &m); err != nil || len(m.Layers) == 0 {
		t.Fatalf("the manifest of 1.0.0: %v %s", err, manifest)
	}
	blob := filepath.Join(layoutDir, "blobs", "sha256", m.Layers[0].Digest.Encoded())
	b, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(blob, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := flags.resolve(ctx, &buf, []string{"oci:" + layoutDir + "/website@1.0.0"}); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("a changed blob: %v", err)
	}

	for _, c := range []struct{ arg, want string }{
		{"oci:" + work + "/website@1.0.0", "is not an OCI layout"},
		{"oci:website", "names no pattern"},
	} {
		if _, _, _, err := flags.resolve(ctx, &buf, []string{c.arg}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.arg, err, c.want)
		}
	}
}
