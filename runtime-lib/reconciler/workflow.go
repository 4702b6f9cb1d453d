package reconciler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/sdk"
)

// WorkflowField is the status field that holds a workflow's progress
// (reconcile.workflow): the runtime's, like conditions.
const WorkflowField = "workflow"

// The phases of a workflow: Running until it ends, Succeeded or Failed.
const (
	WorkflowRunning   = sdk.StepRunning
	WorkflowSucceeded = sdk.StepSucceeded
	WorkflowFailed    = sdk.StepFailed
)

// The conditions a finished workflow sets, as a Job's: Complete when it
// succeeded, Failed when it failed.
const (
	ConditionComplete = "Complete"
	ConditionFailed   = "Failed"
	// ReasonBackoffLimitExceeded: a step failed more often than its
	// backoffLimit allows. ReasonStepFailed: the reconciler answered that
	// a step failed for good. ReasonStepsSucceeded: every step ran.
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonStepFailed           = "StepFailed"
	ReasonStepsSucceeded       = "StepsSucceeded"
	// ReasonDeadlineExceeded: a step ran longer than its timeoutSeconds,
	// as a Job past its activeDeadlineSeconds.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonWorkflowRunning is Progressing's reason while the workflow
	// runs: there is more to do, though nothing waits.
	ReasonWorkflowRunning = "WorkflowRunning"
	// ReasonWorkflowFailed is Ready's and Progressing's reason once the
	// workflow has failed: nothing more runs.
	ReasonWorkflowFailed = "WorkflowFailed"
	// ReasonTTLExpired is the Event recorded when a finished custom
	// resource is deleted after ttlSecondsAfterFinished.
	ReasonTTLExpired = "TTLExpired"
)

// workflowRequeue is how soon a step the reconciler answered Running is
// asked again when its Result names no time, and workflowNext how soon
// the next step runs after one succeeded: the status write that records
// the step is no event the runtime reconciles on.
const (
	workflowRequeue = 5 * time.Second
	workflowNext    = time.Millisecond
)

// WorkflowStatus is .status.workflow: where a workflow is, and the runs
// of its steps, bounded by historyLimit however many steps run.
type WorkflowStatus struct {
	// Phase is Running, Succeeded or Failed.
	Phase string `json:"phase"`
	// Step is the step running, or the last one that ran.
	Step string `json:"step,omitempty"`
	// Runs counts the step runs started since the workflow began.
	Runs int64 `json:"runs"`
	// StartTime is when the workflow began; CompletionTime when it
	// ended, which ttlSecondsAfterFinished counts from.
	StartTime      *metav1.Time `json:"startTime,omitempty"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Steps are the last historyLimit step runs, oldest first; the last
	// is the one running while the workflow runs.
	Steps []StepRun `json:"steps"`
	// Summary sums up the step runs no longer in Steps.
	Summary *WorkflowSummary `json:"summary,omitempty"`
}

// StepRun is one run of a step.
type StepRun struct {
	Name string `json:"name"`
	// Run is the run's number in the workflow, from 1: the last part of
	// its idempotency key.
	Run int64 `json:"run"`
	// Generation is the custom resource's when the run started.
	Generation int64 `json:"generation"`
	// Phase is Running, Succeeded or Failed.
	Phase string `json:"phase"`
	// Attempts counts the calls answered or failed; Failures the failed.
	Attempts int64 `json:"attempts"`
	Failures int64 `json:"failures,omitempty"`
	// LastFailureTime is when the last failed attempt was recorded: the
	// next is made backoffSeconds (doubled per failure) after it.
	LastFailureTime *metav1.Time `json:"lastFailureTime,omitempty"`
	// Message is the reconciler's (sdk.StepResult.Message), or the last
	// failure's.
	Message string `json:"message,omitempty"`
	// Reason says why a Failed run failed: StepFailed,
	// BackoffLimitExceeded or DeadlineExceeded.
	Reason         string       `json:"reason,omitempty"`
	StartTime      metav1.Time  `json:"startTime"`
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// WorkflowSummary sums up the step runs that left WorkflowStatus.Steps.
type WorkflowSummary struct {
	Runs      int64 `json:"runs"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Attempts  int64 `json:"attempts"`
	Failures  int64 `json:"failures"`
}

// IdempotencyKey is the key of a step run: <uid>/<generation>/<step>/<run>.
func IdempotencyKey(uid string, run StepRun) string {
	return fmt.Sprintf("%s/%d/%s/%d", uid, run.Generation, run.Name, run.Run)
}

