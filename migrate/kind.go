package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// A kind move creates each selected custom resource anew as the target
// kind, re-parents its children to it, and deletes the old one. These
// annotations make every step idempotent, so that an apply or a rollback
// killed at any point finishes when run again:
//
//	old custom resource   migrate.inrun.dev/id: <ID>         its snapshot is in the ledger; the move has begun
//	new custom resource   migrate.inrun.dev/id: <ID>         made by the move
//	                      migrate.inrun.dev/from-uid: <UID>  of the old one
//	restored one          migrate.inrun.dev/rollback-of: <UID> of the old one, made again by rollback
const (
	// AnnotationFromUID names, on a custom resource a kind move created,
	// the UID of the one it replaced.
	AnnotationFromUID = ir.AnnotationMovedFrom
	// AnnotationRollbackOf names, on a custom resource a rollback of a kind
	// move created again from its snapshot, the UID it had.
	AnnotationRollbackOf = "migrate.inrun.dev/rollback-of"
	// annotationLastApplied is kubectl's record of the last apply, which
	// names the old kind: it does not move.
	annotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"
)

// Kind is one end of a kind move.
type Kind struct {
	schema.GroupVersionKind `json:"gvk"`
	Plural                  string `json:"plural"`
	Namespaced              bool   `json:"namespaced"`
	// Blueprint names the Blueprint that reconciles the kind, whose name
	// its children carry; empty for a kind no Blueprint reconciles.
	Blueprint string `json:"blueprint,omitempty"`
}

func (k Kind) String() string { return k.Kind + "." + k.Group + "/" + k.Version }

// KindMove moves the custom resources a Blueprint's migrate section
// selects to another kind.
type KindMove struct {
	// ID names the move: the Blueprint's name and a hash of both kinds,
	// the target namespace and the selection.
	ID string `json:"id"`
	// From is the Blueprint's kind; To the target.
	From Kind `json:"from"`
	To   Kind `json:"to"`
	// Namespace, when set, is where every moved custom resource goes.
	Namespace string `json:"namespace,omitempty"`
	// Children are the kinds of the objects the runtime makes for a custom
	// resource of From: the objects a move re-parents.
	Children []ir.ResourceKind `json:"children"`
	// AcceptLoss acknowledges values the target's schema drops.
	AcceptLoss bool `json:"acceptLoss,omitempty"`
	// Selection picks the custom resources that move; it is not needed
	// to roll back, and not kept in the ledger.
	Selection *ir.Selection `json:"-"`

	selector labels.Selector
	progs    *expr.Programs
	target   *structuralschema.Structural
}

// KindFromBlueprint returns the kind move a compiled Blueprint declares
// (its migrate section), or an error when it declares none.
func KindFromBlueprint(bp *ir.Blueprint) (*KindMove, error) {
	mig := bp.Migrate
	if mig == nil {
		return nil, fmt.Errorf("Blueprint %s declares no kind move: add migrate: {to: ..., selection: ...} at its top", bp.Name)
	}
	k := &KindMove{
		From:       Kind{GroupVersionKind: bp.Resource.GroupVersionKind, Plural: bp.Resource.Plural, Namespaced: bp.Resource.Namespaced, Blueprint: bp.Name},
		To:         Kind{GroupVersionKind: mig.To.GroupVersionKind, Plural: mig.To.Plural, Namespaced: mig.To.Namespaced, Blueprint: mig.To.Blueprint},
		Namespace:  mig.To.Namespace,
		Children:   bp.ResourceKinds(),
		AcceptLoss: mig.AcceptLoss,
		Selection:  mig.Selection,
	}
	if k.Selection == nil {
		k.Selection = &ir.Selection{}
	}
	sel, err := metav1.LabelSelectorAsSelector(k.Selection.LabelSelector())
	if err != nil {
		return nil, fmt.Errorf("migrate.selection: %w", err)
	}
	k.selector = sel
	if xs := bp.MigrateExprs(); len(xs) > 0 {
		if k.progs, err = expr.CompileSelf(bp, xs); err != nil {
			return nil, err
		}
	}
	if mig.To.Schema != nil {
		if k.target, err = expr.ResourceSchema(mig.To.Schema); err != nil {
			return nil, fmt.Errorf("the schema of %s: %w", k.To, err)
		}
	}
	// AcceptLoss changes nothing that moves, so it is not part of the ID.
	key := struct {
		From, To  schema.GroupVersionKind
		Namespace string
		Selection *metav1.LabelSelector
		When      string
	}{From: k.From.GroupVersionKind, To: k.To.GroupVersionKind, Namespace: k.Namespace, Selection: k.Selection.LabelSelector()}
	if w := k.Selection.IncludeWhen; w != nil {
		key.When = w.Source
	}
	data, _ := json.Marshal(key)
	sum := sha256.Sum256(data)
	name := bp.Name
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-.")
	}
	k.ID = name + "-" + hex.EncodeToString(sum[:])[:10]
	return k, nil
}

