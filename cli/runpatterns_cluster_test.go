package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/localregistry"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/gate"
)

// TestRunStackOnCluster runs the inrun binary as a team would: a Stack
// naming a pattern in a real Distribution registry, whose newest version
// is deprecated and accepted, run with inrun run --stack --dev on a local
// control plane. The custom resource it reconciles gets its children and
// the Deprecated condition.
func TestRunStackOnCluster(t *testing.T) {
	clustertest.RequireAssets(t, localcluster.Options{Mode: localcluster.Full})
	reg, err := localregistry.Start(context.Background(), localregistry.Options{StorageDir: t.TempDir()})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	bin, err := buildInrun()
	if err != nil {
		t.Fatal(err)
	}

	dir := initPattern(t)
	files, err := gate.Collect(filepath.Join(dir, "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sign, err := signer("")
	if err != nil {
		t.Fatal(err)
	}
	// Results made up for the test: the gate's own run is
	// TestRegistryWalkthrough's.
	results := registry.Results{InrunVersion: "test", KubernetesVersion: assets.KubernetesVersion,
		Simulate: registry.Suite{File: "test/simulate.yaml", Cases: 4, Passed: 4, Duration: "1s"},
		E2E:      registry.Suite{File: "test/e2e.yaml", Cases: 1, Passed: 1, Duration: "1m"}}
	for _, v := range []struct {
		version string
		dep     *registry.Deprecation
	}{{"1.0.0", nil}, {"1.1.0", &registry.Deprecation{Message: "website 1 has no TLS", Replacement: reg.Host + "/team/website:2.0.0"}}} {
		ref, _ := registry.ParseReference(reg.Host + "/team/website:" + v.version)
		p := &registry.Pattern{Name: "website", Version: v.version, Files: files, Deprecation: v.dep}
		if _, err := registry.Push(context.Background(), registry.NewRemote(reg.Host), ref, p, registry.PushOptions{Signer: sign, Results: results}); err != nil {
			t.Fatal(err)
		}
	}
	work := t.TempDir()
	stackFile := filepath.Join(work, "stack.yaml")
	if err := os.WriteFile(stackFile, []byte("apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: "+reg.Host+"/team\npatterns:\n  - name: website\n    version: ^1\n    accept: {version: 1.1.0, until: 2999-01-31}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	s := &devSession{out: &syncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "run", "--stack", stackFile, "--dev", "--pattern-cache", filepath.Join(work, "cache"), "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	s.cmd.Dir = work
	s.cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(work, "no-kubeconfig"))
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { _ = s.cmd.Process.Kill() })
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(s.out.String(), "Reconciling Website") {
		select {
		case err := <-s.done:
			t.Fatalf("inrun run --stack exited: %v\n%s", err, s.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("inrun run --stack did not start in 3m:\n%s", s.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out := s.out.String()
	for _, want := range []string{"Pattern " + reg.Host + "/team/website:1.1.0: sha256:", "verified, signed by", "WARNING: " + reg.Host + "/team/website:1.1.0 is deprecated", "CRD websites.example.inrun.dev installed"} {
		if !strings.Contains(out, want) {
			t.Errorf("inrun run printed no %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(out)
	p := regexp.MustCompile(`export PATH=(\S+):\$PATH`).FindStringSubmatch(out)
	if m == nil || p == nil {
		t.Fatalf("inrun --dev printed no KUBECONFIG or PATH line:\n%s", out)
	}
	s.kubeconfig, s.kubectlBin = strings.Trim(m[1], "'"), filepath.Join(strings.Trim(p[1], "'"), "kubectl")

	if out, err := s.kubectl("apply", "-f", filepath.Join(dir, "manifests", "cr.yaml")); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	s.eventually(t, "the Deployment", regexp.MustCompile(`deployment`), "get", "deployments", "-o", "name")
	s.eventually(t, "the Deprecated condition", regexp.MustCompile(`^True \S+/team/website:1\.1\.0 is deprecated: website 1 has no TLS; move to \S+/team/website:2\.0\.0; accepted until 2999-01-31$`),
		"get", "websites", "-o", `jsonpath={.items[0].status.conditions[?(@.type=="Deprecated")].status} {.items[0].status.conditions[?(@.type=="Deprecated")].message}`)
	s.stop(t)
}