// workflowRun is the workflow's state during one pass.
type workflowRun struct {
	wf  *ir.Workflow
	st  WorkflowStatus
	now metav1.Time
	// bad is set when .status.workflow cannot be read or does not fit
	// the Blueprint: the pass then calls nothing and writes nothing there.
	bad error
	// waiting names the resources the current step waits for, in a
	// workflow driven by templates.
	waiting []string
	// idle is set when the pass called nothing because the workflow
	// waits out a failed attempt's backoff: its conditions say what the
	// last call did.
	idle bool
	// endedNow is set when this pass ended the workflow: its end is
	// recorded as an Event once, not on every pass after.
	endedNow bool
	// endedBy is the failure that ended the workflow in this pass: the
	// Failed condition tells of it, not Degraded, since nothing retries it.
	endedBy error
}

// beginWorkflow reads the workflow's progress from the custom resource,
// starting it when it has none.
func (p *pass) beginWorkflow() {
	wf := p.bp.Reconcile.Workflow
	w := &workflowRun{wf: wf, now: metav1.NewTime(p.opts.Clock().UTC().Truncate(time.Second))}
	p.wf = w
	raw, found, _ := unstructured.NestedMap(p.cr.Object, "status", WorkflowField)
	if found {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &w.st); err != nil {
			w.bad = fmt.Errorf("status.%s cannot be read (%v): it is the runtime's; remove it to start the workflow again", WorkflowField, err)
			return
		}
	}
	if w.st.Phase == "" {
		w.st = WorkflowStatus{Phase: WorkflowRunning, StartTime: &w.now}
		w.start(wf.Steps[0].Name, p.cr.GetGeneration())
	}
	switch {
	case w.st.Phase != WorkflowRunning && w.st.Phase != WorkflowSucceeded && w.st.Phase != WorkflowFailed, len(w.st.Steps) == 0:
		w.bad = fmt.Errorf("status.%s has phase %q and %d step runs: it is the runtime's; remove it to start the workflow again", WorkflowField, w.st.Phase, len(w.st.Steps))
	case w.st.Phase == WorkflowRunning && w.current().Phase != WorkflowRunning:
		w.bad = fmt.Errorf("status.%s says the workflow runs, but no step does: it is the runtime's; remove it to start the workflow again", WorkflowField)
	case w.st.Phase == WorkflowRunning && wf.Step(w.current().Name) == nil:
		// The Blueprint changed under a running workflow: running on
		// would guess what comes after a step it no longer has.
		w.bad = fmt.Errorf("the workflow is at step %s, which reconcile.workflow no longer declares: declare it again to go on, or delete the %s", w.current().Name, p.bp.Resource.Kind)
	}
}

// finished reports whether the workflow has ended.
func (w *workflowRun) finished() bool { return w.st.Phase != WorkflowRunning }

func (w *workflowRun) current() *StepRun { return &w.st.Steps[len(w.st.Steps)-1] }

// start begins a run of the named step, summing up the runs that no
// longer fit.
func (w *workflowRun) start(name string, generation int64) {
	w.st.Runs++
	w.st.Step = name
	w.st.Steps = append(w.st.Steps, StepRun{Name: name, Run: w.st.Runs, Generation: generation, Phase: WorkflowRunning, StartTime: w.now})
	for int64(len(w.st.Steps)) > w.wf.HistoryLimit {
		old := w.st.Steps[0]
		if w.st.Summary == nil {
			w.st.Summary = &WorkflowSummary{}
		}
		s := w.st.Summary
		s.Runs++
		s.Attempts += old.Attempts
		s.Failures += old.Failures
		switch old.Phase {
		case WorkflowSucceeded:
			s.Succeeded++
		case WorkflowFailed:
			s.Failed++
		}
		w.st.Steps = append(w.st.Steps[:0:0], w.st.Steps[1:]...)
	}
}

// step is the request's step: the current run, one attempt further.
func (w *workflowRun) step(uid string) *sdk.Step {
	cur := w.current()
	return &sdk.Step{Name: cur.Name, Attempt: cur.Attempts + 1, IdempotencyKey: IdempotencyKey(uid, *cur)}
}

// end finishes the current run and the workflow with phase; reason says
// why a Failed one failed.
func (w *workflowRun) end(phase, reason string) {
	cur := w.current()
	cur.Phase, cur.CompletionTime, cur.Reason = phase, &w.now, reason
	w.st.Phase, w.st.CompletionTime = phase, &w.now
	w.endedNow = true
}

