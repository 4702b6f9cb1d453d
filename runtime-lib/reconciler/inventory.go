package reconciler

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/ir"
)

// The labels and annotations that make up the inventory: every child carries
// them, so that children in other namespaces and cluster-scoped children are
// found, pruned and cleaned up as surely as owned ones.
const (
	// LabelManagedBy is the well-known label, set to "inrun".
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelBlueprint names the Blueprint that produced the child.
	LabelBlueprint = ir.LabelBlueprint
	// LabelOwnerUID is the UID of the custom resource that owns the child.
	LabelOwnerUID = ir.LabelOwnerUID
	// LabelChild is the child's id in the Blueprint.
	LabelChild = ir.LabelChild
	// AnnotationOwner names the owner as group/Kind/namespace/name, for people.
	AnnotationOwner = ir.AnnotationOwner
	// LabelAppliedHash is a hash of what was last applied; a child whose
	// hash and fields match needs no write. It is a label, not an
	// annotation, because Deployments copy their annotations onto their
	// ReplicaSets: a changing annotation would cost a ReplicaSet update on
	// every edit.
	LabelAppliedHash = "inrun.dev/applied-hash"

	// Finalizer holds a custom resource until its children outside the reach
	// of garbage collection (other namespaces, cluster scope) are deleted.
	Finalizer = ir.Finalizer

	// ManagedBy is the value of LabelManagedBy and the default field owner.
	ManagedBy = "inrun"
)

// ownerRef renders the AnnotationOwner value of cr.
func ownerRef(cr *unstructured.Unstructured) string {
	gvk := cr.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + cr.GetNamespace() + "/" + cr.GetName()
}
