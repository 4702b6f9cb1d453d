package stack_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localregistry"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/stack"
)

// hosts returns the registries every scenario runs against:
// go-containerregistry's in-memory one, and the real Distribution
// registry, whose absence fails the test under INRUN_REQUIRE_ASSETS=1.
func hosts(t *testing.T) map[string]string {
	t.Helper()
	mem := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
	t.Cleanup(mem.Close)
	out := map[string]string{"memory": strings.TrimPrefix(mem.URL, "http://")}
	reg, err := localregistry.Start(context.Background(), localregistry.Options{StorageDir: t.TempDir()})
	switch {
	case assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1":
		t.Logf("only the in-memory registry: %v", err)
		return out
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	out["distribution"] = reg.Host
	return out
}

// now is when the tests judge acceptances.
var now = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)

type publisher struct {
	t      *testing.T
	host   string
	signer *registry.Signer
	key    registry.PublicKey
}

func newPublisher(t *testing.T, host string) *publisher {
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
	return &publisher{t: t, host: host, signer: s, key: k}
}

// push pushes version of pattern name to team/, deprecated when dep is
// set, and returns its digest.
func (p *publisher) push(name, version string, dep *registry.Deprecation) string {
	p.t.Helper()
	ref, err := registry.ParseReference(p.host + "/team/" + name + ":" + version)
	if err != nil {
		p.t.Fatal(err)
	}
	pat := &registry.Pattern{Name: name, Version: version, Deprecation: dep, Files: map[string][]byte{
		"blueprint.yaml": []byte("apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata:\n  name: " + name + "\n# " + version + "\n"),
	}}
	res := registry.Results{InrunVersion: "test", KubernetesVersion: assets.KubernetesVersion,
		Simulate: registry.Suite{File: "test/simulate.yaml", Cases: 1, Passed: 1, Duration: "1ms"},
		E2E:      registry.Suite{File: "test/e2e.yaml", Cases: 1, Passed: 1, Duration: "1s"},
		Finished: now}
	pushed, err := registry.Push(context.Background(), registry.NewRemote(p.host), ref, pat, registry.PushOptions{Signer: p.signer, Results: res})
	if err != nil || pushed.IndexErr != nil {
		p.t.Fatalf("push %s: %v %v", ref, err, pushed)
	}
	return pushed.Pattern.Digest.String()
}

func (p *publisher) options(trusted ...registry.PublicKey) stack.Options {
	if trusted == nil {
		trusted = []registry.PublicKey{p.key}
	}
	return stack.Options{
		Open:    func(_ context.Context, host string) (registry.Registry, error) { return registry.NewRemote(host), nil },
		Trusted: trusted,
		Now:     func() time.Time { return now },
	}
}

