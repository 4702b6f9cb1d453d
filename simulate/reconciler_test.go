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
	t.Run("its directory does not exist", func(t *testing.T) {
		r := &simulate.Reconciler{Command: []string{"sleep", "30"}, Dir: "nope"}
		onPort(t, r)
		_, err := r.Start(context.Background(), simulate.StartOptions{URL: r.URL, BaseDir: dir})
		if err == nil || !strings.Contains(err.Error(), "reconciler: dir ") || !strings.Contains(err.Error(), "is no directory") {
			t.Errorf("error = %v; want the directory named, not the program", err)
		}
	})
	t.Run("an absolute directory", func(t *testing.T) {
		abs := t.TempDir()
		r := &simulate.Reconciler{Command: []string{"sh", "-c", "pwd >&2; exit 3"}, Dir: abs}
		onPort(t, r)
		_, err := r.Start(context.Background(), simulate.StartOptions{URL: r.URL, BaseDir: dir})
		if err == nil || !strings.Contains(err.Error(), "exited before it listened") || !strings.Contains(err.Error(), abs) {
			t.Errorf("error = %v; want the process run, in %s", err, abs)
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
	if res.Err == nil || !strings.Contains(res.Err.Error(), "has no reconcile.url, reconcile.service or reconcile.api") {
		t.Errorf("RunCase error = %v; want the Blueprint named as calling no reconciler", res.Err)
	}
}
