package reconciler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/ir"
)

// ready reports whether a live child counts as ready: its readyWhen
// expression when it has one, else the rule for its kind.
func (p *pass) ready(c *ir.Child, live *unstructured.Unstructured) (bool, error) {
	if ready, defined, err := p.eval.Ready(c); defined || err != nil {
		return ready, err
	}
	return p.kindReady(live), nil
}

// kindReady is the readiness rule of a live object's kind: a kind the
// Blueprint uses is ready by its Ready condition, when it has conditions
// (see ir.Use.ReadyCondition); a built-in workload by its status; anything
// else once it exists.
func (r *Reconciler) kindReady(u *unstructured.Unstructured) bool {
	if use := r.bp.Use(u.GroupVersionKind()); use != nil && use.ReadyCondition {
		// A used Blueprint's runtime always writes observedGeneration with
		// its conditions: without it, the spec has not been seen yet.
		return conditionReady(u, use.Blueprint != "")
	}
	return defaultReady(u)
}

// conditionReady reports whether u's status has the condition Ready=True,
// for its current generation: a spec just changed is not ready until its
// controller has seen it. The generation seen is status.observedGeneration
// (required when observed is set) and the condition's own
// observedGeneration, each where present. It reads only
// metadata.generation and status, all readinessView keeps.
func conditionReady(u *unstructured.Unstructured, observed bool) bool {
	gen := u.GetGeneration()
	seen, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if (found || observed) && seen < gen {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		if seen, found, _ := unstructured.NestedInt64(m, "observedGeneration"); found && seen < gen {
			return false
		}
		return m["status"] == "True"
	}
	return false
}

// defaultReady is the readiness rule of the built-in workload kinds
// (builtin.Readiness); any other object is ready once it exists.
func defaultReady(u *unstructured.Unstructured) bool {
	if rule, ok := builtin.Readiness(u.GroupVersionKind().GroupKind()); ok {
		return rule.Ready(u)
	}
	return true
}

// readyOnceItExists reports whether kindReady calls every object of kind
// gvk ready, whatever it holds: a pass need not look at its status.
func (r *Reconciler) readyOnceItExists(gvk schema.GroupVersionKind) bool {
	if use := r.bp.Use(gvk); use != nil && use.ReadyCondition {
		return false
	}
	_, ok := builtin.Readiness(gvk.GroupKind())
	return !ok
}

// kindReadsStatus are the fields of status, at its top, that kindReady
// reads of an object of kind gvk: a typed object's status is converted
// for it only so far.
func (r *Reconciler) kindReadsStatus(gvk schema.GroupVersionKind) []string {
	if use := r.bp.Use(gvk); use != nil && use.ReadyCondition {
		return []string{"observedGeneration", "conditions"}
	}
	rule, _ := builtin.Readiness(gvk.GroupKind())
	return rule.Status
}

// failedForGood says why c's live object, judged by its kind's rule (no
// readyWhen, no workflow step), will never be ready: a Job past its
// backoff limit; "" else.
func (p *pass) failedForGood(c *ir.Child, live *unstructured.Unstructured) string {
	if c.ReadyWhen != nil {
		return ""
	}
	if r := p.bp.Reconcile; r != nil && r.Workflow != nil && r.Workflow.StepOf(c.ID) >= 0 {
		return "" // its step's failedWhen says what failing is
	}
	rule, ok := builtin.Readiness(live.GroupVersionKind().GroupKind())
	if !ok || rule.Failed == nil {
		return ""
	}
	return rule.Failed(p.ruleView(live))
}