func readStack(t *testing.T, host, entries string) *stack.Stack {
	t.Helper()
	s, err := stack.Read("stack.yaml", []byte("apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: "+host+"/team\npatterns:\n"+entries))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantDiag checks that err holds one diagnostic with code, at line, whose
// message and hint hold every part.
func wantDiag(t *testing.T, err error, code diag.Code, line int, parts ...string) {
	t.Helper()
	ds := diag.All(err)
	if len(ds) != 1 {
		t.Fatalf("want one %v diagnostic, got %v", code, err)
	}
	d := ds[0]
	if d.Code != code || d.Pos.Line != line || d.Pos.File != "stack.yaml" {
		t.Errorf("got %v, want %v at line %d", d, code, line)
	}
	for _, p := range parts {
		if !strings.Contains(d.Error(), p) {
			t.Errorf("%q does not say %q", d.Error(), p)
		}
	}
}

func TestResolve(t *testing.T) {
	for name, host := range hosts(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			pub := newPublisher(t, host)
			pub.push("website", "1.0.0", nil)
			d110 := pub.push("website", "1.1.0", nil)
			pub.push("website", "2.0.0", nil)
			pub.push("website", "nightly", nil)
			pub.push("db", "1.0.0", &registry.Deprecation{Message: "db 1 loses writes", Replacement: host + "/team/db:2.0.0", After: "2027-06-30"})
			pub.push("db", "2.0.0", nil)

			// The newest version meeting the constraint, by digest, verified.
			rs, err := stack.Resolve(ctx, readStack(t, host, "  - {name: website, version: ^1.0.0}\n"), pub.options())
			if err != nil {
				t.Fatal(err)
			}
			r := rs[0]
			if r.Version != "1.1.0" || r.Fetched.Descriptor.Digest.String() != d110 || r.Fetched.Proof == nil || r.Deprecation != nil {
				t.Errorf("resolved %s %s proof %v deprecation %v", r.Version, r.Fetched.Descriptor.Digest, r.Fetched.Proof, r.Deprecation)
			}

			// A deprecated version is refused without an acceptance,
			// naming the replacement and how to accept.
			_, err = stack.Resolve(ctx, readStack(t, host, "  - {name: db, version: ~1.0}\n"), pub.options())
			wantDiag(t, err, diag.DeprecatedPattern, 5, "db 1.0.0 is deprecated: db 1 loses writes", "move to "+host+"/team/db:2.0.0", `accept: {version: "1.0.0", until: YYYY-MM-DD}`)

			// Accepted: it resolves, until the earlier of until and after.
			rs, err = stack.Resolve(ctx, readStack(t, host, "  - name: db\n    version: ~1.0\n    accept: {version: 1.0.0, until: 2027-12-31}\n"), pub.options())
			if err != nil {
				t.Fatal(err)
			}
			if r := rs[0]; r.Deprecation == nil || r.Accepted == nil || !r.Until.Equal(time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("accepted: %+v", r)
			}

			// A lapsed acceptance is refused at the acceptance.
			_, err = stack.Resolve(ctx, readStack(t, host, "  - name: db\n    version: ~1.0\n    accept: {version: 1.0.0, until: 2027-02-28}\n"), pub.options())
			wantDiag(t, err, diag.DeprecatedPattern, 7, "acceptance of db 1.0.0 lapsed after 2027-02-28", "move to "+host+"/team/db:2.0.0")

			// After the publisher's date, no acceptance holds.
			opts := pub.options()
			opts.Now = func() time.Time { return time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC) }
			_, err = stack.Resolve(ctx, readStack(t, host, "  - name: db\n    version: ~1.0\n    accept: {version: 1.0.0, until: 2027-12-31}\n"), opts)
			wantDiag(t, err, diag.DeprecatedPattern, 5, "no longer accepted since 2027-06-30", "move to "+host+"/team/db:2.0.0")

			// Every entry's problem at once.
			_, err = stack.Resolve(ctx, readStack(t, host, "  - {name: website, version: ^3}\n  - {name: blog, version: ^1}\n  - {name: db, version: ^2}\n"), pub.options())
			ds := diag.All(err)
			if len(ds) != 2 || ds[0].Code != diag.UnresolvedPattern || ds[1].Code != diag.UnresolvedPattern ||
				!strings.Contains(ds[0].Msg, `no version of website in `+host+`/team meets "^3" (it has nightly, 2.0.0, 1.1.0, 1.0.0)`) ||
				!strings.Contains(ds[1].Msg, "pattern blog is not in "+host+"/team") {
				t.Errorf("two bad entries: %v", err)
			}

			// A misspelt name: the pattern probably meant.
			_, err = stack.Resolve(ctx, readStack(t, host, "  - {name: websit, version: ^1}\n"), pub.options())
			wantDiag(t, err, diag.UnresolvedPattern, 5, "pattern websit is not in "+host+"/team", "did you mean website?")

			// An untrusted publisher is refused, unless told otherwise.
			other := newPublisher(t, host)
			_, err = stack.Resolve(ctx, readStack(t, host, "  - {name: website, version: 1.0.0}\n"), other.options())
			wantDiag(t, err, diag.UnresolvedPattern, 5, "website 1.0.0 does not verify", "trust the publisher's key")
			opts = other.options()
			opts.AllowUnverified = true
			if rs, err := stack.Resolve(ctx, readStack(t, host, "  - {name: website, version: 1.0.0}\n"), opts); err != nil || rs[0].Fetched.Unverified == nil {
				t.Errorf("AllowUnverified: %v", err)
			}
		})
	}
}

// TestScopedDeprecation: a version's deprecation with a versions scope
// deprecates versions pushed before it.
func TestScopedDeprecation(t *testing.T) {
	host := hosts(t)["memory"]
	pub := newPublisher(t, host)
	pub.push("website", "1.4.0", nil)
	pub.push("website", "2.0.0", &registry.Deprecation{Message: "1.x has no TLS", Replacement: "website 2", Versions: "<2.0.0"})
	_, err := stack.Resolve(context.Background(), readStack(t, host, "  - {name: website, version: ^1}\n"), pub.options())
	wantDiag(t, err, diag.DeprecatedPattern, 5, "website 1.4.0 is deprecated: 1.x has no TLS", "move to website 2")
	if rs, err := stack.Resolve(context.Background(), readStack(t, host, "  - {name: website, version: ^2}\n"), pub.options()); err != nil || rs[0].Deprecation != nil {
		t.Errorf("2.0.0 is outside its own scope: %v", err)
	}
}

