package runner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/sdk"
)

// EnvWorkflowCrashN sets how many workflows TestWorkflowSurvivesCrashes
// runs; make workflow-crash sets 100.
const EnvWorkflowCrashN = "INRUN_WORKFLOW_CRASH_N"

// EnvWorkflowCrashBin, when set, names an inrun binary that
// TestWorkflowSurvivesCrashes runs as the runtime and kills with SIGKILL,
// instead of stopping an in-process runtime; make workflow-crash sets it.
const EnvWorkflowCrashBin = "INRUN_WORKFLOW_CRASH_BIN"

// writeTaskBlueprint copies the Task Blueprint and its CRD into a
// directory of its own, calling the reconciler at url.
func writeTaskBlueprint(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"task.yaml", "task-crd.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(data), "http://127.0.0.1:1/reconcile", url, 1)
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "task.yaml")
}

// startProcess runs inrun run on file as a process, and returns what
// kills it with SIGKILL: no shutdown, no write finished that was not.
func startProcess(t *testing.T, bin, file, kubeconfig string) (kill func()) {
	t.Helper()
	cmd := exec.Command(bin, "run", file, "--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--zap-log-level", "error")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() {
		_ = cmd.Process.Kill()
		err := cmd.Wait()
		if cmd.ProcessState == nil || cmd.ProcessState.Success() {
			t.Errorf("the runtime was not killed (%v); its output:\n%s", err, out.String())
		}
	}
}

var taskGVK = schema.GroupVersionKind{Group: "test.inrun.dev", Version: "v1", Kind: "Task"}

// ledger is the external counter: a reconciler that does each step's side
// effect once per idempotency key, as the contract asks, and counts, per
// Task and step, the effects it did. A runtime whose keys changed across
// a crash would make it do a step twice.
type ledger struct {
	mu      sync.Mutex
	keys    map[string]bool
	effects map[types.UID]map[string]int
	done    map[types.UID]time.Time // when the last step's effect was done
	repeats int                     // calls for a key already done: crashes in the window
}

// waitFor waits until the ledger has n effects, or d has passed.
func (l *ledger) waitFor(n int, d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		l.mu.Lock()
		got := len(l.keys)
		l.mu.Unlock()
		if got >= n {
			return
		}
	}
}

func (l *ledger) reconcile(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
	if req.Finalizing {
		return &sdk.Result{Done: true}, nil
	}
	if req.Step == nil {
		return nil, errors.New("no step in a workflow's request")
	}
	u, _, _ := unstructured.NestedString(req.Object, "metadata", "uid")
	uid := types.UID(u)
	l.mu.Lock()
	if l.keys[req.Step.IdempotencyKey] {
		l.repeats++
	} else {
		l.keys[req.Step.IdempotencyKey] = true
		if l.effects[uid] == nil {
			l.effects[uid] = map[string]int{}
		}
		l.effects[uid][req.Step.Name]++
		if req.Step.Name == "Notify" {
			l.done[uid] = time.Now()
		}
	}
	l.mu.Unlock()
	// The effect is done; the answer comes a moment later. A runtime
	// stopped now has the effect and no record of it.
	time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
	name := sdk.Resource{Object: req.Object}.Name()
	return &sdk.Result{Resources: []sdk.Resource{{ID: "record", Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name + "-record"},
		"data":     map[string]any{"last": req.Step.Name},
	}}}}, nil
}