// Describe writes the move's header: its ID, both kinds and the selection.
func (k *KindMove) Describe(w io.Writer) {
	fmt.Fprintf(w, "Migration %s moves %s custom resources to %s", k.ID, k.From, k.To)
	if k.Namespace != "" {
		fmt.Fprintf(w, " in namespace %s", k.Namespace)
	}
	fmt.Fprintln(w, ":")
	if k.Selection != nil {
		sel := metav1.FormatLabelSelector(k.Selection.LabelSelector())
		if sel == "<none>" {
			sel = "every label"
		}
		fmt.Fprintf(w, "  selection: %s", sel)
		if k.Selection.IncludeWhen != nil {
			fmt.Fprintf(w, ", includeWhen ${%s}", k.Selection.IncludeWhen.Source)
		}
		fmt.Fprintln(w)
	}
}

// selected reports whether the selection picks obj.
func (k *KindMove) selected(obj *unstructured.Unstructured) (bool, error) {
	if k.selector != nil && !k.selector.Matches(labels.Set(obj.GetLabels())) {
		return false, nil
	}
	if k.progs == nil {
		return true, nil
	}
	vars, err := k.progs.NewVars(obj, nil)
	if err != nil {
		return false, err
	}
	return k.progs.EvalBool(k.Selection.IncludeWhen, vars)
}

// TargetKey is where the custom resource obj goes: its name, in the
// target namespace, its own, or none for a cluster-scoped target.
func (k *KindMove) TargetKey(obj *unstructured.Unstructured) client.ObjectKey {
	key := client.ObjectKey{Name: obj.GetName()}
	switch {
	case !k.To.Namespaced:
	case k.Namespace != "":
		key.Namespace = k.Namespace
	default:
		key.Namespace = obj.GetNamespace()
	}
	return key
}

// keepsOwners reports whether obj's owner references stay valid on the
// new custom resource: it stays in the same namespace (or both kinds are
// cluster-scoped). Elsewhere garbage collection would take a namespaced
// owner for absent, and delete the new custom resource.
func (k *KindMove) keepsOwners(obj *unstructured.Unstructured) bool {
	return k.TargetKey(obj).Namespace == obj.GetNamespace()
}

// newObject returns the custom resource obj becomes: the same name, spec,
// labels and annotations (kubectl's last-applied record aside), owner
// references while they stay valid, Inrun's finalizer when the target is
// a Blueprint's, and the move's annotations.
func (k *KindMove) newObject(obj *unstructured.Unstructured, needFinalizer bool) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	// status goes too: a CRD without the status subresource keeps it; one
	// with it ignores it on create, and restoreStatus writes it.
	for f, v := range obj.Object {
		if f != "metadata" {
			out.Object[f] = runtimeCopy(v)
		}
	}
	out.SetGroupVersionKind(k.To.GroupVersionKind)
	key := k.TargetKey(obj)
	out.SetName(key.Name)
	out.SetNamespace(key.Namespace)
	out.SetLabels(obj.GetLabels())
	ann := map[string]string{}
	for a, v := range obj.GetAnnotations() {
		if a != annotationLastApplied {
			ann[a] = v
		}
	}
	ann[AnnotationID] = k.ID
	ann[AnnotationFromUID] = string(obj.GetUID())
	out.SetAnnotations(ann)
	if k.keepsOwners(obj) {
		out.SetOwnerReferences(obj.GetOwnerReferences())
	}
	if k.To.Blueprint != "" && (needFinalizer || hasString(obj.GetFinalizers(), ir.Finalizer)) {
		out.SetFinalizers([]string{ir.Finalizer})
	}
	return out
}

// foreignFinalizers returns obj's finalizers that are neither Inrun's nor
// garbage collection's: other controllers', which hold a deleted object
// until those controllers remove them, for ever once they are gone.
func foreignFinalizers(obj metav1.Object) []string {
	var out []string
	for _, f := range obj.GetFinalizers() {
		switch f {
		case ir.Finalizer, metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents:
		default:
			out = append(out, f)
		}
	}
	return out
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runtimeCopy deep-copies a JSON value.
func runtimeCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = runtimeCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = runtimeCopy(x)
		}
		return out
	}
	return v
}

// dropped returns the paths of obj's values (spec, status and any other
// top-level field) that the target's schema does not have: the API server
// prunes them when the new custom resource is written.
func (k *KindMove) dropped(obj *unstructured.Unstructured) []string {
	var out []string
	if k.target == nil {
		return nil
	}
	var walk func(path string, v any, s *structuralschema.Structural)
	walk = func(path string, v any, s *structuralschema.Structural) {
		if s == nil || s.XPreserveUnknownFields {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				for key, x := range v {
					walk(path+"."+key, x, s.AdditionalProperties.Structural)
				}
				return
			}
			for key, x := range v {
				p, ok := s.Properties[key]
				if !ok {
					out = append(out, path+"."+key)
					continue
				}
				walk(path+"."+key, x, &p)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x, s.Items)
			}
		}
	}
	for f, v := range obj.Object {
		if f == "metadata" || f == "apiVersion" || f == "kind" {
			continue
		}
		p, ok := k.target.Properties[f]
		if !ok {
			out = append(out, f)
			continue
		}
		walk(f, v, &p)
	}
	if len(obj.GetOwnerReferences()) > 0 && !k.keepsOwners(obj) {
		out = append(out, "metadata.ownerReferences")
	}
	sort.Strings(out)
	return out
}

