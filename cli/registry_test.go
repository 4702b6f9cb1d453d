package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/localregistry"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/gate"
)

// initPattern makes the Website pack in a new directory and a key to sign
// with, in a keys directory of the test's own.
func initPattern(t *testing.T) string {
	t.Helper()
	t.Setenv(envKeysDir, filepath.Join(t.TempDir(), "keys"))
	dir := filepath.Join(t.TempDir(), "website")
	if out, err := run(t, t.TempDir(), "init", dir); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if out, err := run(t, dir, "keys", "create"); err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	return dir
}

// TestPushGateRefuses: a pattern whose simulate cases fail is not pushed,
// and nothing is found by its version; bad references, an unreachable
// registry and a missing key are each one clear error.
func TestPushGateRefuses(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := initPattern(t)

	sim := filepath.Join(dir, "test", "simulate.yaml")
	data, err := os.ReadFile(sim)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), "replicas: 2", "replicas: 7", 1)
	if broken == string(data) {
		t.Fatal("the Website pack's simulate.yaml no longer expects replicas: 2; update this test")
	}
	if err := os.WriteFile(sim, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, dir, "push", host+"/team/website:1.0.0")
	if err == nil || !strings.Contains(err.Error(), "not pushing") || !strings.Contains(err.Error(), "simulate passed") || !strings.Contains(out, "FAIL") {
		t.Fatalf("push of a failing pattern = %v\n%s", err, out)
	}
	repo, err := remote.NewRepository(host + "/team/website")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	if _, err := repo.Resolve(context.Background(), "1.0.0"); !errors.Is(err, errdef.ErrNotFound) {
		t.Errorf("after a refused push, the version resolves: %v", err)
	}

	l := httptest.NewServer(nil)
	closed := strings.TrimPrefix(l.URL, "http://")
	l.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"push", "Not A Ref"}, `REGISTRY/[NAMESPACE/]NAME[:VERSION]`},
		{[]string{"push", host + "/team/website"}, "names no version; push it as " + host + "/team/website:VERSION"},
		{[]string{"push", closed + "/team/website:1.0.0"}, "registry " + closed + " is unreachable"},
		{[]string{"inspect", host + "/team/website:9.9.9"}, "not found; list the patterns and versions with inrun patterns " + host + "/team"},
		{[]string{"pull", host + "/team/website"}, "names no version"},
	} {
		if _, err := run(t, dir, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("inrun %s = %v, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	t.Setenv(envKeysDir, t.TempDir())
	if _, err := run(t, dir, "push", host+"/team/website:1.0.0"); err == nil || !strings.Contains(err.Error(), "make one with inrun keys create") {
		t.Errorf("push without a key = %v", err)
	}
}

// TestRegistryWalkthrough pushes the Website pack to a real Distribution
// registry, gated by its simulate and e2e cases on a local control plane,
// then lists, inspects and pulls it, and detects one flipped byte of the
// proof and then of the Blueprint in the registry's storage.
func TestRegistryWalkthrough(t *testing.T) {
	clustertest.RequireAssets(t, localcluster.Options{Mode: localcluster.Full})
	storage := t.TempDir()
	reg, err := localregistry.Start(context.Background(), localregistry.Options{StorageDir: storage})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	dir := initPattern(t)
	ref := reg.Host + "/team/website:1.0.0"

	out, err := run(t, dir, "push", ref, "--description", "A Website")
	if err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	for _, want := range []string{"PASS", "Pushed " + ref, "simulate 4/4, e2e 1/1"} {
		if !strings.Contains(out, want) {
			t.Errorf("push printed no %q:\n%s", want, out)
		}
	}

	out, err = run(t, dir, "patterns", reg.Host+"/team")
	if err != nil || !regexp.MustCompile(`website\s+1\.0\.0\s+A Website`).MatchString(out) {
		t.Errorf("patterns = %v\n%s", err, out)
	}

	out, err = run(t, dir, "inspect", ref)
	if err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	for _, want := range []string{"Kind=Website", "spec.replicas (integer", "resources=deployments", "Proof:       verified", "e2e         1/1 cases passed", "on Kubernetes " + assets.KubernetesVersion} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect printed no %q:\n%s", want, out)
		}
	}

	pulled := filepath.Join(t.TempDir(), "pulled")
	if out, err := run(t, dir, "pull", ref, "-o", pulled); err != nil {
		t.Fatalf("pull: %v\n%s", err, out)
	}
	for _, f := range []string{"blueprint.yaml", "manifests/crd.yaml", "test/e2e.yaml", "README.md"} {
		want, _ := os.ReadFile(filepath.Join(dir, f))
		got, err := os.ReadFile(filepath.Join(pulled, f))
		if err != nil || string(got) != string(want) {
			t.Errorf("pulled %s differs from the pushed one (%v)", f, err)
		}
	}
	// The pulled directory is a working Blueprint.
	if out, err := run(t, pulled, "simulate"); err != nil {
		t.Errorf("simulate in the pulled pattern: %v\n%s", err, out)
	}

	// One byte of the proof's envelope, then of the Blueprint.
	repo, err := remote.NewRepository(reg.Host + "/team/website")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	ctx := context.Background()
	desc, err := repo.Resolve(ctx, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	pattern := manifestOf(t, repo, desc)
	referrers, err := repoReferrers(ctx, repo, desc)
	if err != nil || len(referrers) != 1 {
		t.Fatalf("referrers = %v, %v", referrers, err)
	}
	proof := manifestOf(t, repo, referrers[0])
	flipBlob(t, storage, proof.Layers[0].Digest)
	out, err = run(t, dir, "inspect", ref)
	if !errors.Is(err, errReported) || !strings.Contains(out, "NOT VERIFIED") {
		t.Errorf("inspect after a byte of the proof flipped = %v\n%s", err, out)
	}
	if _, err := run(t, dir, "pull", ref, "-o", filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("pull of an unverified pattern = %v", err)
	}
	for _, l := range pattern.Layers {
		if l.Annotations[ocispec.AnnotationTitle] == "blueprint.yaml" {
			flipBlob(t, storage, l.Digest)
		}
	}
	if _, err := run(t, dir, "inspect", ref); err == nil || !strings.Contains(err.Error(), "blueprint.yaml") {
		t.Errorf("inspect after a byte of the Blueprint flipped = %v", err)
	}
}

func repoReferrers(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	var all []ocispec.Descriptor
	err := repo.Referrers(ctx, desc, "", func(r []ocispec.Descriptor) error {
		all = append(all, r...)
		return nil
	})
	return all, err
}

func manifestOf(t *testing.T, repo *remote.Repository, desc ocispec.Descriptor) ocispec.Manifest {
	t.Helper()
	data, err := content.FetchAll(context.Background(), repo, desc)
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// flipBlob changes one byte of a blob in a Distribution registry's storage.
func flipBlob(t *testing.T, storage string, d digest.Digest) {
	t.Helper()
	p := filepath.Join(storage, "docker", "registry", "v2", "blobs", d.Algorithm().String(), d.Encoded()[:2], d.Encoded(), "data")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInspectPullPatterns runs the reading side of the CLI against a
// pattern pushed with a passing result made up for the test (the gate's
// own run is TestRegistryWalkthrough's): patterns, inspect and pull, with
// a trusted key and without.
func TestInspectPullPatterns(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := initPattern(t)
	files, err := gate.Collect(filepath.Join(dir, "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sign, err := signer("")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := registry.ParseReference(host + "/team/website:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	results := registry.Results{
		InrunVersion: "test", KubernetesVersion: assets.KubernetesVersion,
		Simulate: registry.Suite{File: "test/simulate.yaml", Cases: 4, Passed: 4, Duration: "1s"},
		E2E:      registry.Suite{File: "test/e2e.yaml", Cases: 1, Passed: 1, Duration: "1m"},
	}
	p := &registry.Pattern{Name: "website", Version: "1.0.0", Description: "A Website", Files: files}
	if _, err := registry.Push(context.Background(), registry.NewRemote(host), ref, p, registry.PushOptions{Signer: sign, Results: results}); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, dir, "patterns", host+"/team")
	if err != nil || !regexp.MustCompile(`website\s+1\.0\.0\s+A Website`).MatchString(out) {
		t.Errorf("patterns = %v\n%s", err, out)
	}
	out, err = run(t, dir, "patterns", host+"/empty")
	if err != nil || !strings.Contains(out, "No patterns in "+host+"/empty yet") {
		t.Errorf("patterns of an empty namespace = %v\n%s", err, out)
	}
	out, err = run(t, dir, "inspect", ref.String())
	if err != nil {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	for _, want := range []string{"Kind=Website", "spec.image (string", "groups=apps,resources=deployments", "Proof:       verified", "simulate    4/4"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect printed no %q:\n%s", want, out)
		}
	}
	pulled := filepath.Join(t.TempDir(), "w")
	if out, err := run(t, dir, "pull", ref.String(), "-o", pulled); err != nil || !strings.Contains(out, "Wrote 6 files") {
		t.Fatalf("pull: %v\n%s", err, out)
	}
	if _, err := run(t, dir, "pull", ref.String(), "-o", pulled); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("pull over a directory = %v, want a refusal", err)
	}

	// A deprecation over every version: a badge on each in patterns, and
	// inspect says it.
	p2 := &registry.Pattern{Name: "website", Version: "1.1.0", Files: files,
		Deprecation: &registry.Deprecation{Message: "use webapp", Replacement: host + "/team/webapp:1.0.0", Versions: "*"}}
	ref2 := ref
	ref2.Reference = "1.1.0"
	if _, err := registry.Push(context.Background(), registry.NewRemote(host), ref2, p2, registry.PushOptions{Signer: sign, Results: results}); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, dir, "patterns", host+"/team")
	if err != nil || !regexp.MustCompile(`website\s+1\.1\.0 \[deprecated\], 1\.0\.0 \[deprecated\]`).MatchString(out) ||
		!strings.Contains(out, "website 1.0.0 is deprecated: use webapp; replaced by "+host+"/team/webapp:1.0.0") {
		t.Errorf("patterns with a deprecation = %v\n%s", err, out)
	}
	out, err = run(t, dir, "inspect", ref2.String())
	if err != nil || !strings.Contains(out, "Deprecated:  use webapp; replaced by "+host+"/team/webapp:1.0.0 (every version of the pattern)") {
		t.Errorf("inspect of a deprecated version = %v\n%s", err, out)
	}
	// 1.0.0 carries no deprecation of its own: the later push's covers
	// it, as inrun run judges; NAME@VERSION as inrun run writes it.
	out, err = run(t, dir, "inspect", host+"/team/website@1.0.0")
	if err != nil || !strings.Contains(out, "Version:     1.0.0") || !strings.Contains(out, "Deprecated:  use webapp; replaced by "+host+"/team/webapp:1.0.0 (every version of the pattern)") {
		t.Errorf("inspect of a version a later push deprecates = %v\n%s", err, out)
	}

	// A Stack: refused while the deprecation is not accepted, resolved
	// to the newest version once it is.
	stackFile := filepath.Join(t.TempDir(), "stack.yaml")
	writeStack := func(accept string) {
		t.Helper()
		data := "apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: " + host + "/team\npatterns:\n  - name: website\n    version: ^1.0.0\n" + accept
		if err := os.WriteFile(stackFile, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeStack("")
	_, err = run(t, dir, "patterns", "--stack", stackFile)
	if err == nil || !strings.Contains(err.Error(), stackFile+":5:5: "+diag.DeprecatedPattern.String()+" website 1.1.0 is deprecated: use webapp; move to "+host+"/team/webapp:1.0.0, or accept it in the Stack") {
		t.Errorf("patterns --stack without an acceptance = %v", err)
	}
	writeStack("    accept: {version: 1.1.0, until: 2999-12-31}\n")
	out, err = run(t, dir, "patterns", "--stack", stackFile)
	if err != nil || !regexp.MustCompile(`website\s+\^1\.0\.0\s+1\.1\.0 \[deprecated\]\s+sha256:\w+\s+verified`).MatchString(out) ||
		!strings.Contains(out, "the Stack accepts it until 2999-12-31") {
		t.Errorf("patterns --stack with an acceptance = %v\n%s", err, out)
	}
	writeStack("    accept: {version: 1.1.0, until: 2020-01-01}\n")
	if _, err = run(t, dir, "patterns", "--stack", stackFile); err == nil || !strings.Contains(err.Error(), "acceptance of website 1.1.0 lapsed after 2020-01-01") {
		t.Errorf("patterns --stack with a lapsed acceptance = %v", err)
	}

	// Someone who does not trust the publisher's key.
	t.Setenv(envKeysDir, t.TempDir())
	if _, err := run(t, dir, "keys", "create", "someone"); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, dir, "inspect", ref.String())
	if !errors.Is(err, errReported) || !strings.Contains(out, "NOT VERIFIED") || !strings.Contains(out, sign.Public().ID()) {
		t.Errorf("inspect with an untrusted key = %v\n%s", err, out)
	}
	if _, err := run(t, dir, "pull", ref.String(), "-o", filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "--allow-unverified") {
		t.Errorf("pull of an unverified pattern = %v", err)
	}
	out, err = run(t, dir, "pull", ref.String(), "-o", filepath.Join(t.TempDir(), "y"), "--allow-unverified")
	if err != nil || !strings.Contains(out, "WARNING") {
		t.Errorf("pull --allow-unverified = %v\n%s", err, out)
	}
}
