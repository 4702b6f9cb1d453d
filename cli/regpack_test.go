package cli

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/gate"
)

// TestRegistryPackStory follows the registry pack's README from step 2 on,
// with the gate's results made up (its own run is TestRegistryWalkthrough's,
// and the pack's e2e cases run in conformance): homepage 1.0.0 and then
// 2.0.0 are pushed from the pack as inrun init writes it, inrun patterns
// marks 1.0.0 deprecated, and the pack's stack.yaml resolves to 1.0.0,
// accepted, while the same Stack without its accept: refuses it, naming
// the replacement.
func TestRegistryPackStory(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	t.Setenv(envKeysDir, filepath.Join(t.TempDir(), "keys"))
	dir := filepath.Join(t.TempDir(), "shop")
	if out, err := run(t, t.TempDir(), "init", dir, "--pack", "registry"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if out, err := run(t, dir, "keys", "create"); err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	sign, err := signer("")
	if err != nil {
		t.Fatal(err)
	}
	results := registry.Results{InrunVersion: "test", KubernetesVersion: assets.KubernetesVersion,
		Simulate: registry.Suite{File: "test/simulate.yaml", Cases: 3, Passed: 3, Duration: "1s"},
		E2E:      registry.Suite{File: "test/e2e.yaml", Cases: 1, Passed: 1, Duration: "1m"}}
	for _, version := range []string{"1.0.0", "2.0.0"} {
		bp := filepath.Join(dir, "homepage-"+version, "blueprint.yaml")
		files, err := gate.Collect(bp)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := registry.ParseReference(host + "/team/homepage:" + version)
		p := &registry.Pattern{Name: "homepage", Version: version, Files: files}
		compiled, err := compiler.Compile(p.Source(ref.String()), compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p.Deprecation = registry.DeprecationOf(compiled)
		if _, err := registry.Push(context.Background(), registry.NewRemote(host), ref, p, registry.PushOptions{Signer: sign, Results: results}); err != nil {
			t.Fatal(err)
		}
	}

	out, err := run(t, dir, "patterns", host+"/team")
	if err != nil || !regexp.MustCompile(`homepage\s+2\.0\.0, 1\.0\.0 \[deprecated\]`).MatchString(out) || !strings.Contains(out, "homepage 1.0.0 is deprecated: homepage 1.x has no PodDisruptionBudget") {
		t.Errorf("patterns = %v\n%s", err, out)
	}

	// The pack's Stack, pointed at this registry.
	data, err := os.ReadFile(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	stack := strings.Replace(string(data), "127.0.0.1:5000/team", host+"/team", 1)
	if stack == string(data) {
		t.Fatal("the pack's stack.yaml no longer names 127.0.0.1:5000/team; update this test")
	}
	if err := os.WriteFile(filepath.Join(dir, "stack.yaml"), []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, dir, "patterns", "--stack", "stack.yaml")
	if err != nil || !regexp.MustCompile(`homepage\s+\^1\.0\.0\s+1\.0\.0 \[deprecated\]\s+sha256:\S+\s+verified`).MatchString(out) || !strings.Contains(out, "the Stack accepts it until 2031-03-31") {
		t.Errorf("patterns --stack = %v\n%s", err, out)
	}
	unaccepted := regexp.MustCompile(`(?s)\n    accept:.*`).ReplaceAllString(stack, "\n")
	if err := os.WriteFile(filepath.Join(dir, "stack.yaml"), []byte(unaccepted), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, dir, "patterns", "--stack", "stack.yaml"); err == nil || !strings.Contains(err.Error(), "homepage 1.0.0 is deprecated") || !strings.Contains(err.Error(), "move to homepage 2.0.0, or accept it in the Stack") {
		t.Errorf("patterns --stack without the acceptance = %v", err)
	}
}
