package reconciler_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/sdk"
	"github.com/inrun/inrun/simulate"
)

// steps is a workflow's reconciler: it records every call's step, and
// does each run's side effect once per idempotency key, as a reconciler
// that honours the key does.
type steps struct {
	mu      sync.Mutex
	calls   []sdk.Step
	effects map[string]int // by idempotency key
	// answer, when set, answers instead of the plain success.
	answer func(req *sdk.Request) (*sdk.Result, error)
}

func (s *steps) reconcile(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Finalizing {
		return &sdk.Result{Done: true}, nil
	}
	if req.Step == nil {
		return nil, errors.New("a workflow's request has no step")
	}
	s.calls = append(s.calls, *req.Step)
	res := &sdk.Result{Status: map[string]any{"last": req.Step.Name}, Step: &sdk.StepResult{Message: "did " + req.Step.Name}}
	if s.answer != nil {
		var err error
		if res, err = s.answer(req); err != nil {
			return nil, err
		}
	}
	if res.Step == nil || res.Step.Phase == "" || res.Step.Phase == sdk.StepSucceeded {
		s.effects[req.Step.IdempotencyKey]++
	}
	return res, nil
}

type workflowFixture struct {
	*fixture
	steps *steps
	now   time.Time
}

func newWorkflowFixture(t *testing.T, blueprint string) *workflowFixture {
	t.Helper()
	st := &steps{effects: map[string]int{}}
	server := httptest.NewServer(sdk.Handler(st.reconcile))
	t.Cleanup(server.Close)
	bp, err := compiler.CompileFile(blueprint, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bp = bp.WithRemoteURL(server.URL + "/reconcile")
	f := &workflowFixture{fixture: &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}, steps: st, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.restart()
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "order", "namespace": "shop"},
		"spec":     map[string]any{"image": "nginx:1"},
	}}
	if err := f.store.CreateCR(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	f.cr = cr
	return f
}

// restart replaces the Reconciler with a new one, as a restarted runtime
// has: nothing remembered but what the cluster holds.
func (f *workflowFixture) restart() {
	caller, err := remote.New(remote.Options{URL: f.bp.Reconcile.Remote.URL, Timeout: 2 * time.Second, MaxAttempts: 1})
	if err != nil {
		f.t.Fatal(err)
	}
	f.rec, err = reconciler.New(f.bp, reconciler.Options{Client: f.store, Remote: caller, Recorder: f.store, Clock: func() time.Time { return f.now }})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *workflowFixture) status() reconciler.WorkflowStatus {
	f.t.Helper()
	var ws reconciler.WorkflowStatus
	raw, _, _ := unstructured.NestedMap(f.get().Object, "status", reconciler.WorkflowField)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ws); err != nil {
		f.t.Fatal(err)
	}
	return ws
}

func (f *workflowFixture) condition(t string) *metav1.Condition {
	var conds []metav1.Condition
	raw, _, _ := unstructured.NestedSlice(f.get().Object, "status", "conditions")
	for _, c := range raw {
		var cond metav1.Condition
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(c.(map[string]any), &cond)
		conds = append(conds, cond)
	}
	return meta.FindStatusCondition(conds, t)
}

func TestWorkflowRunsItsStepsInOrder(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	uid := string(f.cr.GetUID())
	for i, want := range []string{"Reserve", "Charge", "Ship"} {
		rep := f.sync()
		if err := rep.Err(); err != nil {
			t.Fatal(err)
		}
		if len(f.steps.calls) != i+1 || f.steps.calls[i].Name != want || f.steps.calls[i].Attempt != 1 {
			t.Fatalf("calls = %+v; want call %d for step %s, attempt 1", f.steps.calls, i+1, want)
		}
		if key, wantKey := f.steps.calls[i].IdempotencyKey, uid+"/1/"+want+"/"+string(rune('1'+i)); key != wantKey {
			t.Errorf("idempotency key %q, want %q", key, wantKey)
		}
		if i < 2 && (rep.RequeueAfter <= 0 || rep.RequeueAfter > time.Second) {
			t.Errorf("after %s: RequeueAfter %v; the next step must run at once", want, rep.RequeueAfter)
		}
		if c := f.condition(reconciler.ConditionProgressing); i < 2 && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != reconciler.ReasonWorkflowRunning) {
			t.Errorf("after %s: Progressing = %+v; want True while steps are left", want, c)
		}
	}
	ws := f.status()
	if ws.Phase != reconciler.WorkflowSucceeded || ws.Runs != 3 || len(ws.Steps) != 3 || ws.CompletionTime == nil {
		t.Fatalf("status.workflow = %+v; want Succeeded after 3 runs", ws)
	}
	for i, run := range ws.Steps {
		if run.Phase != reconciler.WorkflowSucceeded || run.Attempts != 1 || run.Message != "did "+run.Name || run.Run != int64(i+1) {
			t.Errorf("steps[%d] = %+v", i, run)
		}
	}
	if c := f.condition(reconciler.ConditionComplete); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Complete = %+v; want True", c)
	}
	if c := f.condition(reconciler.ConditionProgressing); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Progressing = %+v; want False once the workflow ended", c)
	}
	if last, _, _ := unstructured.NestedString(f.get().Object, "status", "last"); last != "Ship" {
		t.Errorf("status.last = %q: the reconciler's own status is lost", last)
	}
	// Finished: the reconciler is not called again.
	f.sync()
	if len(f.steps.calls) != 3 {
		t.Errorf("a finished workflow called the reconciler: %+v", f.steps.calls)
	}
	if last, _, _ := unstructured.NestedString(f.get().Object, "status", "last"); last != "Ship" {
		t.Errorf("status.last = %q after the workflow finished: the reconciler's status must be kept", last)
	}
}

