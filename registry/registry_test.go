package registry_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localregistry"
	"github.com/inrun/inrun/registry"
)

// server is a registry the tests push to. storage, when set, is where a
// Distribution registry keeps its blobs, for tests that flip bytes on disk.
type server struct {
	name    string
	host    string
	storage string
}

// servers returns the registries every scenario runs against:
// go-containerregistry's in-memory one (the referrers API) and the real
// Distribution registry (the tag-schema fallback), which needs the built
// binary; with INRUN_REQUIRE_ASSETS=1 its absence fails the test.
func servers(t *testing.T) []server {
	t.Helper()
	mem := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
	t.Cleanup(mem.Close)
	out := []server{{name: "memory", host: strings.TrimPrefix(mem.URL, "http://")}}

	storage := t.TempDir()
	reg, err := localregistry.Start(context.Background(), localregistry.Options{StorageDir: storage})
	switch {
	case assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1":
		t.Logf("only the in-memory registry: %v", err)
		return out
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	return append(out, server{name: "distribution", host: reg.Host, storage: storage})
}

func each(t *testing.T, f func(t *testing.T, s server)) {
	for _, s := range servers(t) {
		t.Run(s.name, func(t *testing.T) { f(t, s) })
	}
}

func newKey(t *testing.T) (*registry.Signer, registry.PublicKey) {
	t.Helper()
	dir := t.TempDir()
	priv, pub, err := registry.CreateKey(dir, "publisher")
	if err != nil {
		t.Fatal(err)
	}
	s, err := registry.LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	k, err := registry.LoadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return s, k
}

func website() *registry.Pattern {
	return &registry.Pattern{
		Name:         "website",
		Version:      "1.0.0",
		Description:  "A Website becomes a Deployment and a Service",
		InrunVersion: "test",
		Files: map[string][]byte{
			"blueprint.yaml":     []byte("apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata:\n  name: website\ncrd:\n  file: manifests/crd.yaml\n"),
			"manifests/crd.yaml": []byte("kind: CustomResourceDefinition\n"),
			"test/simulate.yaml": []byte("cases: []\n"),
			"test/e2e.yaml":      []byte("cases: []\n"),
			"README.md":          []byte("# Website\n"),
		},
	}
}

func passing() registry.Results {
	return registry.Results{
		InrunVersion:      "test",
		KubernetesVersion: assets.KubernetesVersion,
		Simulate:          registry.Suite{File: "test/simulate.yaml", Cases: 3, Passed: 3, Duration: "12ms"},
		E2E:               registry.Suite{File: "test/e2e.yaml", Cases: 2, Passed: 2, Duration: "9s"},
		Finished:          time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func ref(t *testing.T, s server, repo string) registry.Reference {
	t.Helper()
	r, err := registry.ParseReference(s.host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func push(t *testing.T, s server, repo string, p *registry.Pattern, signer *registry.Signer) *registry.Pushed {
	t.Helper()
	pushed, err := registry.Push(context.Background(), registry.NewRemote(s.host), ref(t, s, repo), p, registry.PushOptions{Signer: signer, Results: passing()})
	if err != nil {
		t.Fatal(err)
	}
	if pushed.IndexErr != nil {
		t.Fatal(pushed.IndexErr)
	}
	return pushed
}

func fetch(t *testing.T, s server, reference string, trusted ...registry.PublicKey) (*registry.Fetched, error) {
	t.Helper()
	r, err := registry.ParseReference(s.host + "/" + reference)
	if err != nil {
		t.Fatal(err)
	}
	return registry.Fetch(context.Background(), registry.NewRemote(s.host), r, registry.FetchOptions{Trusted: trusted})
}

// repository opens a repository with plain oras-go, as a user without
// Inrun would.
func repository(t *testing.T, s server, name string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(s.host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	return repo
}

func TestPushFetchVerify(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		signer, key := newKey(t)
		p := website()
		pushed := push(t, s, "team/website", p, signer)

		f, err := fetch(t, s, "team/website:1.0.0", key)
		if err != nil {
			t.Fatal(err)
		}
		if f.Unverified != nil {
			t.Fatalf("Unverified = %v", f.Unverified)
		}
		if f.Descriptor.Digest != pushed.Pattern.Digest || f.Proof.Descriptor.Digest != pushed.Proof.Digest {
			t.Errorf("fetched %s with proof %s, pushed %s with %s", f.Descriptor.Digest, f.Proof.Descriptor.Digest, pushed.Pattern.Digest, pushed.Proof.Digest)
		}
		if f.Proof.Results != passing() {
			t.Errorf("results = %+v, want %+v", f.Proof.Results, passing())
		}
		if f.Proof.Key.ID() != key.ID() {
			t.Errorf("verified by %s, want %s", f.Proof.Key.ID(), key.ID())
		}
		if len(f.Pattern.Files) != len(p.Files) {
			t.Errorf("fetched %d files, pushed %d", len(f.Pattern.Files), len(p.Files))
		}
		for name, data := range p.Files {
			if !bytes.Equal(f.Pattern.Files[name], data) {
				t.Errorf("%s = %q, want %q", name, f.Pattern.Files[name], data)
			}
		}
		if f.Pattern.Name != "website" || f.Pattern.Version != "1.0.0" || f.Pattern.Description != p.Description {
			t.Errorf("pattern = %s %s %q", f.Pattern.Name, f.Pattern.Version, f.Pattern.Description)
		}

		// Fetching by digest finds the same.
		byDigest, err := fetch(t, s, "team/website@"+pushed.Pattern.Digest.String(), key)
		if err != nil || byDigest.Unverified != nil {
			t.Fatalf("by digest: %v, %v", err, byDigest.Unverified)
		}

		// The index lists it, and a second version goes first.
		p2 := website()
		p2.Version = "1.1.0"
		p2.Files["README.md"] = []byte("# Website, again\n")
		push(t, s, "team/website", p2, signer)
		idx, err := registry.ReadIndex(context.Background(), registry.NewRemote(s.host), "team")
		if err != nil {
			t.Fatal(err)
		}
		if len(idx.Patterns) != 1 || idx.Patterns[0].Name != "website" || len(idx.Patterns[0].Versions) != 2 ||
			idx.Patterns[0].Versions[0].Version != "1.1.0" || idx.Patterns[0].Versions[1].Digest != pushed.Pattern.Digest.String() {
			t.Errorf("index = %+v", idx)
		}
		// Another namespace has its own, empty.
		other, err := registry.ReadIndex(context.Background(), registry.NewRemote(s.host), "elsewhere")
		if err != nil || len(other.Patterns) != 0 {
			t.Errorf("index of another namespace = %+v, %v", other, err)
		}
	})
}

// TestPlainOrasCopy copies a pattern and its proof to another repository
// with oras-go alone, as a mirror would, and the copy still verifies.
func TestPlainOrasCopy(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		signer, key := newKey(t)
		push(t, s, "team/website", website(), signer)

		ctx := context.Background()
		src := repository(t, s, "team/website")
		dst := repository(t, s, "mirror/website")
		desc, err := oras.ExtendedCopy(ctx, src, "1.0.0", dst, "1.0.0", oras.DefaultExtendedCopyOptions)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fetch(t, s, "mirror/website:1.0.0", key)
		if err != nil {
			t.Fatal(err)
		}
		if f.Unverified != nil || f.Descriptor.Digest != desc.Digest {
			t.Fatalf("copy: unverified %v, digest %s want %s", f.Unverified, f.Descriptor.Digest, desc.Digest)
		}
	})
}

func TestVerifyFailures(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		ctx := context.Background()
		signer, key := newKey(t)
		_, stranger := newKey(t)
		pushed := push(t, s, "team/website", website(), signer)

		t.Run("untrusted key", func(t *testing.T) {
			f, err := fetch(t, s, "team/website:1.0.0", stranger)
			if err != nil {
				t.Fatal(err)
			}
			wantUnverified(t, f, "no signature of the proof verifies with a trusted key", key.ID())
		})
		t.Run("no trusted key", func(t *testing.T) {
			f, err := fetch(t, s, "team/website:1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			wantUnverified(t, f, "no trusted key", "--key")
		})

		t.Run("tag moved to another version", func(t *testing.T) {
			if err := repository(t, s, "team/website").Tag(ctx, pushed.Pattern, "2.0.0"); err != nil {
				t.Fatal(err)
			}
			f, err := fetch(t, s, "team/website:2.0.0", key)
			if err != nil {
				t.Fatal(err)
			}
			wantUnverified(t, f, "the tag 2.0.0 points at version 1.0.0 of the pattern")
		})

		// A pattern pushed by hand, without Inrun's gate: no proof.
		t.Run("missing proof", func(t *testing.T) {
			repo := repository(t, s, "team/bare")
			p := website()
			p.Name = "bare"
			desc, err := registry.Pack(ctx, repo, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.Tag(ctx, desc, "1.0.0"); err != nil {
				t.Fatal(err)
			}
			f, err := fetch(t, s, "team/bare:1.0.0", key)
			if err != nil {
				t.Fatal(err)
			}
			wantUnverified(t, f, "it has no proof", "inrun push")
		})

		// One byte of the Blueprint changed, tagged as the version, with
		// the genuine proof made to point at it: the proof is for the
		// original digest.
		t.Run("proof for another digest", func(t *testing.T) {
			repo := repository(t, s, "team/website")
			p := website()
			p.Files["blueprint.yaml"][0] ^= 1
			forged, err := registry.Pack(ctx, repo, p)
			if err != nil {
				t.Fatal(err)
			}
			envelope := fetchProofEnvelope(t, repo, pushed.Proof)
			pushProof(t, repo, forged, envelope)
			if err := repo.Tag(ctx, forged, "1.0.0-forged"); err != nil {
				t.Fatal(err)
			}
			f, err := fetch(t, s, "team/website:1.0.0-forged", key)
			if err != nil {
				t.Fatal(err)
			}
			wantUnverified(t, f, "the proof is for sha256:"+pushed.Pattern.Digest.Encoded(), "belongs to another pattern")
		})

		t.Run("unsigned proof", func(t *testing.T) {
			repo := repository(t, s, "team/unsigned")
			p := website()
			p.Name = "unsigned"
			desc, err := registry.Pack(ctx, repo, p)
			if err != nil {
				t.Fatal(err)
			}
			var env registry.Envelope
			if err := json.Unmarshal(fetchProofEnvelope(t, repository(t, s, "team/website"), pushed.Proof), &env); err != nil {
				t.Fatal(err)
			}
			env.Signatures = nil
			data, _ := json.Marshal(env)
			pushProof(t, repo, desc, data)
			if err := repo.Tag(ctx, desc, "1.0.0"); err != nil {
				t.Fatal(err)
			}
			f, err := fetch(t, s, "team/unsigned:1.0.0", key)
			if err != nil {
				t.Fatal(err)
			}
			wantUnverified(t, f, "the proof is not signed")
		})

		t.Run("one byte of the proof flipped", func(t *testing.T) {
			repo := repository(t, s, "team/flipped")
			p := website()
			p.Name = "flipped"
			desc, err := registry.Pack(ctx, repo, p)
			if err != nil {
				t.Fatal(err)
			}
			// A genuine proof for exactly this pattern, then one byte of its
			// signed payload changed.
			mine, err := registry.Sign(signer, desc, "team/flipped:1.0.0", passing())
			if err != nil {
				t.Fatal(err)
			}
			var env registry.Envelope
			json.Unmarshal(mine, &env)
			payload, err := base64.StdEncoding.DecodeString(env.Payload)
			if err != nil {
				t.Fatal(err)
			}
			payload[len(payload)/2] ^= 1
			env.Payload = base64.StdEncoding.EncodeToString(payload)
			data, _ := json.Marshal(env)
			pushProof(t, repo, desc, data)
			if err := repo.Tag(ctx, desc, "1.0.0"); err != nil {
				t.Fatal(err)
			}
			f, err := fetch(t, s, "team/flipped:1.0.0", key)
			if err != nil {
				t.Fatal(err)
			}
			wantUnverified(t, f, "no signature of the proof verifies with a trusted key")
		})
	})
}

// TestTamperOnDisk flips one byte of a stored blob of the real registry:
// of the Blueprint, the read fails; of the proof, it no longer verifies.
func TestTamperOnDisk(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		if s.storage == "" {
			t.Skip("the in-memory registry keeps no files")
		}
		signer, key := newKey(t)
		pushed := push(t, s, "team/website", website(), signer)
		ctx := context.Background()
		repo := repository(t, s, "team/website")

		m := fetchManifest(t, repo, pushed.Proof)
		flip(t, s, m.Layers[0].Digest)
		f, err := fetch(t, s, "team/website:1.0.0", key)
		if err != nil {
			t.Fatal(err)
		}
		wantUnverified(t, f, "reading its envelope")

		m = fetchManifest(t, repo, pushed.Pattern)
		for _, l := range m.Layers {
			if l.Annotations[ocispec.AnnotationTitle] == "blueprint.yaml" {
				flip(t, s, l.Digest)
			}
		}
		if _, err := fetch(t, s, "team/website:1.0.0", key); err == nil || !strings.Contains(err.Error(), "blueprint.yaml") {
			t.Errorf("fetching a pattern with a flipped Blueprint byte = %v, want an error naming blueprint.yaml", err)
		}
		_ = ctx
	})
}

