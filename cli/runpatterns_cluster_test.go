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
	reg, bin, dir := clusterRegistry(t)
	pushWebsite(t, reg.Host, dir, "1.0.0", nil)
	pushWebsite(t, reg.Host, dir, "1.1.0", &registry.Deprecation{Message: "website 1 has no TLS", Replacement: reg.Host + "/team/website:2.0.0"})
	work := t.TempDir()
	stackFile := filepath.Join(work, "stack.yaml")
	if err := os.WriteFile(stackFile, []byte("apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: "+reg.Host+"/team\npatterns:\n  - name: website\n    version: ^1\n    accept: {version: 1.1.0, until: 2999-01-31}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startRun(t, bin, work, "--stack", stackFile)
	out := s.out.String()
	for _, want := range []string{"Pattern " + reg.Host + "/team/website:1.1.0: sha256:", "verified, signed by", "WARNING: " + reg.Host + "/team/website:1.1.0 is deprecated", "CRD websites.example.inrun.dev installed"} {
		if !strings.Contains(out, want) {
			t.Errorf("inrun run printed no %q:\n%s", want, out)
		}
	}
	if out, err := s.kubectl("apply", "-f", filepath.Join(dir, "manifests", "cr.yaml")); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	s.eventually(t, "the Deployment", regexp.MustCompile(`deployment`), "get", "deployments", "-o", "name")
	s.eventually(t, "the Deprecated condition", regexp.MustCompile(`^True \S+/team/website:1\.1\.0 is deprecated: website 1 has no TLS; move to \S+/team/website:2\.0\.0; accepted until 2999-01-31$`),
		"get", "websites", "-o", `jsonpath={.items[0].status.conditions[?(@.type=="Deprecated")].status} {.items[0].status.conditions[?(@.type=="Deprecated")].message}`)
	s.stop(t)
}

// TestRunWatchesRegistryOnCluster: inrun run --stack runs website 1.0.0,
// not deprecated, and reconciles its custom resource; then 2.0.0 is
// pushed deprecating "<2.0.0". Without a restart, the running runtime
// reads the index again (--pattern-poll, short here), and the custom
// resource gets the Deprecated condition and a Warning Event, while it
// keeps being reconciled.
func TestRunWatchesRegistryOnCluster(t *testing.T) {
	reg, bin, dir := clusterRegistry(t)
	pushWebsite(t, reg.Host, dir, "1.0.0", nil)
	work := t.TempDir()
	stackFile := filepath.Join(work, "stack.yaml")
	if err := os.WriteFile(stackFile, []byte("apiVersion: inrun.dev/v1alpha1\nkind: Stack\nregistry: "+reg.Host+"/team\npatterns:\n  - name: website\n    version: 1.0.0\n    accept: {version: ^1, until: 2999-01-31}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startRun(t, bin, work, "--stack", stackFile, "--pattern-poll", "1s")
	if strings.Contains(s.out.String(), "deprecated") {
		t.Fatalf("1.0.0 was deprecated before the push:\n%s", s.out)
	}
	if out, err := s.kubectl("apply", "-f", filepath.Join(dir, "manifests", "cr.yaml")); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	s.eventually(t, "the Deployment", regexp.MustCompile(`deployment`), "get", "deployments", "-o", "name")
	s.eventually(t, "a reconciled status", regexp.MustCompile(`^(True|False)$`), "get", "websites", "-o", `jsonpath={.items[0].status.conditions[?(@.type=="Ready")].status}`)
	if out, _ := s.kubectl("get", "websites", "-o", `jsonpath={.items[0].status.conditions[?(@.type=="Deprecated")].status}`); out != "" {
		t.Fatalf("Deprecated = %q before the push", out)
	}

	pushWebsite(t, reg.Host, dir, "2.0.0", &registry.Deprecation{Message: "1.x has no TLS", Replacement: reg.Host + "/team/website:2.0.0", Versions: "<2.0.0"})
	s.eventually(t, "the Deprecated condition after the push", regexp.MustCompile(`^True \S+/team/website:1\.0\.0 is deprecated: 1\.x has no TLS; move to \S+/team/website:2\.0\.0; accepted until 2999-01-31$`),
		"get", "websites", "-o", `jsonpath={.items[0].status.conditions[?(@.type=="Deprecated")].status} {.items[0].status.conditions[?(@.type=="Deprecated")].message}`)
	s.eventually(t, "the Warning Event", regexp.MustCompile(`Warning PatternDeprecated \S+/team/website:1\.0\.0 is deprecated`),
		"get", "events", "--field-selector", "reason=PatternDeprecated", "-o", `jsonpath={range .items[*]}{.type} {.reason} {.message}{"\n"}{end}`)
	if !strings.Contains(s.out.String(), "WARNING: "+reg.Host+"/team/website:1.0.0 is deprecated") {
		t.Errorf("inrun run did not say so:\n%s", s.out)
	}
	// Reconciling goes on: an edit of the custom resource still reaches
	// its Deployment.
	if out, err := s.kubectl("patch", "website", "hello-website", "--type", "merge", "-p", `{"spec":{"replicas":3}}`); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	s.eventually(t, "the Deployment scaled after the deprecation", regexp.MustCompile(`^3$`), "get", "deployments", "-o", "jsonpath={.items[0].spec.replicas}")
	s.stop(t)
}

// clusterRegistry starts a Distribution registry and builds inrun, for a
// test on the local control plane; dir is a pattern made by inrun init.
func clusterRegistry(t *testing.T) (reg *localregistry.Registry, bin, dir string) {
	t.Helper()
	clustertest.RequireAssets(t, localcluster.Options{Mode: localcluster.Full})
	reg, err := localregistry.Start(context.Background(), localregistry.Options{StorageDir: t.TempDir()})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	if bin, err = buildInrun(); err != nil {
		t.Fatal(err)
	}
	return reg, bin, initPattern(t)
}

// pushWebsite pushes the pattern in dir as host/team/website:version, with
// a proof of passing results, and returns the pattern's digest.
func pushWebsite(t *testing.T, host, dir, version string, dep *registry.Deprecation) string {
	t.Helper()
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
	ref, _ := registry.ParseReference(host + "/team/website:" + version)
	p := &registry.Pattern{Name: "website", Version: version, Files: files, Deprecation: dep}
	pushed, err := registry.Push(context.Background(), registry.NewRemote(host), ref, p, registry.PushOptions{Signer: sign, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	return pushed.Pattern.Digest.String()
}

// startRun starts inrun run --dev with args in work and waits until it
// reconciles, with kubectl pointed at its control plane.
func startRun(t *testing.T, bin, work string, args ...string) *devSession {
	t.Helper()
	s := &devSession{out: &syncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"run", "--dev", "--pattern-cache", filepath.Join(work, "cache"), "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, args...)...)
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
			t.Fatalf("inrun run exited: %v\n%s", err, s.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("inrun run did not start in 3m:\n%s", s.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out := s.out.String()
	m := regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(out)
	p := regexp.MustCompile(`export PATH=(\S+):\$PATH`).FindStringSubmatch(out)
	if m == nil || p == nil {
		t.Fatalf("inrun --dev printed no KUBECONFIG or PATH line:\n%s", out)
	}
	s.kubeconfig, s.kubectlBin = strings.Trim(m[1], "'"), filepath.Join(strings.Trim(p[1], "'"), "kubectl")
	return s
}
