package ir

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Migrate is a Blueprint's migrate section: a kind move. The custom
// resources of the Blueprint's kind that Selection picks move to the kind
// To names (another group, version or kind, or another scope): inrun
// migrate creates each one anew as that kind, re-parents its children and
// deletes the old one. A field move is not here: it is a served field's
// migrate section (ServeField.Migrate).
type Migrate struct {
	Pos Pos
	// To is the kind the custom resources move to.
	To MigrateTarget
	// Selection picks the custom resources that move.
	Selection *Selection
	// AcceptLoss acknowledges that a move may drop values: fields a custom
	// resource holds that To's schema does not have (the API server prunes
	// them). Without it inrun migrate apply refuses to start while its plan
	// finds such a resource.
	AcceptLoss bool `json:",omitempty"`
}

// MigrateTarget is the kind a kind move goes to. It is a kind the Blueprint
// uses (uses:), so that its schema is known.
type MigrateTarget struct {
	Pos Pos
	schema.GroupVersionKind
	// Plural is the kind's resource name; Namespaced false for a
	// cluster-scoped kind.
	Plural     string
	Namespaced bool
	// Namespace, when set, is the namespace every moved custom resource
	// goes to: required when a cluster-scoped kind moves to a namespaced
	// one. Empty keeps each one's namespace.
	Namespace string `json:",omitempty"`
	// Blueprint names the Blueprint that reconciles the kind; the children
	// moved to it carry its name. Empty when the kind is a CRD only: its
	// children keep theirs.
	Blueprint string `json:",omitempty"`
	// Schema is the OpenAPI schema of the version; nil when unknown.
	Schema *apiextensionsv1.JSONSchemaProps `json:",omitempty"`
}

// Selection says which custom resources a kind move picks: those whose
// labels match the label selector and for which IncludeWhen holds. The
// zero Selection picks every one.
type Selection struct {
	Pos Pos
	// MatchLabels and MatchExpressions are a Kubernetes label selector.
	MatchLabels      map[string]string                 `json:",omitempty"`
	MatchExpressions []metav1.LabelSelectorRequirement `json:",omitempty"`
	// IncludeWhen, when set, is a boolean expression over self, the
	// custom resource.
	IncludeWhen *Expr `json:",omitempty"`
}

// LabelSelector returns the selection's label selector.
func (s *Selection) LabelSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: s.MatchLabels, MatchExpressions: s.MatchExpressions}
}

// MigrateExprs returns the expressions of the migrate section, which see
// self alone.
func (b *Blueprint) MigrateExprs() []*Expr {
	if b.Migrate == nil || b.Migrate.Selection == nil || b.Migrate.Selection.IncludeWhen == nil {
		return nil
	}
	return []*Expr{b.Migrate.Selection.IncludeWhen}
}

// The inventory every child of a custom resource carries: the runtime
// finds, prunes and cleans up children by it, and a kind move rewrites it
// when it re-parents them.
const (
	// LabelBlueprint names the Blueprint that produced the child.
	LabelBlueprint = "inrun.dev/blueprint"
	// LabelOwnerUID is the UID of the custom resource that owns the child.
	LabelOwnerUID = "inrun.dev/owner-uid"
	// LabelChild is the child's id in the Blueprint.
	LabelChild = "inrun.dev/child"
	// AnnotationOwner names the owner as group/Kind/namespace/name, for
	// people.
	AnnotationOwner = "inrun.dev/owner"
	// AnnotationMovedFrom is on a custom resource a kind move created: the
	// UID of the one it was moved from. The gateway follows it (a served
	// intent whose custom resource moved is answered from where it went).
	AnnotationMovedFrom = "migrate.inrun.dev/from-uid"
	// Finalizer holds a custom resource until its children outside the
	// reach of garbage collection (other namespaces, cluster scope) are
	// deleted.
	Finalizer = "inrun.dev/cleanup"
)

// ResourceKinds returns the kinds of the objects the runtime writes for a
// custom resource: its children's (externalRefs are read only) and its
// remote reconciler's, each once, in Blueprint order.
func (b *Blueprint) ResourceKinds() []ResourceKind {
	var out []ResourceKind
	seen := map[schema.GroupVersionKind]bool{}
	add := func(k ResourceKind) {
		if !seen[k.GroupVersionKind] {
			seen[k.GroupVersionKind] = true
			out = append(out, k)
		}
	}
	for _, c := range b.Children {
		if !c.External {
			add(ResourceKind{Pos: c.Pos, GroupVersionKind: c.GroupVersionKind, Plural: c.Plural, Namespaced: c.Namespaced})
		}
	}
	if b.Reconcile != nil && b.Reconcile.Remote != nil {
		for _, k := range b.Reconcile.Remote.Resources {
			add(k)
		}
	}
	return out
}