// TestReferrerSubjectChecked lists a foreign proof under a pattern's
// tag-schema referrers tag, as anyone who may push to the repository can
// where the registry lacks the referrers API: it is not taken as the
// pattern's proof.
func TestReferrerSubjectChecked(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		if s.name != "distribution" {
			t.Skip("the referrers API lists what the registry indexed itself")
		}
		ctx := context.Background()
		signer, key := newKey(t)
		genuine := push(t, s, "team/website", website(), signer)
		repo := repository(t, s, "team/website")

		p := website()
		p.Version = "2.0.0"
		p.Files["README.md"] = []byte("# changed\n")
		unproven, err := registry.Pack(ctx, repo, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Tag(ctx, unproven, "2.0.0"); err != nil {
			t.Fatal(err)
		}
		// The referrers index of the unproven pattern, listing the genuine
		// pattern's proof.
		index := ocispec.Index{
			Versioned: specs.Versioned{SchemaVersion: 2},
			MediaType: ocispec.MediaTypeImageIndex,
			Manifests: []ocispec.Descriptor{genuine.Proof},
		}
		data, _ := json.Marshal(index)
		desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, data)
		tag := strings.Replace(unproven.Digest.String(), ":", "-", 1)
		if err := repo.PushReference(ctx, desc, bytes.NewReader(data), tag); err != nil {
			t.Fatal(err)
		}
		f, err := fetch(t, s, "team/website:2.0.0", key)
		if err != nil {
			t.Fatal(err)
		}
		wantUnverified(t, f, "it is listed as a referrer but its subject is "+genuine.Pattern.Digest.String())
	})
}