// TestWorkflowSurvivesCrashes stops the runtime at random points of N
// workflows, again and again, and restarts it: every workflow must reach
// its end with each step's side effect done once, and each finished Task
// must be gone within ttlSecondsAfterFinished + 10 s of its last step.
func TestWorkflowSurvivesCrashes(t *testing.T) {
	n := 5
	if s := os.Getenv(EnvWorkflowCrashN); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive number", EnvWorkflowCrashN, s)
		}
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("%d workflows, seed %d", n, seed)

	c := clustertest.Shared(t)
	bp, err := compiler.CompileFile("testdata/task.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &ledger{keys: map[string]bool{}, effects: map[types.UID]map[string]int{}, done: map[types.UID]time.Time{}}
	server := httptest.NewServer(sdk.Handler(l.reconcile))
	t.Cleanup(server.Close)
	bp = bp.WithRemoteURL(server.URL + "/reconcile")
	cfg := c.RESTConfig()
	if err := runner.InstallCRDs(context.Background(), cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	// With EnvWorkflowCrashBin, the runtime is that inrun binary, run as a
	// process on a copy of the Blueprint that calls the test's reconciler,
	// and stopped with SIGKILL.
	bin, bpFile := os.Getenv(EnvWorkflowCrashBin), ""
	if bin != "" {
		bpFile = writeTaskBlueprint(t, server.URL+"/reconcile")
		t.Logf("the runtime is %s, killed with SIGKILL", bin)
	}
	admin, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, c)

	start := func() (stop func()) {
		if bin != "" {
			return startProcess(t, bin, bpFile, c.KubeconfigPath())
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- runner.Run(ctx, runner.Options{
				Config: cfg, Blueprints: []*ir.Blueprint{bp}, Namespaces: []string{ns},
				MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
				// Every stop fails the reconciles in flight, loudly: quiet.
				Log: logr.Discard(),
			})
		}()
		return func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("the runtime stopped with %v", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the runtime did not stop within a minute of its cancellation")
			}
		}
	}

	uids := map[types.UID]string{}
	for i := range n {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(taskGVK)
		obj.SetNamespace(ns)
		obj.SetName(fmt.Sprintf("task-%03d", i))
		if err := admin.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
		uids[obj.GetUID()] = obj.GetName()
	}

	// Stop the runtime at points spread over the N workflows: when the
	// reconciler has done the k-th of 3N side effects, for k at every
	// tenth, give or take, and each time just after that effect, before
	// the runtime could record it.
	crashes := 0
	for k := 1; k <= 9; k++ {
		threshold := k*3*n/10 + rng.IntN(max(1, 3*n/20))
		stop := start()
		l.waitFor(threshold, time.Minute)
		stop()
		crashes++
	}
	t.Logf("stopped the runtime %d times", crashes)
	stop := start()
	defer stop()

	// Wait for every Task to go, noting when each went.
	gone := map[types.UID]time.Time{}
	deadline := time.Now().Add(time.Duration(n)*2*time.Second + 2*time.Minute)
	for len(gone) < n && time.Now().Before(deadline) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(taskGVK.GroupVersion().WithKind("TaskList"))
		if err := admin.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		present := map[types.UID]bool{}
		for _, item := range list.Items {
			present[item.GetUID()] = true
		}
		now := time.Now()
		for uid := range uids {
			if _, ok := gone[uid]; !ok && !present[uid] {
				gone[uid] = now
			}
		}
		time.Sleep(250 * time.Millisecond)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%d calls asked again for a step whose effect was already done: after a stop in the window between the effect and its record, or in a call in flight", l.repeats)
	ttl := time.Duration(*bp.Reconcile.Workflow.TTLSecondsAfterFinished) * time.Second
	for uid, name := range uids {
		for _, step := range []string{"Prepare", "Apply", "Notify"} {
			if got := l.effects[uid][step]; got != 1 {
				t.Errorf("%s: step %s's side effect was done %d times; want once", name, step, got)
			}
		}
		at, ok := gone[uid]
		switch {
		case !ok:
			t.Errorf("%s is still there: its workflow did not end, or its TTL did not delete it", name)
		case l.done[uid].IsZero():
			t.Errorf("%s went without its last step", name)
		case at.Sub(l.done[uid]) > ttl+10*time.Second:
			t.Errorf("%s went %s after its last step; want within ttlSecondsAfterFinished (%s) + 10s", name, at.Sub(l.done[uid]).Round(time.Second), ttl)
		}
	}
	// Their children go with them, by garbage collection.
	l.mu.Unlock()
	left := func() []string {
		var out []string
		for _, name := range uids {
			cm := &unstructured.Unstructured{}
			cm.SetGroupVersionKind(configMapGVK)
			if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name + "-record"}, cm); err == nil {
				out = append(out, cm.GetName())
			}
		}
		return out
	}
	for end := time.Now().Add(time.Minute); len(left()) > 0 && time.Now().Before(end); {
		time.Sleep(250 * time.Millisecond)
	}
	if names := left(); len(names) > 0 {
		t.Errorf("the children of finished Tasks are still there: %v", names)
	}
	l.mu.Lock()
}
