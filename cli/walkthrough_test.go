package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// devSession is one `inrun --dev` process, run as a newcomer runs it.
type devSession struct {
	cmd        *exec.Cmd
	out        *syncBuffer
	done       chan error
	kubeconfig string
	kubectlBin string
}

// buildInrun builds the inrun binary once per test binary.
var buildInrun = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "inrun-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "inrun")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/inrun").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func startDev(t *testing.T, bin string) *devSession {
	t.Helper()
	s := &devSession{out: &syncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, "--dev", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
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
			t.Fatalf("inrun --dev exited: %v\n%s", err, s.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("inrun --dev did not start in 3m:\n%s", s.out)
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

// stop presses Ctrl-C.
func (s *devSession) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("inrun --dev ended with %v after Ctrl-C\n%s", err, s.out)
		}
	case <-time.After(time.Minute):
		t.Error("inrun --dev did not stop within a minute of Ctrl-C")
	}
}

// kubectl runs the kubectl inrun pointed at, from "a second terminal".
func (s *devSession) kubectl(args ...string) (string, error) {
	cmd := exec.Command(s.kubectlBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (s *devSession) eventually(t *testing.T, what string, want *regexp.Regexp, args ...string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var out string
	for time.Now().Before(deadline) {
		out, _ = s.kubectl(args...)
		if want.MatchString(out) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	_, statErr := os.Stat(s.kubeconfig)
	t.Fatalf("%s: kubectl %s printed %q, want %s (kubeconfig %s: %v)\ninrun printed:\n%s", what, strings.Join(args, " "), out, want, s.kubeconfig, statErr, s.out)
}

// TestWalkthrough is the README's walkthrough as a newcomer runs it: init,
// inrun --dev with no cluster around, kubectl from a second terminal, edit
// the Blueprint, restart, and the cluster follows.
func TestWalkthrough(t *testing.T) {
	clustertest.RequireAssets(t, localcluster.Options{Mode: localcluster.Full})
	bin, err := buildInrun()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "my-operator")
	if out, err := run(t, t.TempDir(), "init", dir); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	t.Chdir(dir)
	t.Setenv("KUBECONFIG", filepath.Join(dir, "no-such-kubeconfig"))
	// --dev signs the built-in patterns with a key it makes: one of the
	// test's own.
	t.Setenv(envKeysDir, filepath.Join(t.TempDir(), "keys"))

	s := startDev(t, bin)
	s.eventually(t, "status readyReplicas", regexp.MustCompile(`"readyReplicas":2\b`), "get", "website", "hello-website", "-o", "jsonpath={.status}")
	// The local registry it started lists the built-in patterns at once.
	m := regexp.MustCompile(`export INRUN_REGISTRY=(\S+)`).FindStringSubmatch(s.out.String())
	if m == nil {
		t.Fatalf("inrun --dev printed no registry:\n%s", s.out)
	}
	if out, err := run(t, dir, "patterns", m[1]+"/inrun"); err != nil || !regexp.MustCompile(`(?m)^website\s+1\.0\.0\s`).MatchString(out) || !strings.Contains(out, "homepage 1.0.0 is deprecated") {
		t.Errorf("inrun patterns of the --dev registry = %v\n%s", err, out)
	}
	s.eventually(t, "children", regexp.MustCompile(`(?s)deployment.apps/hello-website\s+2/2.*service/hello-website`), "get", "deployment,service")
	s.stop(t)

	// Another replica count and a new status field.
	var bp []byte
	bp, err = os.ReadFile("blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(bp), "replicas: ${self.spec.replicas}", "replicas: ${self.spec.replicas + 1}", 1)
	edited = strings.Replace(edited, "    readyReplicas: ${deployment.status.readyReplicas}", "    readyReplicas: ${deployment.status.readyReplicas}\n    image: ${self.spec.image}", 1)
	if edited == string(bp) {
		t.Fatal("the walkthrough's edit no longer applies to the pack's blueprint.yaml")
	}
	if err := os.WriteFile("blueprint.yaml", []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	s = startDev(t, bin)
	s.eventually(t, "new replica count", regexp.MustCompile(`hello-website\s+3/3`), "get", "deployment")
	s.eventually(t, "new status field", regexp.MustCompile(`"image":"nginx:1.27"`), "get", "website", "hello-website", "-o", "jsonpath={.status}")
	s.stop(t)
	if _, err := os.Stat(s.kubeconfig); !os.IsNotExist(err) {
		t.Errorf("the dev kubeconfig %s outlived the control plane", s.kubeconfig)
	}
}