func TestPushRefusals(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		ctx := context.Background()
		signer, _ := newKey(t)
		reg := registry.NewRemote(s.host)

		failing := passing()
		failing.E2E.Passed = 1
		_, err := registry.Push(ctx, reg, ref(t, s, "team/website"), website(), registry.PushOptions{Signer: signer, Results: failing})
		if err == nil || !strings.Contains(err.Error(), "e2e passed 1 of 2 cases") {
			t.Errorf("push of a failing result = %v, want a refusal naming e2e", err)
		}
		// Nothing of it is found by its version.
		if _, err := repository(t, s, "team/website").Resolve(ctx, "1.0.0"); !errors.Is(err, errdef.ErrNotFound) {
			t.Errorf("after a refused push, resolving the version = %v, want not found", err)
		}

		push(t, s, "team/website", website(), signer)
		// The same pattern again is fine; another under its version is not.
		push(t, s, "team/website", website(), signer)
		changed := website()
		changed.Files["README.md"] = []byte("# changed\n")
		_, err = registry.Push(ctx, reg, ref(t, s, "team/website"), changed, registry.PushOptions{Signer: signer, Results: passing()})
		if err == nil || !strings.Contains(err.Error(), "already names another pattern") {
			t.Errorf("push over a published version = %v, want a refusal", err)
		}
		// Said before any test runs, and not of the same pattern again.
		if err := registry.VersionFree(ctx, reg, ref(t, s, "team/website"), changed); err == nil || !strings.Contains(err.Error(), "already names another pattern") {
			t.Errorf("VersionFree of another pattern under a published version = %v, want a refusal", err)
		}
		if err := registry.VersionFree(ctx, reg, ref(t, s, "team/website"), website()); err != nil {
			t.Errorf("VersionFree of the published pattern itself = %v", err)
		}

		bad := website()
		bad.Files["../escape"] = []byte("x")
		bad.Name = "Website"
		_, err = registry.Push(ctx, reg, ref(t, s, "team/website"), bad, registry.PushOptions{Signer: signer, Results: passing()})
		if err == nil || !strings.Contains(err.Error(), `"../escape" is not a clean relative path`) || !strings.Contains(err.Error(), `name "Website"`) {
			t.Errorf("push of a bad pattern = %v, want both problems", err)
		}
	})
}

