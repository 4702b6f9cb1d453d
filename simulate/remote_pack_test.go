package simulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/sdk"
	"github.com/inrun/inrun/simulate"
)

// remotePack copies the remote pack and loads its Blueprint and
// simulate.yaml.
func remotePack(t *testing.T) (string, *ir.Blueprint, *simulate.File) {
	t.Helper()
	dir := t.TempDir()
	if err := packs.Copy("remote", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := simulate.ReadFile(filepath.Join(dir, "test", "simulate.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, bp, f
}

func runAll(t *testing.T, sim *simulate.Simulator, f *simulate.File) {
	t.Helper()
	for i := range f.Cases {
		c := &f.Cases[i]
		start := time.Now()
		res := sim.RunCase(context.Background(), f, c)
		if !res.Passed() {
			t.Errorf("case %q failed: %v\n%s", c.Name, res.Err, strings.Join(res.Failures, "\n"))
			continue
		}
		t.Logf("PASS %s (%s)", c.Name, time.Since(start).Round(time.Millisecond))
	}
}

// TestRemotePackGoReconciler runs the remote pack's simulate.yaml against
// its Go reconciler, a real process that Serve keeps up for all the cases.
func TestRemotePackGoReconciler(t *testing.T) {
	_, bp, f := remotePack(t)
	f.Reconciler.Command = []string{"go", "run", "./reconcilers/go/main.go"}
	onPort(t, f.Reconciler)
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stop, err := sim.Serve(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the Go reconciler listened after %s", time.Since(start).Round(time.Millisecond))
	runAll(t, sim, f)
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if conn, err := net.DialTimeout("tcp", strings.TrimSuffix(strings.TrimPrefix(f.Reconciler.URL, "http://"), "/reconcile"), time.Second); err == nil {
		conn.Close()
		t.Error("the reconciler still listens after stop")
	}
}

// TestRemotePackPerCase runs the pack's file as inrun simulate does: one
// reconciler process per case, the pack's own Python one.
func TestRemotePackPerCase(t *testing.T) {
	_, bp, f := remotePack(t)
	onPort(t, f.Reconciler)
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, sim, f)
}

// TestRemotePackRecordedReply records what the Go reconciler answers for
// hello-webapp, then runs the pack's first case on that recorded reply,
// with no process: the outcome must be the same.
func TestRemotePackRecordedReply(t *testing.T) {
	dir, bp, f := remotePack(t)
	r := &simulate.Reconciler{Command: []string{"go", "run", "./reconcilers/go/main.go"}}
	onPort(t, r)
	p, err := r.Start(context.Background(), simulate.StartOptions{URL: r.URL, BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	req := &sdk.Request{
		APIVersion: sdk.APIVersion, Kind: sdk.KindRequest,
		Object: map[string]any{"apiVersion": "example.inrun.dev/v1", "kind": "WebApp", "metadata": map[string]any{"name": "hello-webapp", "namespace": "default"}},
		Args:   map[string]any{"image": "nginx:1.27", "replicas": 2, "expose": true},
	}
	body, _ := json.Marshal(req)
	resp, err := http.Post(p.URL(), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var recorded map[string]any
	err = json.NewDecoder(resp.Body).Decode(&recorded)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	f.Reconciler, f.Reply = nil, recorded
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	c := &f.Cases[0]
	if res := sim.RunCase(context.Background(), f, c); !res.Passed() {
		t.Fatalf("case %q on the recorded reply: %v\n%s", c.Name, res.Err, strings.Join(res.Failures, "\n"))
	}
}
