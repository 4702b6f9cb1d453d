package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/runtime-lib/controller"
)

// Counter is a Runtime that reports its Activity: writes, reconciles and
// backlog, as its metrics count them. With one, every step that leaves the
// custom resource in place ends with the idle check: once its expectations
// hold, the custom resource is woken (an annotation changes, nothing
// else) until a reconcile of it, with nothing else to do, writes nothing.
// A runtime that writes on every reconcile fails the step.
type Counter interface {
	Activity(ctx context.Context) (controller.Activity, error)
}

// IdleWakes is how many times the idle check wakes a custom resource
// before it concludes that every reconcile writes: what a step's
// expectations do not cover (a child's status the cluster still updates,
// say) may settle over the first few.
const IdleWakes = 8

// AnnotationWake is the annotation the idle check changes to wake the
// runtime for a custom resource.
const AnnotationWake = "e2e.inrun.dev/wake"

// Activity implements Counter from this process's controller metrics.
func (p *InProcess) Activity(context.Context) (controller.Activity, error) {
	return controller.ActivityInProcess()
}

// checkIdle wakes the case's custom resource until one reconcile of it,
// with the runtime otherwise idle, writes nothing, and returns a Failure
// when none does by the IdleWakes-th, or by deadline.
func (cr *caseRun) checkIdle(ctx context.Context, counter Counter, deadline time.Time) *Failure {
	fail := func(format string, args ...any) *Failure {
		return &Failure{What: "idle writes", Problems: []string{fmt.Sprintf(format, args...)}}
	}
	var wrote []int64
	for i := 0; i < IdleWakes; i++ {
		before, err := counter.Activity(ctx)
		if err != nil {
			return fail("reading the runtime's metrics: %v", err)
		}
		// Each wake a new value: setting the same one again changes nothing.
		cr.wakes++
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationWake: strconv.Itoa(cr.wakes)}}})
		if err := cr.run.c.Patch(ctx, cr.crRef(), client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fail("waking the CR: %v", err)
		}
		// The reconcile the wake causes has finished once one more has and
		// nothing is queued or running.
		var after controller.Activity
		for {
			if after, err = counter.Activity(ctx); err != nil {
				return fail("reading the runtime's metrics: %v", err)
			}
			if after.Reconciles > before.Reconciles && after.Backlog == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fail("the runtime did not reconcile the CR after an annotation changed (%d reconciles, %d queued or running)", after.Reconciles-before.Reconciles, after.Backlog)
			}
			select {
			case <-ctx.Done():
				return fail("interrupted")
			case <-time.After(cr.opts.PollInterval / 5):
			}
		}
		if after.Writes == before.Writes {
			return nil
		}
		wrote = append(wrote, after.Writes-before.Writes)
	}
	return fail("every one of %d reconciles of the converged CR wrote to the API server (%v writes each): a reconcile that finds everything as it should be must write nothing", IdleWakes, wrote)
}