func TestBadInput(t *testing.T) {
	if _, err := registry.ParseReference("not a reference"); err == nil || !strings.Contains(err.Error(), "REGISTRY/[NAMESPACE/]NAME[:VERSION]") {
		t.Errorf("ParseReference = %v, want the form to write", err)
	}
	// A port nothing listens on.
	l := httptest.NewServer(nil)
	host := strings.TrimPrefix(l.URL, "http://")
	l.Close()
	err := registry.NewRemote(host).Reachable(context.Background())
	if err == nil || !strings.Contains(err.Error(), "registry "+host+" is unreachable") || !strings.Contains(err.Error(), "that the registry runs") {
		t.Errorf("Reachable(closed port) = %v", err)
	}
	for _, s := range servers(t)[:1] {
		_, key := newKey(t)
		_, err := fetch(t, s, "team/nothing:1.0.0", key)
		if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "inrun patterns") {
			t.Errorf("fetch of a missing pattern = %v", err)
		}
		_, err = fetch(t, s, "team/nothing", key)
		if err == nil || !strings.Contains(err.Error(), "names no version") {
			t.Errorf("fetch without a version = %v", err)
		}
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	priv, pub, err := registry.CreateKey(dir, "me")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(priv); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("private key mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if _, _, err := registry.CreateKey(dir, "me"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("CreateKey over an existing key = %v", err)
	}
	keys, err := registry.LoadPublicKeys(dir)
	if err != nil || len(keys) != 1 || keys[0].Source != pub {
		t.Errorf("LoadPublicKeys = %v, %v", keys, err)
	}
	if _, err := registry.LoadSigner(pub); err == nil {
		t.Error("a public key loaded as a signer")
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.pub"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := registry.LoadPublicKeys(dir); err == nil || !strings.Contains(err.Error(), "junk.pub") {
		t.Errorf("LoadPublicKeys with a bad file = %v, want it named", err)
	}
}