// TestWorkflowSameKeyAfterACrash loses the status write that would have
// recorded a step, as a runtime killed between the call and the write
// does: the step is asked again with the same key, and its side effect
// happens once.
func TestWorkflowSameKeyAfterACrash(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	f.sync()          // Reserve
	before := f.get() // the custom resource as the crashed runtime read it
	f.sync()          // Charge, whose status write is lost below
	f.restart()
	if _, err := f.rec.Sync(context.Background(), before); err != nil {
		t.Fatal(err)
	}
	if len(f.steps.calls) != 3 || f.steps.calls[1] != f.steps.calls[2] || f.steps.calls[1].Name != "Charge" {
		t.Fatalf("calls = %+v; want Charge asked twice with the same attempt and key", f.steps.calls)
	}
	if n := f.steps.effects[f.steps.calls[1].IdempotencyKey]; n != 2 {
		// The test reconciler counts calls per key; a real one does the
		// effect on the first and answers the rest from its record.
		t.Fatalf("effects = %v", f.steps.effects)
	}
	if len(f.steps.effects) != 2 {
		t.Errorf("two keys for one run: %v", f.steps.effects)
	}
}

// TestWorkflowBackoffLimit: a failed attempt is tried again after the
// step's backoff, as a Job's Pods are (10 s, 20 s, ...), not at the
// controller's millisecond pace, with the same key; a pass before it calls
// nothing and writes nothing. Past backoffLimit the workflow fails, and it
// is then neither Ready nor asked again, however often it is reconciled.
func TestWorkflowBackoffLimit(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	f.steps.answer = func(req *sdk.Request) (*sdk.Result, error) {
		if req.Step.Name == "Charge" {
			return nil, errors.New("card declined")
		}
		return &sdk.Result{}, nil
	}
	f.sync() // Reserve
	var keys []string
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 0} { // Charge: backoffLimit 2 allows 2 failures; the third fails the workflow
		if _, err := f.rec.Sync(context.Background(), f.get()); err == nil {
			t.Fatal("a failed call returned no error to retry with backoff")
		}
		keys = append(keys, f.steps.calls[len(f.steps.calls)-1].IdempotencyKey)
		if delay == 0 {
			break
		}
		calls, writes := len(f.steps.calls), len(f.store.Written(0))
		f.now = f.now.Add(delay - time.Second)
		rep := f.sync()
		if len(f.steps.calls) != calls || len(f.store.Written(0)) != writes {
			t.Fatalf("failure %d: a pass %v before the backoff ends called %d times and wrote %v", i+1, time.Second, len(f.steps.calls)-calls, f.store.Written(writes))
		}
		if rep.RequeueAfter != time.Second {
			t.Errorf("failure %d: a pass during the backoff asks to be called after %v, want 1s", i+1, rep.RequeueAfter)
		}
		if c := f.condition(reconciler.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("failure %d: during the backoff Ready = %+v; want False", i+1, c)
		}
		f.now = f.now.Add(time.Second)
	}
	if keys[0] != keys[1] || keys[1] != keys[2] {
		t.Errorf("retries of one run have different keys: %v", keys)
	}
	ws := f.status()
	cur := ws.Steps[len(ws.Steps)-1]
	if ws.Phase != reconciler.WorkflowFailed || cur.Name != "Charge" || cur.Attempts != 3 || cur.Failures != 3 || !strings.Contains(cur.Message, "card declined") {
		t.Fatalf("status.workflow = %+v", ws)
	}
	if c := f.condition(reconciler.ConditionFailed); c == nil || c.Reason != reconciler.ReasonBackoffLimitExceeded || !strings.Contains(c.Message, "card declined") {
		t.Errorf("Failed = %+v; want True, BackoffLimitExceeded, with the last failure", c)
	}
	ready, degraded := f.condition(reconciler.ConditionReady), f.condition(reconciler.ConditionDegraded)
	writes := len(f.store.Written(0))
	for range 2 {
		f.sync()
		if c := f.condition(reconciler.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != reconciler.ReasonWorkflowFailed {
			t.Errorf("a failed workflow reconciled again: Ready = %+v; want False, WorkflowFailed", c)
		}
		if c := f.condition(reconciler.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
			t.Errorf("a failed workflow reconciled again: Degraded = %+v; want False: nothing is retried, Failed tells of it", c)
		}
	}
	if got := f.store.Written(writes); len(got) != 0 {
		t.Errorf("a failed workflow reconciled again wrote %v (Ready was %+v, Degraded %+v)", got, ready, degraded)
	}
	if n := len(f.steps.calls); n != 4 {
		t.Errorf("a failed workflow called again: %d calls", n)
	}
	// Its end is an Event too, once: ttlSecondsAfterFinished may delete
	// the custom resource, and its Failed condition with it.
	events, _ := f.store.Events(f.bp.Resource.GroupVersionKind, client.ObjectKeyFromObject(f.cr), 0)
	var ended []any
	for _, e := range events {
		if e.(map[string]any)["reason"] == reconciler.ReasonBackoffLimitExceeded {
			ended = append(ended, e)
		}
	}
	if len(ended) != 1 || ended[0].(map[string]any)["type"] != "Warning" || ended[0].(map[string]any)["count"] != int64(1) ||
		!strings.Contains(ended[0].(map[string]any)["message"].(string), "the workflow failed: step Charge failed after 3 attempts: ") {
		t.Errorf("Events of the end: %v; want one Warning BackoffLimitExceeded naming the step", ended)
	}
}

