package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// StepConditions is what an Evaluation offers for the failedWhen of
// reconcile.workflow's steps. The interpreter's has it; an operator inrun
// build generates has it when its Blueprint has failedWhen.
type StepConditions interface {
	// FailedWhen evaluates x, one of a step's failedWhen.
	FailedWhen(x *ir.Expr) (bool, error)
}

// templateSteps reports whether bp's workflow is driven by its own
// resources: it has a workflow and no reconciler.
func templateSteps(bp *ir.Blueprint) bool {
	return bp.Reconcile != nil && bp.Reconcile.Workflow != nil && bp.Reconcile.Remote == nil
}

// stepHolds reports whether c, one of a workflow step's resources, is not
// written this pass: its step has not started yet, or has ended. A step's
// resources are created while it runs only; before, they wait for it, and
// after, they are kept as they are (read, never written again, never
// pruned), so that a finished Job is not run again. They go with the
// custom resource.
func (p *pass) stepHolds(ctx context.Context, c *ir.Child) bool {
	w := p.wf
	if w == nil {
		return false
	}
	i := w.wf.StepOf(c.ID)
	if i < 0 {
		return false
	}
	cur := -1
	if w.bad == nil {
		cur = w.wf.StepIndex(w.current().Name)
	}
	switch {
	case w.bad == nil && i == cur && !w.finished():
		return false // its step runs: written as any child
	case w.bad == nil && i > cur:
		p.keep[c.ID] = true
		if !w.finished() {
			p.rep.Pending[c.ID] = "waiting for workflow step " + w.wf.Steps[i].Name + " to start"
		}
		return true
	}
	p.keep[c.ID] = true
	if len(c.ForEach) > 0 {
		coll, ok := p.eval.(Collections)
		if !ok {
			p.childError(ctx, c, fmt.Errorf("%s: this operator's Renderer has no collections (forEach): generate it again with this version of inrun build", c.Pos))
			return true
		}
		p.items[c.ID] = p.observed[c.ID]
		if err := coll.SetLiveItems(c.ID, p.observed[c.ID]); err != nil {
			p.childError(ctx, c, err)
		}
		p.isReady[c.ID] = true // its step's readiness was checked while it ran
		return true
	}
	if live := p.live[c.ID]; live != nil {
		p.checkReady(ctx, c, live)
	}
	return true
}

// steps runs a workflow driven by templates, once the children are
// rendered: the current step fails when one of its failedWhen holds or
// its timeoutSeconds has passed, and succeeds once each of its resources
// exists and is ready (or includeWhen leaves it out); the next step then
// starts, and its resources are created on the next pass.
func (p *pass) steps(ctx context.Context) {
	w := p.wf
	defer p.workflowConditions()
	switch {
	case w.bad != nil:
		p.rep.Errors = append(p.rep.Errors, w.bad)
		return
	case w.finished():
		p.expire(ctx)
		return
	}
	defer p.unstarted()
	cur := w.current()
	st := w.wf.Step(cur.Name)
	// A step's one attempt is the creation of its resources: a failed
	// Job retries by its own backoffLimit, not the workflow's.
	cur.Attempts = 1
	if x := p.failedWhen(st); x != nil {
		cur.Message = fmt.Sprintf("failedWhen ${%s} is true", x.Source)
		w.end(WorkflowFailed, ReasonStepFailed)
		p.expire(ctx)
		return
	}
	w.waiting = nil
	for _, id := range st.Resources {
		if !p.isReady[id] && !p.excluded[id] {
			w.waiting = append(w.waiting, id)
		}
	}
	if len(w.waiting) == 0 {
		cur.Message = ""
		p.stepOutcome(ctx, w.succeed("", p.cr.GetGeneration()))
		return
	}
	p.deadline(ctx)
}

// unstarted drops what the resources of the steps after the current one
// wait for, once the workflow has failed this pass: they never start, as
// the next passes say.
func (p *pass) unstarted() {
	w := p.wf
	if !w.finished() {
		return
	}
	for _, st := range w.wf.Steps[w.wf.StepIndex(w.current().Name)+1:] {
		for _, id := range st.Resources {
			delete(p.rep.Pending, id)
		}
	}
}

// failedWhen returns the first of st's failedWhen that holds, or nil. One
// that reads a child not there yet does not hold; one that fails is
// reported in Degraded.
func (p *pass) failedWhen(st *ir.WorkflowStep) *ir.Expr {
	if len(st.FailedWhen) == 0 {
		return nil
	}
	ev, ok := p.eval.(StepConditions)
	if !ok {
		p.rep.Errors = append(p.rep.Errors, errors.New("this operator's Renderer has no failedWhen: generate it again with this version of inrun build"))
		return nil
	}
	for _, x := range st.FailedWhen {
		if p.waitsFor(x) != "" {
			continue
		}
		failed, err := ev.FailedWhen(x)
		switch {
		case err != nil && !expr.DataPending(err):
			p.rep.Errors = append(p.rep.Errors, fmt.Errorf("reconcile.workflow step %s: failedWhen: %w", st.Name, err))
		case err == nil && failed:
			return x
		}
	}
	return nil
}

// stepProgress says what the running step waits for, for Progressing.
func (w *workflowRun) stepProgress() string {
	cur := w.current()
	if len(w.waiting) > 0 {
		return fmt.Sprintf("the workflow is at step %s (run %d), waiting for %s to be ready", cur.Name, cur.Run, strings.Join(w.waiting, ", "))
	}
	return fmt.Sprintf("the workflow is at step %s (run %d, %d attempts so far)", cur.Name, cur.Run, cur.Attempts)
}