func TestSignRefusesFailure(t *testing.T) {
	signer, _ := newKey(t)
	r := passing()
	r.Simulate.Cases, r.Simulate.Passed = 0, 0
	_, err := registry.Sign(signer, ocispec.Descriptor{Digest: digest.FromString("x")}, "x", r)
	if err == nil || !strings.Contains(err.Error(), "simulate ran no case") {
		t.Errorf("Sign = %v", err)
	}
}

func fetchManifest(t *testing.T, repo *remote.Repository, desc ocispec.Descriptor) ocispec.Manifest {
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

func fetchProofEnvelope(t *testing.T, repo *remote.Repository, proof ocispec.Descriptor) []byte {
	t.Helper()
	m := fetchManifest(t, repo, proof)
	data, err := content.FetchAll(context.Background(), repo, m.Layers[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// pushProof pushes a proof manifest for subject holding envelope, as
// Inrun lays one out, with oras-go alone.
func pushProof(t *testing.T, repo *remote.Repository, subject ocispec.Descriptor, envelope []byte) {
	t.Helper()
	ctx := context.Background()
	layer := content.NewDescriptorFromBytes(registry.MediaTypeDSSE, envelope)
	if err := repo.Push(ctx, layer, bytes.NewReader(envelope)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		t.Fatal(err)
	}
	if _, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, registry.MediaTypeProof, oras.PackManifestOptions{Subject: &subject, Layers: []ocispec.Descriptor{layer}}); err != nil {
		t.Fatal(err)
	}
}

// flip changes one byte of a blob in the Distribution registry's storage.
func flip(t *testing.T, s server, d digest.Digest) {
	t.Helper()
	path := filepath.Join(s.storage, "docker", "registry", "v2", "blobs", d.Algorithm().String(), d.Encoded()[:2], d.Encoded(), "data")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantUnverified(t *testing.T, f *registry.Fetched, want ...string) {
	t.Helper()
	if f.Unverified == nil {
		t.Fatalf("verified; want an error containing %q", want)
	}
	if !registry.IsVerifyError(f.Unverified) {
		t.Errorf("%v is not a VerifyError", f.Unverified)
	}
	for _, w := range want {
		if !strings.Contains(f.Unverified.Error(), w) {
			t.Errorf("Unverified = %v\nwant it to contain %q", f.Unverified, w)
		}
	}
	if f.Proof != nil {
		t.Errorf("Proof = %+v alongside Unverified", f.Proof)
	}
}

// TestSimulateOnly: a simulate-only result (inrun --dev's built-in
// patterns) is pushed only when asked for, signed, and never verifies.
func TestSimulateOnly(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		ctx := context.Background()
		signer, pub := newKey(t)
		reg := registry.NewRemote(s.host)
		r := passing()
		r.E2E = registry.Suite{}
		if !r.SimulateOnly() {
			t.Fatal("a result whose e2e ran no case is not SimulateOnly")
		}
		if _, err := registry.Push(ctx, reg, ref(t, s, "team/website"), website(), registry.PushOptions{Signer: signer, Results: r}); err == nil || !strings.Contains(err.Error(), "e2e ran no case") {
			t.Errorf("push of a simulate-only result without SimulateOnly = %v", err)
		}
		if _, err := registry.Push(ctx, reg, ref(t, s, "team/website"), website(), registry.PushOptions{Signer: signer, Results: r, SimulateOnly: true}); err != nil {
			t.Fatal(err)
		}
		f, err := fetch(t, s, "team/website:1.0.0", pub)
		if err != nil {
			t.Fatal(err)
		}
		wantUnverified(t, f, "records simulate only (3/3 cases)", "--allow-unverified")

		// SimulateOnly does not let a failing simulate through.
		r.Simulate.Passed = 1
		if r.SimulateOnly() {
			t.Error("a failing simulate is SimulateOnly")
		}
		if _, err := registry.Push(ctx, reg, ref(t, s, "team/other"), website(), registry.PushOptions{Signer: signer, Results: r, SimulateOnly: true}); err == nil {
			t.Error("push of a failing simulate with SimulateOnly succeeded")
		}
	})
}

// TestNewestFirst: versions are listed newest first, whatever order they
// were pushed in; tags that are no version come last, in push order.
func TestNewestFirst(t *testing.T) {
	p := &registry.IndexPattern{Versions: []registry.IndexVersion{{Version: "1.0.0"}, {Version: "nightly"}, {Version: "2.0.0"}, {Version: "1.1.1"}, {Version: "1.2.0-rc.1"}, {Version: "edge"}, {Version: "1.1.0"}}}
	var got []string
	for _, v := range p.NewestFirst() {
		got = append(got, v.Version)
	}
	if want := "2.0.0 1.2.0-rc.1 1.1.1 1.1.0 1.0.0 nightly edge"; strings.Join(got, " ") != want {
		t.Errorf("NewestFirst = %v, want %s", got, want)
	}
	if p.Versions[0].Version != "1.0.0" {
		t.Error("NewestFirst reordered the index itself")
	}
}