// TestRetryDelay: a Job's backoff, 10 s doubled per failure up to six
// minutes; a step's own backoffSeconds first; zero for no delay.
func TestRetryDelay(t *testing.T) {
	own := int64(1)
	w := &ir.Workflow{BackoffSeconds: ir.DefaultWorkflowBackoffSeconds}
	for _, tc := range []struct {
		step     *ir.WorkflowStep
		failures int64
		want     time.Duration
	}{
		{nil, 0, 0},
		{nil, 1, 10 * time.Second},
		{nil, 2, 20 * time.Second},
		{nil, 6, 320 * time.Second},
		{nil, 7, 6 * time.Minute},
		{nil, 1000, 6 * time.Minute},
		{&ir.WorkflowStep{BackoffSeconds: &own}, 3, 4 * time.Second},
	} {
		if got := w.RetryDelay(tc.step, tc.failures); got != tc.want {
			t.Errorf("RetryDelay(%v, %d) = %v, want %v", tc.step, tc.failures, got, tc.want)
		}
	}
	if got := (&ir.Workflow{}).RetryDelay(nil, 3); got != 0 {
		t.Errorf("backoffSeconds 0: RetryDelay = %v, want 0", got)
	}
}

func TestWorkflowStepFailedAndRunning(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	f.steps.answer = func(req *sdk.Request) (*sdk.Result, error) {
		if req.Step.Attempt < 3 {
			return &sdk.Result{Step: &sdk.StepResult{Phase: sdk.StepRunning, Message: "waiting"}, RequeueAfter: sdk.Duration(time.Minute)}, nil
		}
		return &sdk.Result{Step: &sdk.StepResult{Phase: sdk.StepFailed, Message: "out of stock"}}, nil
	}
	for i := 1; i <= 2; i++ {
		rep := f.sync()
		if rep.RequeueAfter != time.Minute {
			t.Errorf("Running: RequeueAfter %v, want the Result's 1m", rep.RequeueAfter)
		}
		if ws := f.status(); ws.Phase != reconciler.WorkflowRunning || ws.Steps[0].Attempts != int64(i) || ws.Steps[0].Failures != 0 {
			t.Fatalf("status.workflow = %+v", ws)
		}
	}
	f.sync()
	ws := f.status()
	if ws.Phase != reconciler.WorkflowFailed || ws.Steps[0].Message != "out of stock" {
		t.Fatalf("status.workflow = %+v", ws)
	}
	if c := f.condition(reconciler.ConditionFailed); c == nil || c.Reason != reconciler.ReasonStepFailed {
		t.Errorf("Failed = %+v; want StepFailed", c)
	}
}