// TestRecheck: a version resolved before a newer push deprecated it is
// judged again against the index as it is now, never refused: accepted,
// it gets its Until; not accepted, or accepted no longer, Refused says
// why. The deprecation its own manifest carries stays.
func TestRecheck(t *testing.T) {
	host := hosts(t)["memory"]
	ctx := context.Background()
	pub := newPublisher(t, host)
	pub.push("website", "1.0.0", nil)
	resolve := func(entries string) *stack.Resolved {
		t.Helper()
		rs, err := stack.Resolve(ctx, readStack(t, host, entries), pub.options())
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	accepted := resolve("  - name: website\n    version: 1.0.0\n    accept: {version: ^1, until: 2027-12-31}\n")
	lapsing := resolve("  - name: website\n    version: 1.0.0\n    accept: {version: ^1, until: 2027-02-28}\n")
	bare := resolve("  - {name: website, version: 1.0.0}\n")
	if r, err := stack.Recheck(ctx, accepted, pub.options()); err != nil || r.Deprecation != nil || r.Refused != "" {
		t.Fatalf("before the push: %+v, %v", r, err)
	}

	pub.push("website", "2.0.0", &registry.Deprecation{Message: "1.x has no TLS", Replacement: "website 2", Versions: "<2.0.0"})
	for _, c := range []struct {
		name    string
		r       *stack.Resolved
		refused string
		until   time.Time
	}{
		{"accepted", accepted, "", time.Date(2027, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"lapsed", lapsing, "the Stack's acceptance lapsed after 2027-02-28", time.Time{}},
		{"not accepted", bare, "no Stack accepts it", time.Time{}},
	} {
		r, err := stack.Recheck(ctx, c.r, pub.options())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Deprecation == nil || r.Deprecation.Message != "1.x has no TLS" || r.Refused != c.refused || !r.Until.Equal(c.until) || r.Fetched != c.r.Fetched {
			t.Errorf("%s: %+v", c.name, r)
		}
		if c.r.Deprecation != nil {
			t.Errorf("%s: Recheck changed the Resolved it was given", c.name)
		}
	}

	// A registry that does not answer is an error, for the caller to
	// retry; nothing is judged.
	opts := pub.options()
	opts.Open = func(context.Context, string) (registry.Registry, error) {
		return registry.NewRemote("127.0.0.1:1"), nil
	}
	if _, err := stack.Recheck(ctx, accepted, opts); err == nil {
		t.Error("Recheck against a registry that does not answer returned no error")
	}
}

// TestIndexNotTrusted: an index that names a digest as another version
// than the pattern there holds is refused.
func TestIndexNotTrusted(t *testing.T) {
	host := hosts(t)["memory"]
	pub := newPublisher(t, host)
	d := pub.push("website", "1.0.0", nil)
	err := registry.UpdateIndex(context.Background(), registry.NewRemote(host), "team", registry.IndexEntry{Name: "website", Repository: "team/website", Version: "1.9.0", Digest: d})
	if err != nil {
		t.Fatal(err)
	}
	_, err = stack.Resolve(context.Background(), readStack(t, host, "  - {name: website, version: ^1}\n"), pub.options())
	wantDiag(t, err, diag.UnresolvedPattern, 5, "the index says "+d+" is website 1.9.0, but it holds website 1.0.0")
}

// TestOfflineFromCache: what resolves online is saved to an OCI layout
// (the cache); with the registry gone, the same Stack resolves from the
// layout alone, to the same digest, verified again; a flipped byte in the
// layout is caught. It runs against the real Distribution registry, or
// the in-memory one without the binary.
func TestOfflineFromCache(t *testing.T) {
	ctx := context.Background()
	var (
		host string
		stop func()
	)
	reg, err := localregistry.Start(ctx, localregistry.Options{StorageDir: t.TempDir()})
	switch {
	case assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1":
		t.Logf("the in-memory registry: %v", err)
		mem := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
		host, stop = strings.TrimPrefix(mem.URL, "http://"), mem.Close
	case err != nil:
		t.Fatal(err)
	default:
		host, stop = reg.Host, func() { reg.Stop() }
	}
	pub := newPublisher(t, host)
	pub.push("website", "1.0.0", nil)
	d := pub.push("website", "1.1.0", &registry.Deprecation{Message: "use webapp", Replacement: "webapp"})
	s := readStack(t, host, "  - name: website\n    version: ^1\n    accept: {version: 1.1.0, until: 2027-12-31}\n")

	dir := t.TempDir()
	cache, err := registry.OpenLayout(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := stack.Resolve(ctx, s, pub.options())
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Save(ctx, registry.NewRemote(host), rs[0].Fetched); err != nil {
		t.Fatal(err)
	}
	cache.Close()
	stop()

	cache, err = registry.OpenLayout(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	offline := pub.options()
	offline.Open = func(_ context.Context, h string) (registry.Registry, error) {
		return cache.Registry(h), nil
	}
	rs, err = stack.Resolve(ctx, s, offline)
	if err != nil {
		t.Fatalf("offline: %v", err)
	}
	if r := rs[0]; r.Version != "1.1.0" || r.Fetched.Descriptor.Digest.String() != d || r.Fetched.Proof == nil || r.Deprecation == nil {
		t.Errorf("offline: %s %s proof %v deprecation %v", r.Version, r.Fetched.Descriptor.Digest, r.Fetched.Proof, r.Deprecation)
	}
	if _, err := stack.Resolve(ctx, s, pub.options()); err == nil {
		t.Error("the registry is stopped, yet resolving online worked: the offline resolution proves nothing")
	}

	// A byte flipped in the cached Blueprints.
	blobs, _ := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	flipped := 0
	for _, b := range blobs {
		p := filepath.Join(dir, "blobs", "sha256", b.Name())
		data, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(data), "kind: Blueprint") {
			continue
		}
		data[0] ^= 1
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		flipped++
	}
	if flipped == 0 {
		t.Fatal("no cached Blueprint to flip")
	}
	if _, err := stack.Resolve(ctx, s, offline); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("a tampered cache resolved: %v", err)
	}
}
