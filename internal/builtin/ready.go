package builtin

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReadinessRule is when an object of a built-in workload kind counts as
// ready. It reads only the kind, metadata.generation, spec.replicas and
// the fields of status it names: what the runtime keeps of such objects
// to decide.
type ReadinessRule struct {
	Status []string
	Ready  func(u *unstructured.Unstructured) bool
	// Waits says what Ready waits for, after "waits": "until every
	// replica is available".
	Waits string
	// Failed, where set, says why an object that will never be ready
	// failed for good ("" while it may still be): a Job past its
	// backoff limit.
	Failed func(u *unstructured.Unstructured) string
}

// Readiness returns the readiness rule of a built-in kind, when it has
// one: Deployments, StatefulSets and DaemonSets when every replica is
// ready for the current generation, Jobs when complete, Pods when Ready,
// PersistentVolumeClaims when Bound. An object of any other kind is ready
// once it exists. The runtime applies the rules; the kro importer, whose
// resources are ready once they exist, reads which kinds have one.
func Readiness(gk schema.GroupKind) (ReadinessRule, bool) {
	rule, ok := workloadReady[gk]
	return rule, ok
}

var workloadReady = map[schema.GroupKind]ReadinessRule{
	{Group: "apps", Kind: "Deployment"}: {
		Waits:  "until every replica is available",
		Status: []string{"observedGeneration", "updatedReplicas", "readyReplicas", "availableReplicas"},
		Ready: func(u *unstructured.Unstructured) bool {
			want := specReplicas(u)
			return observed(u) && statusInt(u, "updatedReplicas") >= want && statusInt(u, "readyReplicas") >= want && statusInt(u, "availableReplicas") >= want
		},
	},
	{Group: "apps", Kind: "StatefulSet"}: {
		Waits:  "until every replica is ready",
		Status: []string{"observedGeneration", "readyReplicas", "updatedReplicas"},
		Ready: func(u *unstructured.Unstructured) bool {
			want := specReplicas(u)
			return observed(u) && statusInt(u, "readyReplicas") >= want && statusInt(u, "updatedReplicas") >= want
		},
	},
	{Group: "apps", Kind: "DaemonSet"}: {
		Waits:  "until every scheduled pod is ready",
		Status: []string{"observedGeneration", "numberReady", "desiredNumberScheduled"},
		Ready: func(u *unstructured.Unstructured) bool {
			return observed(u) && statusInt(u, "numberReady") >= statusInt(u, "desiredNumberScheduled")
		},
	},
	{Group: "batch", Kind: "Job"}: {
		Failed: func(u *unstructured.Unstructured) string { return conditionMessage(u, "Failed") },
		Waits:  "until the Job is complete",
		Status: []string{"conditions"},
		Ready:  func(u *unstructured.Unstructured) bool { return hasCondition(u, "Complete") },
	},
	{Group: "", Kind: "Pod"}: {
		Waits:  "until the Pod is Ready",
		Status: []string{"conditions"},
		Ready:  func(u *unstructured.Unstructured) bool { return hasCondition(u, "Ready") },
	},
	{Group: "", Kind: "PersistentVolumeClaim"}: {
		Waits:  "until the claim is Bound",
		Status: []string{"phase"},
		Ready: func(u *unstructured.Unstructured) bool {
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

// conditionMessage returns "reason: message" of u's condition of type
// condType when it is True, else "".
func conditionMessage(u *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != condType || m["status"] != "True" {
			continue
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		switch {
		case reason == "":
			return msg
		case msg == "":
			return reason
		}
		return reason + ": " + msg
	}
	return ""
}
