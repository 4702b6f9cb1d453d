package reconciler

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inrun/inrun/ir"
)

// Selection is what an externalRef read for one custom resource: objects
// of a kind, in a namespace ("" for every namespace), either the one with
// Name (an externalRef by name) or those whose labels match Selector (by
// label selector).
type Selection struct {
	schema.GroupVersionKind
	Namespace string
	Name      string
	Selector  labels.Selector
}

// Matches reports whether an object of kind gvk, in namespace, with this
// name and these labels is one the selection reads.
func (s Selection) Matches(gvk schema.GroupVersionKind, namespace, name string, set map[string]string) bool {
	if s.GroupVersionKind != gvk || (s.Namespace != "" && s.Namespace != namespace) {
		return false
	}
	if s.Name != "" {
		return s.Name == name
	}
	return s.Selector != nil && s.Selector.Matches(labels.Set(set))
}

// readSelected reads the objects an externalRef by label selector
// matches: a list, sorted by namespace and name, that may be empty. Inrun
// never writes them; a watch (see Selecting) reconciles the custom
// resource again when one appears, changes or goes.
func (p *pass) readSelected(ctx context.Context, c *ir.Child) {
	if err := p.opts.Unavailable[c.GroupVersionKind]; err != nil {
		p.childError(ctx, c, err)
		return
	}
	lists, ok := p.eval.(Lists)
	if !ok {
		p.childError(ctx, c, fmt.Errorf("%s: this operator's Renderer has no externalRef by selector: generate it again with this version of inrun build", c.Pos))
		return
	}
	ref, err := p.eval.Object(c)
	if err != nil {
		p.evalError(ctx, c, err)
		return
	}
	sel, err := selectorOf(ref)
	if err != nil {
		p.childError(ctx, c, fmt.Errorf("%s: metadata.selector: %w", c.Pos, err))
		return
	}
	u := &unstructured.Unstructured{Object: ref}
	ns := u.GetNamespace()
	if !c.Namespaced {
		ns = ""
	} else if ns == "" {
		ns = p.cr.GetNamespace() // "" for a cluster-scoped custom resource: every namespace
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(c.GroupVersion().WithKind(c.Kind + "List"))
	if err := p.opts.APIReader.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		p.apiError(ctx, c, err, "list")
		return
	}
	objs := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
		objs[i].SetGroupVersionKind(c.GroupVersionKind)
	}
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].GetNamespace() != objs[j].GetNamespace() {
			return objs[i].GetNamespace() < objs[j].GetNamespace()
		}
		return objs[i].GetName() < objs[j].GetName()
	})
	p.selections = append(p.selections, Selection{GroupVersionKind: c.GroupVersionKind, Namespace: ns, Selector: sel})
	if err := lists.SetLiveItems(c.ID, objs); err != nil {
		p.childError(ctx, c, err)
		return
	}
	p.items[c.ID] = objs
	p.isReady[c.ID] = true // objects Inrun only reads are ready as they are
}

// selectorOf reads the label selector of a rendered externalRef. A
// missing or empty one matches every object.
func selectorOf(ref map[string]any) (labels.Selector, error) {
	raw, _, err := unstructured.NestedFieldNoCopy(ref, "metadata", "selector")
	if err != nil || raw == nil {
		return labels.Everything(), err
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a map, not %T", raw)
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(ls)
}

// selected remembers what cr's externalRefs read this pass.
func (r *Reconciler) selected(cr *unstructured.Unstructured, s []Selection) {
	if !hasExternal(r.bp) {
		return
	}
	r.selections.Store(echoKey(cr), s)
}

func hasExternal(bp *ir.Blueprint) bool {
	for _, c := range bp.Children {
		if c.External {
			return true
		}
	}
	return false
}

// Selecting returns the custom resources whose externalRefs read, when
// last reconciled, the object of kind gvk in namespace with this name and
// these labels: those to reconcile again when such an object appears,
// changes (before or after) or goes. A custom resource not reconciled yet
// is reconciled anyway, for being new.
func (r *Reconciler) Selecting(gvk schema.GroupVersionKind, namespace, name string, set map[string]string) []reconcile.Request {
	var out []reconcile.Request
	r.selections.Range(func(k, v any) bool {
		for _, s := range v.([]Selection) {
			if s.Matches(gvk, namespace, name, set) {
				key := k.(objectKey)
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: key.namespace, Name: key.name}})
				break
			}
		}
		return true
	})
	return out
}
