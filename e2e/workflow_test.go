package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/packs"
)

// TestWorkflowPack runs the workflow pack's e2e.yaml, with the reconciler's
// ledger in a file: the external record of every side effect, which must
// hold each step's once.
func TestWorkflowPack(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("workflow", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "test", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	port := clustertest.FreePort(t)
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	text := string(src)
	for old, repl := range map[string]string{
		"http://127.0.0.1:18095/reconcile": "http://127.0.0.1:" + port + "/reconcile",
		`env: {PORT: "18095"}`:             `env: {PORT: "` + port + `", LEDGER: "` + ledger + `"}`,
	} {
		if strings.Count(text, old) != 1 {
			t.Fatalf("the pack's e2e.yaml no longer has %q once; update this test", old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	file := filepath.Join(dir, "test", "e2e-ledger.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := e2e.Load(file, bp)
	if err != nil {
		t.Fatal(err)
	}
	var out, reconcilerOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := e2e.Run(ctx, e2e.Options{Blueprint: bp, File: file, Config: clustertest.Shared(t).RESTConfig(), ReconcilerOutput: &reconcilerOut, Out: &out})
	t.Logf("output of inrun e2e:\n%s\nthe reconciler's output:\n%s", out.String(), reconcilerOut.String())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Cases) != len(f.Cases) || rep.Failed() != 0 {
		t.Errorf("%d of %d cases passed; want every one", rep.Passed(), len(f.Cases))
	}
	raw, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatalf("the reconciler kept no ledger: %v", err)
	}
	steps := map[string]int{}
	keys := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e struct{ Key, Step string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("ledger line %q: %v", line, err)
		}
		steps[e.Step]++
		if keys[e.Key] {
			t.Errorf("the ledger has key %s twice", e.Key)
		}
		keys[e.Key] = true
	}
	for _, s := range []string{"Reserve", "Charge", "Ship"} {
		if steps[s] != 1 {
			t.Errorf("step %s's side effect was done %d times; want once (ledger: %s)", s, steps[s], raw)
		}
	}
}

// TestWorkflowPreviewPack runs the workflow pack's preview example, a
// workflow without a reconciler: a seed Job that the job controller and
// kwok complete, then a Deployment and a Service, then the TTL.
func TestWorkflowPreviewPack(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("workflow", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	exDir := filepath.Join(dir, "preview")
	bp, err := compiler.CompileFile(filepath.Join(exDir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertAllPass(t, bp, filepath.Join(exDir, "test", "e2e.yaml"))
}