// TestWorkflowHistoryIsBounded loops over one step many times: the status
// keeps historyLimit runs and sums up the rest.
func TestWorkflowHistoryIsBounded(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	loops := 0
	f.steps.answer = func(req *sdk.Request) (*sdk.Result, error) {
		if req.Step.Name == "Charge" && loops < 40 {
			loops++
			return &sdk.Result{Step: &sdk.StepResult{Next: "Charge"}}, nil
		}
		return &sdk.Result{}, nil
	}
	for range 50 {
		f.sync()
	}
	ws := f.status()
	if ws.Phase != reconciler.WorkflowSucceeded || ws.Runs != 43 || len(ws.Steps) != 3 {
		t.Fatalf("status.workflow: phase %s, runs %d, %d steps kept; want Succeeded, 43, 3", ws.Phase, ws.Runs, len(ws.Steps))
	}
	if s := ws.Summary; s == nil || s.Runs != 40 || s.Succeeded != 40 || s.Attempts != 40 {
		t.Errorf("summary = %+v; want the 40 runs that left steps", ws.Summary)
	}
	if keys := len(f.steps.effects); keys != 43 {
		t.Errorf("%d distinct keys for 43 runs: a revisited step needs a key of its own", keys)
	}
}

func TestWorkflowRefusesAnUnknownNext(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	f.steps.answer = func(*sdk.Request) (*sdk.Result, error) {
		return &sdk.Result{Step: &sdk.StepResult{Next: "Refund"}}, nil
	}
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), `step.next "Refund" is not a step`) {
		t.Fatalf("error %v", err)
	}
	if ws := f.status(); ws.Phase != reconciler.WorkflowRunning || ws.Steps[0].Failures != 1 {
		t.Errorf("status.workflow = %+v; want a failed attempt of Reserve", ws)
	}
}

func TestWorkflowTTLAfterFinished(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	for range 3 {
		f.sync()
	}
	if ws := f.status(); ws.Phase != reconciler.WorkflowSucceeded {
		t.Fatalf("status.workflow = %+v", ws)
	}
	f.now = f.now.Add(20 * time.Second)
	f.restart() // the deadline is read from the status, not remembered
	rep := f.sync()
	if rep.RequeueAfter != 40*time.Second {
		t.Errorf("RequeueAfter %v 20s after the end; want the 40s left of ttlSecondsAfterFinished 60", rep.RequeueAfter)
	}
	if !f.get().GetDeletionTimestamp().IsZero() {
		t.Fatal("deleted before its TTL")
	}
	f.now = f.now.Add(40 * time.Second)
	f.sync()
	if f.get().GetDeletionTimestamp().IsZero() {
		t.Fatal("not deleted once ttlSecondsAfterFinished passed")
	}
	f.sync() // the finalizing request, answered done
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(f.bp.Resource.GroupVersionKind)
	if err := f.store.Get(context.Background(), clientKey(f.cr), live); err == nil {
		t.Errorf("the custom resource is still there: %v", live.GetFinalizers())
	}
}

func clientKey(u *unstructured.Unstructured) client.ObjectKey { return client.ObjectKeyFromObject(u) }

// TestWorkflowStepNoLongerDeclared changes the Blueprint under a running
// workflow: the step it is at is gone, and the runtime says so rather than
// guess what comes next.
func TestWorkflowStepNoLongerDeclared(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow.yaml")
	f.sync() // Reserve; Charge is next
	wf := *f.bp.Reconcile.Workflow
	wf.Steps = []*ir.WorkflowStep{wf.Steps[0], wf.Steps[2]}
	rec := *f.bp.Reconcile
	rec.Workflow = &wf
	bp := *f.bp
	bp.Reconcile = &rec
	f.bp = &bp
	f.restart()
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "step Charge, which reconcile.workflow no longer declares") {
		t.Fatalf("error %v", err)
	}
	if len(f.steps.calls) != 1 {
		t.Errorf("the reconciler was called for a step the Blueprint no longer has: %+v", f.steps.calls)
	}
	if ws := f.status(); ws.Phase != reconciler.WorkflowRunning || ws.Step != "Charge" {
		t.Errorf("status.workflow = %+v; want it kept as it was", ws)
	}
}

// TestWorkflowStatusNotTheRuntimes finds a status.workflow the runtime did
// not write: it is reported, and nothing is called.
func TestWorkflowStatusNotTheRuntimes(t *testing.T) {
	for name, st := range map[string]map[string]any{
		"no runs":       {"phase": "Succeeded"},
		"unknown phase": {"phase": "Done", "steps": []any{map[string]any{"name": "Reserve", "phase": "Succeeded"}}},
		"wrong type":    {"phase": "Running", "steps": "Reserve"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newWorkflowFixture(t, "testdata/workflow.yaml")
			f.sync() // the finalizer, and Reserve
			f.steps.calls = nil
			cr := f.get()
			_ = unstructured.SetNestedMap(cr.Object, st, "status", reconciler.WorkflowField)
			rep, _ := f.rec.Sync(context.Background(), cr)
			if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "status.workflow") {
				t.Errorf("error %v; want one about status.workflow", err)
			}
			if len(f.steps.calls) != 0 {
				t.Errorf("calls %+v; want none", f.steps.calls)
			}
		})
	}
}
