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
	return defaultReady(live), nil
}

// defaultReady is the readiness rule of the built-in workload kinds; any
// other object is ready once it exists.
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