// canOwn reports whether a custom resource at key may be the owner of
// child in an owner reference: a namespaced owner only of objects in its
// namespace.
func (k *KindMove) canOwn(to Kind, key client.ObjectKey, child *unstructured.Unstructured) bool {
	return !to.Namespaced || child.GetNamespace() == key.Namespace
}

// children lists the objects the runtime made for the custom resource
// with the given UID: the Blueprint's children kinds, labelled with it.
func (k *KindMove) children(ctx context.Context, c client.Client, blueprint string, uid types.UID) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	sel := client.MatchingLabels{ir.LabelOwnerUID: string(uid)}
	if blueprint != "" {
		sel[ir.LabelBlueprint] = blueprint
	}
	for _, ck := range k.Children {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(ck.GroupVersion().WithKind(ck.Kind + "List"))
		if err := c.List(ctx, list, sel); err != nil {
			return nil, fmt.Errorf("listing its %s children: %w", ck.Kind, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// reparent rewrites child's inventory and owner reference from the custom
// resource from (UID) to owner, of kind to, with a patch at the
// resourceVersion it was read at: the child keeps its UID, and garbage
// collection, which follows owner references by UID, never finds it
// without an owner. An owner reference the new owner cannot hold (a
// namespaced owner of an object elsewhere) is removed: the owner's
// finalizer cleans that child up, as the runtime does for any such child.
func (k *KindMove) reparent(ctx context.Context, c client.Client, child *unstructured.Unstructured, from types.UID, owner *unstructured.Unstructured, to Kind) error {
	next := child.DeepCopy()
	l := next.GetLabels()
	if l[ir.LabelOwnerUID] == string(from) {
		l[ir.LabelOwnerUID] = string(owner.GetUID())
	}
	if to.Blueprint != "" {
		l[ir.LabelBlueprint] = to.Blueprint
	}
	next.SetLabels(l)
	if a := next.GetAnnotations(); a[ir.AnnotationOwner] != "" {
		a[ir.AnnotationOwner] = to.Group + "/" + to.Kind + "/" + owner.GetNamespace() + "/" + owner.GetName()
		next.SetAnnotations(a)
	}
	var refs []metav1.OwnerReference
	for _, ref := range next.GetOwnerReferences() {
		if ref.UID != from {
			refs = append(refs, ref)
			continue
		}
		if !k.canOwn(to, client.ObjectKeyFromObject(owner), child) {
			continue
		}
		ref.APIVersion, ref.Kind, ref.Name, ref.UID = to.GroupVersion().String(), to.Kind, owner.GetName(), owner.GetUID()
		refs = append(refs, ref)
	}
	next.SetOwnerReferences(refs)
	return c.Patch(ctx, next, client.MergeFromWithOptions(child, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
}

// release deletes the custom resource obj once nothing hangs on it: it
// first removes Inrun's finalizer, so that the runtime does not finalize
// it (its children have moved; a remote reconciler must not be told to
// clean up), then deletes it at that resourceVersion. A runtime that put
// the finalizer back in between makes the delete conflict: the caller
// tries again. Other finalizers are left to their controllers.
// Dependents Inrun did not hand over are orphaned, not deleted.
func release(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	if hasString(obj.GetFinalizers(), ir.Finalizer) {
		next := obj.DeepCopy()
		var keep []string
		for _, f := range next.GetFinalizers() {
			if f != ir.Finalizer {
				keep = append(keep, f)
			}
		}
		next.SetFinalizers(keep)
		if err := c.Patch(ctx, next, client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager)); err != nil {
			return err
		}
		obj = next
	}
	// Orphaning: Inrun's children name the new owner already, and
	// another controller's dependents are kept, their owner reference to
	// it removed, as the plan says.
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv}, client.PropagationPolicy(metav1.DeletePropagationOrphan))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// restoreStatus writes status to obj through the status subresource, when
// obj has none yet: a status the target's runtime wrote since is its own.
func restoreStatus(ctx context.Context, c client.Client, obj *unstructured.Unstructured, status any) error {
	if status == nil {
		return nil
	}
	if _, has := obj.Object["status"]; has {
		return nil
	}
	next := obj.DeepCopy()
	next.Object["status"] = runtimeCopy(status)
	err := c.Status().Update(ctx, next, client.FieldOwner(FieldManager))
	if apierrors.IsNotFound(err) {
		return nil // no status subresource: the status was created with it
	}
	if err == nil {
		obj.Object = next.Object
	}
	return err
}

// list reads every custom resource of kind (in namespace ns, when not
// empty), sorted by namespace and name.
func listKind(ctx context.Context, c client.Client, kind schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
	m := &Migration{Kind: kind}
	return m.list(ctx, c, ns)
}
