package reconciler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
// (workloadReady); any other object is ready once it exists.
func defaultReady(u *unstructured.Unstructured) bool {
	if rule, ok := workloadReady[u.GroupVersionKind().GroupKind()]; ok {
		return rule.ready(u)
	}
	return true
}

// readyOnceItExists reports whether kindReady calls every object of kind
// gvk ready, whatever it holds: a pass need not look at its status.
func (r *Reconciler) readyOnceItExists(gvk schema.GroupVersionKind) bool {
	if use := r.bp.Use(gvk); use != nil && use.ReadyCondition {
		return false
	}
	_, ok := workloadReady[gvk.GroupKind()]
	return !ok
}

// kindReadsStatus are the fields of status, at its top, that kindReady
// reads of an object of kind gvk: a typed object's status is converted
// for it only so far.
func (r *Reconciler) kindReadsStatus(gvk schema.GroupVersionKind) []string {
	if use := r.bp.Use(gvk); use != nil && use.ReadyCondition {
		return []string{"observedGeneration", "conditions"}
	}
	return workloadReady[gvk.GroupKind()].status
}

// workloadRule is the readiness rule of a built-in workload kind. It
// reads only the kind, metadata.generation, spec.replicas and the fields
// of status it names, all readinessView keeps.
type workloadRule struct {
	status []string
	ready  func(u *unstructured.Unstructured) bool
}

// workloadReady are the readiness rules of the built-in workload kinds.
var workloadReady = map[schema.GroupKind]workloadRule{
	{Group: "apps", Kind: "Deployment"}: {
		status: []string{"observedGeneration", "updatedReplicas", "readyReplicas", "availableReplicas"},
		ready: func(u *unstructured.Unstructured) bool {
			want := specReplicas(u)
			return observed(u) && statusInt(u, "updatedReplicas") >= want && statusInt(u, "readyReplicas") >= want && statusInt(u, "availableReplicas") >= want
		},
	},
	{Group: "apps", Kind: "StatefulSet"}: {
		status: []string{"observedGeneration", "readyReplicas", "updatedReplicas"},
		ready: func(u *unstructured.Unstructured) bool {
			want := specReplicas(u)
			return observed(u) && statusInt(u, "readyReplicas") >= want && statusInt(u, "updatedReplicas") >= want
		},
	},
	{Group: "apps", Kind: "DaemonSet"}: {
		status: []string{"observedGeneration", "numberReady", "desiredNumberScheduled"},
		ready: func(u *unstructured.Unstructured) bool {
			return observed(u) && statusInt(u, "numberReady") >= statusInt(u, "desiredNumberScheduled")
		},
	},
	{Group: "batch", Kind: "Job"}: {
		status: []string{"conditions"},
		ready:  func(u *unstructured.Unstructured) bool { return hasCondition(u, "Complete") },
	},
	{Group: "", Kind: "Pod"}: {
		status: []string{"conditions"},
		ready:  func(u *unstructured.Unstructured) bool { return hasCondition(u, "Ready") },
	},
	{Group: "", Kind: "PersistentVolumeClaim"}: {
		status: []string{"phase"},
		ready: func(u *unstructured.Unstructured) bool {
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			return phase == "Bound"
		},
	},
}

// observed reports whether u's controller has seen its current spec.
func observed(u *unstructured.Unstructured) bool {
	g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return g >= u.GetGeneration()
}

// specReplicas is u's spec.replicas, 1 when unset as the API server
// defaults it.
func specReplicas(u *unstructured.Unstructured) int64 {
	r, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return r
}

func statusInt(u *unstructured.Unstructured, field string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, "status", field)
	return v
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
