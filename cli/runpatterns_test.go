package cli

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/gate"
)

func TestPatternRef(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "blueprint")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg, registry, name, version, digest, err string
	}{
		{arg: "blueprint.yaml"},
		{arg: "other/blueprint.yaml"},
		{arg: file},
		{arg: "localhost:5000/team/website@1.2.0", registry: "localhost:5000/team", name: "website", version: "1.2.0"},
		{arg: "registry.example/a/b/website:1.2.0", registry: "registry.example/a/b", name: "website", version: "1.2.0"},
		{arg: "registry.example/website", registry: "registry.example", name: "website", version: "*"},
		{arg: "localhost:5000/team/website@sha256:" + strings.Repeat("ab", 32), registry: "localhost:5000/team", name: "website", version: "*", digest: "sha256:" + strings.Repeat("ab", 32)},
		{arg: "localhost:5000/team/website@sha256:abc", err: "is not a sha256 digest"},
		{arg: "localhost:5000/team/website@nightly", err: "with a semver VERSION"},
		{arg: "oci:./patterns/website@1.2.0", registry: "oci:./patterns", name: "website", version: "1.2.0"},
		{arg: "oci:/media/a b/website", registry: "oci:/media/a b", name: "website", version: "*"},
		{arg: "oci:dir/website@sha256:" + strings.Repeat("ab", 32), registry: "oci:dir", name: "website", version: "*", digest: "sha256:" + strings.Repeat("ab", 32)},
		{arg: "oci:website@1.2.0", err: "names no pattern"},
		{arg: "oci:dir/website@nightly", err: "is not a pattern in an OCI layout"},
	} {
		e, ok, err := patternRef(c.arg)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.arg, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.arg, err)
		case c.name == "" && ok:
			t.Errorf("%s is a file, read as a pattern %+v", c.arg, e)
		case c.name != "" && (!ok || e.Registry != c.registry || e.Name != c.name || e.Version != c.version || e.Digest != c.digest):
			t.Errorf("%s: %+v, want %s in %s at %s", c.arg, e, c.name, c.registry, c.version)
		}
	}
}

