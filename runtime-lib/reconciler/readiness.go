package reconciler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

// defaultReady is the readiness rule of the built-in workload kinds; any
// other object is ready once it exists. It reads only the kind,
// metadata.generation, spec.replicas and status, all readinessView keeps.
func defaultReady(u *unstructured.Unstructured) bool {
	gk := u.GroupVersionKind().GroupKind()
	observed := func() bool {
		g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return g >= u.GetGeneration()
	}
	replicas := func() int64 {
		r, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if !found {
			return 1
		}
		return r
	}
	status := func(field string) int64 {
		v, _, _ := unstructured.NestedInt64(u.Object, "status", field)
		return v
	}
	switch {
	case gk.Group == "apps" && gk.Kind == "Deployment":
		want := replicas()
		return observed() && status("updatedReplicas") >= want && status("readyReplicas") >= want && status("availableReplicas") >= want
	case gk.Group == "apps" && gk.Kind == "StatefulSet":
		want := replicas()
		return observed() && status("readyReplicas") >= want && status("updatedReplicas") >= want
	case gk.Group == "apps" && gk.Kind == "DaemonSet":
		return observed() && status("numberReady") >= status("desiredNumberScheduled")
	case gk.Group == "batch" && gk.Kind == "Job":
		return hasCondition(u, "Complete")
	case gk.Group == "" && gk.Kind == "Pod":
		return hasCondition(u, "Ready")
	case gk.Group == "" && gk.Kind == "PersistentVolumeClaim":
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "Bound"
	}
	return true
}

func hasCondition(u *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}