// overdue reports whether the current run has outlived its step's
// timeoutSeconds, and otherwise how long it has left (0 without one).
func (w *workflowRun) overdue(now time.Time) (bool, time.Duration) {
	cur := w.current()
	st := w.wf.Step(cur.Name)
	if st == nil || st.TimeoutSeconds == nil {
		return false, 0
	}
	left := cur.StartTime.Add(time.Duration(*st.TimeoutSeconds) * time.Second).Sub(now)
	return left <= 0, left
}

// deadline fails the workflow when its current step has run past its
// timeoutSeconds, and otherwise asks to be called when it would. It
// reports whether the workflow failed.
func (p *pass) deadline(ctx context.Context) bool {
	w := p.wf
	over, left := w.overdue(p.opts.Clock())
	if over {
		cur := w.current()
		cur.Message = fmt.Sprintf("step %s did not succeed within its timeoutSeconds (%d)", cur.Name, *w.wf.Step(cur.Name).TimeoutSeconds)
		w.end(WorkflowFailed, ReasonDeadlineExceeded)
		p.rep.RequeueAfter = 0
		p.expire(ctx)
		return true
	}
	if left > 0 && (p.rep.RequeueAfter == 0 || left < p.rep.RequeueAfter) {
		p.rep.RequeueAfter = left
	}
	return false
}

// retryWait reports whether the current step's last attempt failed less
// than its backoff ago, and if so asks to be called when it has passed.
func (p *pass) retryWait() bool {
	cur := p.wf.current()
	if p.opts.SkipStepBackoff || cur.Failures == 0 || cur.LastFailureTime == nil {
		return false
	}
	left := cur.LastFailureTime.Add(p.wf.wf.RetryDelay(p.wf.wf.Step(cur.Name), cur.Failures)).Sub(p.opts.Clock())
	if left <= 0 {
		return false
	}
	if p.rep.RequeueAfter == 0 || left < p.rep.RequeueAfter {
		p.rep.RequeueAfter = left
	}
	p.wf.idle = true
	return true
}

// failedAttempt records a call that failed, or a Result refused; past the
// step's backoffLimit the workflow fails.
func (w *workflowRun) failedAttempt(err error) {
	cur := w.current()
	cur.Attempts++
	cur.Failures++
	cur.LastFailureTime = &w.now
	cur.Message = truncate(err.Error(), 1024)
	if cur.Failures > w.wf.StepBackoffLimit(w.wf.Step(cur.Name)) {
		w.end(WorkflowFailed, ReasonBackoffLimitExceeded)
	}
}

// answered records the reconciler's answer for the current run, and
// returns how soon to reconcile again: the next step, or the same step
// that still runs.
func (w *workflowRun) answered(res *sdk.Result, generation int64) time.Duration {
	cur := w.current()
	cur.Attempts++
	step := res.Step
	if step == nil {
		step = &sdk.StepResult{}
	}
	cur.Message = step.Message // this answer's, not an earlier failure's
	switch step.Phase {
	case sdk.StepRunning:
		if d := time.Duration(res.RequeueAfter); d > 0 {
			return d
		}
		return workflowRequeue
	case sdk.StepFailed:
		w.end(WorkflowFailed, ReasonStepFailed)
		return 0
	}
	return w.succeed(step.Next, generation)
}

// succeed records the current run Succeeded and starts next, or the step
// after it when next is empty; after the last step the workflow has
// Succeeded. It returns how soon to reconcile again.
func (w *workflowRun) succeed(next string, generation int64) time.Duration {
	cur := w.current()
	cur.Phase, cur.CompletionTime = WorkflowSucceeded, &w.now
	if next == "" {
		for i, s := range w.wf.Steps {
			if s.Name == cur.Name && i+1 < len(w.wf.Steps) {
				next = w.wf.Steps[i+1].Name
			}
		}
	}
	if next == "" {
		w.st.Phase, w.st.CompletionTime = WorkflowSucceeded, &w.now
		return 0
	}
	w.start(next, generation)
	return workflowNext
}

// workflowFailure records a failed call, or a refused Result, as a failed
// attempt of the current step.
func (p *pass) workflowFailure(ctx context.Context, err error) {
	if p.wf == nil || ctx.Err() != nil {
		return // the runtime is stopping: not the step's failure
	}
	p.wf.failedAttempt(err)
	if p.wf.finished() {
		p.wf.endedBy = err
		p.expire(ctx)
	}
}

