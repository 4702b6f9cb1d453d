package reconciler_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/sdk"
	"github.com/inrun/inrun/simulate"
)

// newTemplateWorkflow runs testdata/workflow-templates.yaml, a workflow
// without a reconciler, on a custom resource "rel".
func newTemplateWorkflow(t *testing.T) *workflowFixture {
	return newTemplateWorkflowOf(t, "testdata/workflow-templates.yaml", "rel", map[string]any{"image": "app:2"})
}

// newTemplateWorkflowOf runs the workflow without a reconciler in file on
// a Website name with spec, at a clock the test moves.
func newTemplateWorkflowOf(t *testing.T, file, name string, spec map[string]any) *workflowFixture {
	t.Helper()
	bp, err := compiler.CompileFile(file, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &workflowFixture{fixture: &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store, Clock: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.cr = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"spec":     spec,
	}}
	if err := f.store.CreateCR(context.Background(), f.cr); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *workflowFixture) mustSync() *reconciler.Report {
	f.t.Helper()
	rep := f.sync()
	if err := rep.Err(); err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func TestTemplateWorkflowCreatesEachStepsResourcesInTurn(t *testing.T) {
	f := newTemplateWorkflow(t)
	rep := f.mustSync()
	if f.object(jobGVK, "shop", "rel-migrate") == nil || f.object(configMapGVK, "shop", "rel-settings") == nil {
		t.Fatalf("pass 1 created %v; want the Migrate step's Job and the ConfigMap no step names", rep.Created)
	}
	if f.object(deploymentGVK, "shop", "rel") != nil || f.object(serviceGVK, "shop", "rel") != nil {
		t.Fatal("the Deploy step's resources were created before their step started")
	}
	if rep.Pending["app"] == "" {
		t.Errorf("Pending = %v; want app waiting for its step", rep.Pending)
	}
	ws := f.status()
	if ws.Phase != reconciler.WorkflowRunning || ws.Step != "Migrate" || len(ws.Steps) != 1 || ws.Steps[0].Attempts != 1 {
		t.Fatalf("status.workflow = %+v; want Running at Migrate", ws)
	}
	if c := f.condition(reconciler.ConditionProgressing); c == nil || c.Reason != reconciler.ReasonWorkflowRunning || c.Message != "the workflow is at step Migrate (run 1), waiting for migrate to be ready" {
		t.Errorf("Progressing = %+v", c)
	}
	if rep.RequeueAfter <= 0 || rep.RequeueAfter > 600*time.Second {
		t.Errorf("RequeueAfter = %v; want the step's deadline", rep.RequeueAfter)
	}

	// Not complete yet: the step waits, whatever the passes.
	f.mustSync()
	if f.object(deploymentGVK, "shop", "rel") != nil {
		t.Fatal("Deploy started before the migration Job completed")
	}
	f.setStatus(jobGVK, "rel-migrate", map[string]any{"succeeded": int64(1), "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}})
	f.mustSync() // Migrate succeeds, Deploy starts
	if ws := f.status(); ws.Step != "Deploy" || ws.Steps[0].Phase != reconciler.WorkflowSucceeded {
		t.Fatalf("status.workflow = %+v; want Migrate Succeeded and Deploy running", ws)
	}
	f.mustSync() // Deploy's Deployment; the Service reads it, and waits for it to be ready
	if f.object(deploymentGVK, "shop", "rel") == nil {
		t.Fatal("the Deploy step created nothing")
	}
	// The Job is kept, not written again: deleting it does not run it again.
	job := f.object(jobGVK, "shop", "rel-migrate")
	if err := f.store.Delete(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	f.setStatus(deploymentGVK, "rel", map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)})
	f.mustSync()
	if f.object(serviceGVK, "shop", "rel") == nil {
		t.Fatal("the Service was not created once the Deployment was ready")
	}
	if f.object(jobGVK, "shop", "rel-migrate") != nil {
		t.Error("the Job of a finished step was created again")
	}
	ws = f.status()
	if ws.Phase != reconciler.WorkflowSucceeded || ws.Runs != 2 || ws.CompletionTime == nil {
		t.Fatalf("status.workflow = %+v; want Succeeded after 2 runs", ws)
	}
	if c := f.condition(reconciler.ConditionComplete); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reconciler.ReasonStepsSucceeded {
		t.Errorf("Complete = %+v", c)
	}
	// Finished: the step resources stay, and the TTL deletes the custom
	// resource.
	f.now = f.now.Add(301 * time.Second)
	f.mustSync()
	if f.object(deploymentGVK, "shop", "rel") == nil {
		t.Error("a finished workflow's resources were pruned")
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(f.bp.Resource.GroupVersionKind)
	if err := f.store.Get(context.Background(), client.ObjectKeyFromObject(f.cr), live); err == nil && live.GetDeletionTimestamp() == nil {
		t.Error("the custom resource outlived ttlSecondsAfterFinished")
	}
}

func TestTemplateWorkflowFailedWhen(t *testing.T) {
	f := newTemplateWorkflow(t)
	f.mustSync()
	f.setStatus(jobGVK, "rel-migrate", map[string]any{"failed": int64(1)})
	f.mustSync()
	ws := f.status()
	if ws.Phase != reconciler.WorkflowFailed || ws.Steps[0].Reason != reconciler.ReasonStepFailed || ws.Steps[0].Message != "failedWhen ${migrate.status.?failed.orValue(0) > 0} is true" {
		t.Fatalf("status.workflow = %+v; want Failed at Migrate by failedWhen", ws)
	}
	if c := f.condition(reconciler.ConditionFailed); c == nil || c.Reason != reconciler.ReasonStepFailed {
		t.Errorf("Failed = %+v", c)
	}
	rep := f.mustSync()
	if f.object(deploymentGVK, "shop", "rel") != nil || len(rep.Pending) != 0 {
		t.Errorf("a failed workflow went on: Deploy created, or pending %v", rep.Pending)
	}
}

func TestTemplateWorkflowTimeout(t *testing.T) {
	f := newTemplateWorkflow(t)
	f.mustSync()
	f.now = f.now.Add(599 * time.Second)
	if f.mustSync(); f.status().Phase != reconciler.WorkflowRunning {
		t.Fatal("the step failed before its timeoutSeconds")
	}
	f.now = f.now.Add(time.Second)
	f.mustSync()
	ws := f.status()
	if ws.Phase != reconciler.WorkflowFailed || ws.Steps[0].Reason != reconciler.ReasonDeadlineExceeded {
		t.Fatalf("status.workflow = %+v; want Failed, DeadlineExceeded", ws)
	}
	if c := f.condition(reconciler.ConditionFailed); c == nil || c.Reason != reconciler.ReasonDeadlineExceeded {
		t.Errorf("Failed = %+v", c)
	}
}

// TestWorkflowTimeoutWithAReconciler: a step the reconciler keeps
// answering Running fails once its timeoutSeconds has passed, and the
// reconciler is not called for it again.
func TestWorkflowTimeoutWithAReconciler(t *testing.T) {
	f := newWorkflowFixture(t, "testdata/workflow-timeout.yaml")
	f.steps.answer = func(req *sdk.Request) (*sdk.Result, error) {
		return &sdk.Result{Step: &sdk.StepResult{Phase: sdk.StepRunning}, RequeueAfter: sdk.Duration(time.Hour)}, nil
	}
	if rep := f.mustSync(); rep.RequeueAfter != 120*time.Second {
		t.Errorf("RequeueAfter = %v; want the step's deadline, sooner than the reconciler's hour", rep.RequeueAfter)
	}
	f.now = f.now.Add(120 * time.Second)
	f.mustSync()
	if len(f.steps.calls) != 1 {
		t.Errorf("calls = %+v; a step past its deadline must not be called", f.steps.calls)
	}
	if ws := f.status(); ws.Phase != reconciler.WorkflowFailed || ws.Steps[0].Reason != reconciler.ReasonDeadlineExceeded || ws.Steps[0].Attempts != 1 {
		t.Fatalf("status.workflow = %+v; want Failed, DeadlineExceeded, after one attempt", ws)
	}
	if c := f.condition(reconciler.ConditionFailed); c == nil || c.Reason != reconciler.ReasonDeadlineExceeded {
		t.Errorf("Failed = %+v", c)
	}
}

// TestTemplateWorkflowCollection: a step's collection is created while its
// step runs, read by the next step's resource, and kept as it is once its
// step has ended.
func TestTemplateWorkflowCollection(t *testing.T) {
	f := newTemplateWorkflowOf(t, "testdata/workflow-collection.yaml", "s", map[string]any{})
	f.mustSync() // Shards: both items, ready once they exist; Index starts
	if f.object(configMapGVK, "shop", "s-a") == nil || f.object(configMapGVK, "shop", "s-b") == nil {
		t.Fatal("the Shards step did not create its collection")
	}
	if f.object(configMapGVK, "shop", "s-index") != nil {
		t.Fatal("Index created before its step started")
	}
	f.mustSync() // Index
	idx := f.object(configMapGVK, "shop", "s-index")
	if idx == nil {
		t.Fatal("the Index step created nothing")
	}
	if n, _, _ := unstructured.NestedString(idx.Object, "data", "shards"); n != "2" {
		t.Errorf("index data.shards = %q; want 2, read from the ended step's collection", n)
	}
	if ws := f.status(); ws.Phase != reconciler.WorkflowSucceeded {
		t.Fatalf("status.workflow = %+v; want Succeeded", ws)
	}
	rep := f.mustSync()
	if rep.Writes != 0 || len(rep.Pruned) != 0 || f.object(configMapGVK, "shop", "s-a") == nil {
		t.Errorf("a finished workflow wrote %d times, pruned %v", rep.Writes, rep.Pruned)
	}
}