// TestRunPatterns resolves what inrun run would run: a pattern by
// reference and a Stack's, verified and cached; a deprecated version only
// through a Stack that accepts it, and then marked for the runtime;
// offline from the cache once the registry is gone.
func TestRunPatterns(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := initPattern(t)
	pushWebsite(t, host, dir, "1.0.0", nil)
	pushWebsite(t, host, dir, "1.1.0", &registry.Deprecation{Message: "use webapp", Replacement: "webapp"})
	cacheDir := t.TempDir()
	flags := &patternFlags{cacheDir: cacheDir}
	var out bytes.Buffer

	bps, rest, _, err := flags.resolve(context.Background(), &out, []string{host + "/team/website@1.0.0", "blueprint.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bps) != 1 || bps[0].Resource.Kind != "Website" || bps[0].Deprecated != nil || len(rest) != 1 || rest[0] != "blueprint.yaml" {
		t.Fatalf("by reference: %d Blueprints, rest %v\n%s", len(bps), rest, out.String())
	}
	if !strings.Contains(out.String(), "Pattern "+host+"/team/website:1.0.0: sha256:") || !strings.Contains(out.String(), "verified, signed by") {
		t.Errorf("output:\n%s", out.String())
	}

	// The newest is deprecated: refused by reference, run by a Stack
	// that accepts it.
	if _, _, _, err := flags.resolve(context.Background(), &out, []string{host + "/team/website"}); err == nil || !strings.Contains(err.Error(), "website 1.1.0 is deprecated: use webapp; move to webapp, or accept it in the Stack") {
		t.Errorf("a deprecated version by reference: %v", err)
	}
	stackFile := filepath.Join(t.TempDir(), "stack.yaml")
	if err := os.WriteFile(stackFile, []byte("apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: "+host+"/team\npatterns:\n  - name: website\n    version: ^1\n    accept: {version: 1.1.0, until: 2999-01-31}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags.stack = stackFile
	out.Reset()
	bps, _, _, err = flags.resolve(context.Background(), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := bps[0].Deprecated
	if d == nil || d.Pattern != host+"/team/website:1.1.0" || d.Message != "use webapp" || d.Replacement != "webapp" || !d.Until.Equal(time.Date(2999, 1, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Deprecated = %+v\n%s", d, out.String())
	}
	if !strings.Contains(out.String(), "WARNING: "+host+"/team/website:1.1.0 is deprecated") {
		t.Errorf("output:\n%s", out.String())
	}

	// Offline: the registry is gone, the cache resolves the Stack.
	srv.Close()
	out.Reset()
	bps, _, _, err = flags.resolve(context.Background(), &out, nil)
	if err != nil {
		t.Fatalf("offline: %v\n%s", err, out.String())
	}
	if len(bps) != 1 || bps[0].Deprecated == nil || !strings.Contains(out.String(), "does not answer; resolving its patterns from the cache") || !strings.Contains(out.String(), "verified, signed by") {
		t.Errorf("offline:\n%s", out.String())
	}
	// With an empty cache, offline is one clear error.
	flags.cacheDir = t.TempDir()
	if _, _, _, err := flags.resolve(context.Background(), &out, nil); err == nil || !strings.Contains(err.Error(), "is in the pattern cache") {
		t.Errorf("offline with an empty cache: %v", err)
	}
}

// TestRunPatternByDigest resolves what inrun run NAME@sha256:... would
// run: that manifest, verified and cached, then offline from the cache;
// a deprecated one, another repository's digest, one not there, and one
// signed by an untrusted key are each refused.
func TestRunPatternByDigest(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
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
	results := registry.Results{InrunVersion: "test", KubernetesVersion: assets.KubernetesVersion,
		Simulate: registry.Suite{File: "test/simulate.yaml", Cases: 4, Passed: 4, Duration: "1s"},
		E2E:      registry.Suite{File: "test/e2e.yaml", Cases: 1, Passed: 1, Duration: "1m"}}
	digests := map[string]string{}
	for _, v := range []struct {
		repo, version string
		dep           *registry.Deprecation
	}{{"team/website", "1.0.0", nil}, {"team/website", "1.1.0", &registry.Deprecation{Message: "use webapp", Replacement: "webapp"}}, {"team/shop", "1.0.0", nil}} {
		ref, _ := registry.ParseReference(host + "/" + v.repo + ":" + v.version)
		p := &registry.Pattern{Name: ref.Name(), Version: v.version, Files: files, Deprecation: v.dep}
		pushed, err := registry.Push(context.Background(), registry.NewRemote(host), ref, p, registry.PushOptions{Signer: sign, Results: results})
		if err != nil {
			t.Fatal(err)
		}
		digests[v.repo+":"+v.version] = pushed.Pattern.Digest.String()
	}
	flags := &patternFlags{cacheDir: t.TempDir()}
	var out bytes.Buffer
	byDigest := host + "/team/website@" + digests["team/website:1.0.0"]
	bps, _, _, err := flags.resolve(context.Background(), &out, []string{byDigest})
	if err != nil {
		t.Fatalf("by digest: %v\n%s", err, out.String())
	}
	if len(bps) != 1 || bps[0].Resource.Kind != "Website" || bps[0].Deprecated != nil {
		t.Fatalf("by digest: %d Blueprints\n%s", len(bps), out.String())
	}
	if want := "Pattern " + host + "/team/website:1.0.0: " + digests["team/website:1.0.0"] + " (verified, signed by"; !strings.Contains(out.String(), want) {
		t.Errorf("output has no %q:\n%s", want, out.String())
	}

	for _, c := range []struct{ arg, want string }{
		{host + "/team/website@" + digests["team/website:1.1.0"], "website 1.1.0 is deprecated: use webapp"},
		// Another repository's pattern is not found in this one.
		{host + "/team/website@" + digests["team/shop:1.0.0"], "not found"},
		{host + "/team/website@sha256:" + strings.Repeat("0", 64), "not found"},
	} {
		if _, _, _, err := flags.resolve(context.Background(), &out, []string{c.arg}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.arg, err, c.want)
		}
	}
	// Trusting another key only: the proof does not verify.
	other := t.TempDir()
	if _, pub, err := registry.CreateKey(other, "other"); err != nil {
		t.Fatal(err)
	} else {
		untrusting := &patternFlags{cacheDir: t.TempDir(), keys: []string{pub}}
		if _, _, _, err := untrusting.resolve(context.Background(), &out, []string{byDigest}); err == nil || !strings.Contains(err.Error(), "does not verify") {
			t.Errorf("by digest with an untrusted key: %v", err)
		}
	}

	// Offline: the digest resolves from the cache, verified again.
	srv.Close()
	out.Reset()
	bps, _, _, err = flags.resolve(context.Background(), &out, []string{byDigest})
	if err != nil || len(bps) != 1 {
		t.Fatalf("offline by digest: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "resolving its patterns from the cache") || !strings.Contains(out.String(), "verified, signed by") {
		t.Errorf("offline by digest:\n%s", out.String())
	}
}

// TestPatternWatch runs what inrun run does while patterns run: the
// indexes are read again, and a push of 2.0.0 deprecating "<2.0.0"
// reaches the holders of the Blueprints that run 1.0.0, accepted by a
// Stack or, named on the command line, refused but still running. A
// registry that stops answering is logged and changes nothing.
func TestPatternWatch(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	files, err := gate.Collect(filepath.Join(initPattern(t), "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sign, err := signer("")
	if err != nil {
		t.Fatal(err)
	}
	push := func(version string, dep *registry.Deprecation) {
		ref, _ := registry.ParseReference(host + "/team/website:" + version)
		p := &registry.Pattern{Name: "website", Version: version, Files: files, Deprecation: dep}
		results := registry.Results{InrunVersion: "test", KubernetesVersion: assets.KubernetesVersion,
			Simulate: registry.Suite{File: "test/simulate.yaml", Cases: 4, Passed: 4, Duration: "1s"},
			E2E:      registry.Suite{File: "test/e2e.yaml", Cases: 1, Passed: 1, Duration: "1m"}}
		if _, err := registry.Push(context.Background(), registry.NewRemote(host), ref, p, registry.PushOptions{Signer: sign, Results: results}); err != nil {
			t.Fatal(err)
		}
	}
	push("1.0.0", nil)

	byRef := &patternFlags{cacheDir: t.TempDir(), poll: 10 * time.Millisecond}
	var out syncBuffer
	_, _, watchRef, err := byRef.resolve(context.Background(), &out, []string{host + "/team/website@1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	stackFile := filepath.Join(t.TempDir(), "stack.yaml")
	if err := os.WriteFile(stackFile, []byte("apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: "+host+"/team\npatterns:\n  - name: website\n    version: 1.0.0\n    accept: {version: ^1, until: 2999-01-31}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	byStack := &patternFlags{cacheDir: t.TempDir(), poll: 10 * time.Millisecond, stack: stackFile}
	_, _, watchStack, err := byStack.resolve(context.Background(), &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	holderRef, holderStack := watchRef.holders()["website"], watchStack.holders()["website"]
	if holderRef == nil || holderStack == nil || holderRef.Deprecated() != nil || holderStack.Deprecated() != nil {
		t.Fatalf("holders before the deprecation: %v %v", holderRef, holderStack)
	}
	changedRef, changedStack := holderRef.Changed(), holderStack.Changed()

	var logged syncBuffer
	logger := funcr.New(func(prefix, args string) { logged.Write([]byte(args + "\n")) }, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watchRef.run(ctx, logger)
	go watchStack.run(ctx, logger)

	push("2.0.0", &registry.Deprecation{Message: "1.x has no TLS", Replacement: host + "/team/website:2.0.0", Versions: "<2.0.0"})
	for _, c := range []<-chan struct{}{changedRef, changedStack} {
		select {
		case <-c:
		case <-time.After(time.Minute):
			t.Fatalf("no holder changed within a minute of the push:\n%s", out.String())
		}
	}
	want := &ir.Deprecated{Pattern: host + "/team/website:1.0.0", Message: "1.x has no TLS", Replacement: host + "/team/website:2.0.0", Refused: "no Stack accepts it"}
	if d := holderRef.Deprecated(); !reflect.DeepEqual(d, want) {
		t.Errorf("by reference, Deprecated = %+v, want %+v", d, want)
	}
	want = &ir.Deprecated{Pattern: host + "/team/website:1.0.0", Message: "1.x has no TLS", Replacement: host + "/team/website:2.0.0", Until: time.Date(2999, 1, 31, 0, 0, 0, 0, time.UTC)}
	if d := holderStack.Deprecated(); !reflect.DeepEqual(d, want) {
		t.Errorf("by Stack, Deprecated = %+v, want %+v", d, want)
	}
	if !strings.Contains(out.String(), "WARNING: "+host+"/team/website:1.0.0 is deprecated: 1.x has no TLS") {
		t.Errorf("output:\n%s", out.String())
	}

	// The registry stops answering: logged, retried, nothing changes.
	srv.Close()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logged.String(), "reading the pattern's index again") {
		if time.Now().After(deadline) {
			t.Fatalf("nothing logged within a minute of the registry stopping:\n%s", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if holderStack.Deprecated() == nil || holderRef.Deprecated() == nil {
		t.Error("a registry that does not answer took the deprecation away")
	}
}