// workflowAnswered records the Result of the current step.
func (p *pass) workflowAnswered(ctx context.Context, res *sdk.Result) {
	p.stepOutcome(ctx, p.wf.answered(res, p.cr.GetGeneration()))
}

// stepOutcome asks to be called again d from now, when the current step
// runs on or the next one starts, or sees to the end of the workflow.
func (p *pass) stepOutcome(ctx context.Context, d time.Duration) {
	if p.wf.finished() {
		// Not asked again: the requeue the reconciler named was for the
		// step, which has ended.
		p.rep.RequeueAfter = 0
		p.expire(ctx)
		return
	}
	if p.wf.current().Attempts == 0 || p.rep.RequeueAfter == 0 || d < p.rep.RequeueAfter {
		// A new step runs at once, whatever the last one asked.
		p.rep.RequeueAfter = d
	}
}

// status is .status.workflow as written.
func (w *workflowRun) status() map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&w.st)
	if err != nil {
		panic(fmt.Sprintf("reconciler: converting the workflow's status: %v", err)) // plain types: cannot fail
	}
	return m
}

// failedMessage is Ready's and Progressing's message on a failed workflow.
func (w *workflowRun) failedMessage() string {
	return fmt.Sprintf("the workflow failed at step %s; nothing more runs: see the Failed condition", w.current().Name)
}

// conditions sets Complete or Failed once the workflow has ended.
func (p *pass) workflowConditions() {
	w := p.wf
	if w == nil || w.bad != nil || !w.finished() {
		return
	}
	cur := w.current()
	switch w.st.Phase {
	case WorkflowSucceeded:
		runs := fmt.Sprintf("%d step runs", w.st.Runs)
		if w.st.Runs == 1 {
			runs = "1 step run"
		}
		msg := "the workflow succeeded after " + runs + ", the last " + cur.Name
		p.custom = append(p.custom, metav1.Condition{Type: ConditionComplete, Status: metav1.ConditionTrue, Reason: ReasonStepsSucceeded, Message: msg})
		if w.endedNow {
			p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeNormal, ReasonStepsSucceeded, "Reconcile", "%s", msg)
		}
	case WorkflowFailed:
		reason := cur.Reason
		switch {
		case reason != "":
		case cur.Failures > w.wf.StepBackoffLimit(w.wf.Step(cur.Name)):
			reason = ReasonBackoffLimitExceeded // recorded before reasons were
		default:
			reason = ReasonStepFailed
		}
		msg := fmt.Sprintf("step %s failed after %d attempts", cur.Name, cur.Attempts)
		if cur.Message != "" {
			msg += ": " + cur.Message
		}
		p.custom = append(p.custom, metav1.Condition{Type: ConditionFailed, Status: metav1.ConditionTrue, Reason: reason, Message: truncate(msg, maxMessage)})
		if w.endedNow {
			// The CR, its conditions with it, may go at ttlSecondsAfterFinished:
			// the Event outlives it, for an hour.
			p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeWarning, reason, "Reconcile", "the workflow failed: %s", truncate(msg, maxEventNote-len("the workflow failed: ")))
		}
	}
}

// expire deletes a custom resource whose workflow finished
// ttlSecondsAfterFinished ago, and otherwise asks to be called then. The
// time is read from the status, so a restart of the runtime changes
// nothing.
func (p *pass) expire(ctx context.Context) {
	w := p.wf
	ttl := w.wf.TTLSecondsAfterFinished
	if ttl == nil || w.st.CompletionTime == nil {
		return
	}
	deadline := w.st.CompletionTime.Add(time.Duration(*ttl) * time.Second)
	if left := deadline.Sub(p.opts.Clock()); left > 0 {
		if p.rep.RequeueAfter == 0 || left < p.rep.RequeueAfter {
			p.rep.RequeueAfter = left
		}
		return
	}
	uid := p.cr.GetUID()
	err := p.opts.Client.Delete(ctx, p.cr, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		err = fmt.Errorf("deleting the finished %s after ttlSecondsAfterFinished: %w", p.bp.Resource.Kind, err)
		p.rep.Errors = append(p.rep.Errors, err)
		if p.transient == nil {
			p.transient = err
		}
		return
	}
	p.rep.Writes++
	p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeNormal, ReasonTTLExpired, "Delete",
		"Deleted: the workflow %s %ds ago (ttlSecondsAfterFinished)", w.st.Phase, *ttl)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
