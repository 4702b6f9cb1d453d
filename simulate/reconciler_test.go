package simulate_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/simulate"
)

// onPort moves a reconciler to a free port.
func onPort(t *testing.T, r *simulate.Reconciler) {
	port := clustertest.FreePort(t)
	r.URL = "http://127.0.0.1:" + port + "/reconcile"
	r.Env = map[string]string{"PORT": port}
}

// TestReconcilerProblems checks what a reconciler that cannot serve the
// cases says.
func TestReconcilerProblems(t *testing.T) {
	dir := t.TempDir()
	t.Run("exits before it listens", func(t *testing.T) {
		r := &simulate.Reconciler{Command: []string{"sh", "-c", "echo no database here >&2; exit 3"}}
		onPort(t, r)
		_, err := r.Start(context.Background(), simulate.StartOptions{URL: r.URL, BaseDir: dir})
		if err == nil || !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no database here") {
			t.Errorf("error = %v; want the exit status and the last output", err)
		}
	})
	t.Run("never listens", func(t *testing.T) {
		r := &simulate.Reconciler{Command: []string{"sleep", "30"}, StartTimeout: &metav1.Duration{Duration: 300 * time.Millisecond}}
		onPort(t, r)
		start := time.Now()
		_, err := r.Start(context.Background(), simulate.StartOptions{URL: r.URL, BaseDir: dir})
		if err == nil || !strings.Contains(err.Error(), "did not listen on") {
			t.Errorf("error = %v; want that it did not listen", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Start took %s; want about its 300ms start timeout", d)
		}
	})
	t.Run("the port is taken", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		r := &simulate.Reconciler{Command: []string{"sleep", "30"}, URL: "http://" + l.Addr().String() + "/reconcile"}
		_, err = r.Start(context.Background(), simulate.StartOptions{URL: r.URL, BaseDir: dir})
		if err == nil || !strings.Contains(err.Error(), "something already listens on "+l.Addr().String()) {
			t.Errorf("error = %v; want the port named as taken", err)
		}
	})
	t.Run("the process dies during the run", func(t *testing.T) {
		r := &simulate.Reconciler{Command: []string{"python3", "-c", "import socket,time; s=socket.socket(); s.bind(('127.0.0.1', int(__import__('os').environ['PORT']))); s.listen(); time.sleep(0.5); print('bye'); raise SystemExit(2)"}}
		onPort(t, r)
		p, err := r.Start(context.Background(), simulate.StartOptions{URL: r.URL, BaseDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "exited during the run") || !strings.Contains(err.Error(), "bye") {
			t.Errorf("Stop = %v; want that it exited during the run, with its output", err)
		}
	})
}

// TestParseReconcilerAndReplies checks the problems with the reconciler,
// reply and steps fields, every one at once.
func TestParseReconcilerAndReplies(t *testing.T) {
	const file = `reconciler:
  command: []
  url: ftp://example.com
reply:
  status: {conditions: []}
cases:
  - name: a
    object: {apiVersion: example.inrun.dev/v1, kind: WebApp, metadata: {name: a}}
    reply:
      resources: [{apiVersion: v1, kind: Service}]
    steps:
      - patch: {spec: {replicas: 1}}
        delete: true
      - delete: true
        reply: {resources: [{apiVersion: v1, kind: Service, metadata: {name: s}}]}
      - patch: {spec: {replicas: 2}}
`
	_, err := simulate.Parse("simulate.yaml", []byte(file))
	if err == nil {
		t.Fatal("Parse accepted a file with many problems")
	}
	for _, want := range []string{
		"simulate.yaml: set reconciler (a process to start) or reply (a recorded reply), not both",
		"simulate.yaml: reconciler.command: required",
		`simulate.yaml: reconciler.url: "ftp://example.com" is not an absolute http:// or https:// URL`,
		"simulate.yaml: reply: status.conditions is written by the runtime",
		`case "a": reply: resources[0].metadata.name is required`,
		`case "a": steps[0].patch and delete are both set`,
		`case "a": steps[1].reply: resources must be empty in reply to a finalizing request`,
		`case "a": steps[2]: steps[1] already deleted the CR`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q; got:\n%v", want, err)
		}
	}
	const stepReply = `cases:
  - name: b
    object: {apiVersion: example.inrun.dev/v1, kind: WebApp, metadata: {name: b}}
    steps:
      - reply: {}
`
	if _, err := simulate.Parse("simulate.yaml", []byte(stepReply)); err == nil || !strings.Contains(err.Error(), `case "b": steps[0].reply: the case calls a reconciler, not a recorded reply`) {
		t.Errorf("a step reply in a case with no reply: %v", err)
	}
	if _, err := simulate.Parse("simulate.yaml", []byte("reconciler: {command: [x], port: 1}\ncases: []\n")); err == nil || !strings.Contains(err.Error(), "field port not found") {
		t.Errorf("an unknown reconciler field: %v", err)
	}
}

// TestReconcilerForABlueprintWithout checks that a reconciler block for a
// Blueprint that calls none is refused, not ignored.
func TestReconcilerForABlueprintWithout(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy(packs.Default, dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "test", "simulate.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := simulate.Parse(path, append([]byte("reconciler: {command: [python3, x.py]}\n"), data...))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	res := sim.RunCase(context.Background(), f, &f.Cases[0])
	if res.Err == nil || !strings.Contains(res.Err.Error(), "has no reconcile.url or reconcile.service") {
		t.Errorf("RunCase error = %v; want the Blueprint named as calling no reconciler", res.Err)
	}
}
