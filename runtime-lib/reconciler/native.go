package reconciler

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TypedKind reports whether the children of kind gvk are watched, cached
// and listed as the Go types of s rather than as unstructured objects: the
// built-in kinds (those of client-go's scheme) that s knows. A typed object
// costs a fraction of an unstructured one to decode from a watch event and
// to hold in the cache, and expressions read it as it is (ext.NativeTypes
// types the built-in kinds), where an unstructured one is converted on
// every pass. The controller and the Reconciler must agree on it, or one
// kind would get two informers. Custom resources, and kinds no Go type
// describes, stay unstructured.
func TypedKind(s *runtime.Scheme, gvk schema.GroupVersionKind) bool {
	if s == nil || !clientgoscheme.Scheme.Recognizes(gvk) || !s.Recognizes(gvk) || !s.Recognizes(listOf(gvk)) {
		return false
	}
	// A scheme may hold a kind as unstructured (controller-runtime's fake
	// client adds the kinds it is given so): that is no Go type. The type
	// is looked up, not made: a pass asks this for every child it applies.
	t, ok := s.AllKnownTypes()[gvk]
	return ok && !reflect.PointerTo(t).Implements(unstructuredType)
}

var unstructuredType = reflect.TypeFor[runtime.Unstructured]()

func listOf(gvk schema.GroupVersionKind) schema.GroupVersionKind {
	return gvk.GroupVersion().WithKind(gvk.Kind + "List")
}

// schemeOf returns the scheme of r when it has one, as a client.Client
// does.
func schemeOf(r client.Reader) *runtime.Scheme {
	if s, ok := r.(interface{ Scheme() *runtime.Scheme }); ok {
		return s.Scheme()
	}
	return nil
}

// NewTyped returns an empty object of gvk, typed when TypedKind says so.
func NewTyped(s *runtime.Scheme, gvk schema.GroupVersionKind) (client.Object, error) {
	if !TypedKind(s, gvk) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	obj, err := s.New(gvk)
	if err != nil {
		return nil, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s: %T is not a client.Object", gvk, obj)
	}
	return co, nil
}

// listTyped lists objects of gvk as s's Go type, which is cheaper than
// decoding them unstructured from every watch event, and returns each
// with an unstructured view: its whole view when whole is set, else its
// metadata view (see metaView). Expressions read the typed object.
func listTyped(ctx context.Context, r client.Reader, s *runtime.Scheme, gvk schema.GroupVersionKind, opts []client.ListOption, whole bool) ([]*unstructured.Unstructured, []runtime.Object, error) {
	obj, err := s.New(listOf(gvk))
	if err != nil {
		return nil, nil, err
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %T is not a client.ObjectList", listOf(gvk), obj)
	}
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, nil, err
	}
	views := make([]*unstructured.Unstructured, 0, len(items))
	view := metaView
	if whole {
		view = viewOf
	}
	for _, item := range items {
		u, err := view(item, gvk)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", gvk.Kind, err)
		}
		views = append(views, u)
	}
	return views, items, nil
}

// viewOf is the unstructured view of obj, a typed object of kind gvk,
// which a typed object from the API server does not carry.
func viewOf(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// metaView is the view of obj, a typed object of kind gvk, with its kind
// and metadata only: what keys, ownership, pruning and Events read. The
// pass compares the rest in the typed object (upToDateTyped), judges
// readiness from it, and expressions read it as it is; the whole view is
// made only for what reads more (pass.whole). Converting a Deployment
// whole costs more than anything else a pass does with it. The view holds
// no managed fields: the caches drop them, and so does apply from its
// answer.
func metaView(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return viewOf(obj, gvk)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata":   metadataOf(o),
	}}
	return u, nil
}

// metadataOf is o's metadata as runtime.DefaultUnstructuredConverter
// writes it, but for managed fields, without its reflection: a pass makes
// one for every child it lists or applies.
func metadataOf(o metav1.Object) map[string]any {
	m := make(map[string]any, 10)
	setString := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	setString("name", o.GetName())
	setString("generateName", o.GetGenerateName())
	setString("namespace", o.GetNamespace())
	setString("selfLink", o.GetSelfLink())
	setString("uid", string(o.GetUID()))
	setString("resourceVersion", o.GetResourceVersion())
	if g := o.GetGeneration(); g != 0 {
		m["generation"] = g
	}
	if t := o.GetCreationTimestamp(); !t.IsZero() {
		m["creationTimestamp"] = t.ToUnstructured()
	}
	if t := o.GetDeletionTimestamp(); t != nil {
		m["deletionTimestamp"] = t.ToUnstructured()
	}
	if s := o.GetDeletionGracePeriodSeconds(); s != nil {
		m["deletionGracePeriodSeconds"] = *s
	}
	setStrings := func(k string, kv map[string]string) {
		if len(kv) == 0 {
			return
		}
		out := make(map[string]any, len(kv))
		for k, v := range kv {
			out[k] = v
		}
		m[k] = out
	}
	setStrings("labels", o.GetLabels())
	setStrings("annotations", o.GetAnnotations())
	if refs := o.GetOwnerReferences(); len(refs) > 0 {
		out := make([]any, len(refs))
		for i, ref := range refs {
			r := map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID)}
			if ref.Controller != nil {
				r["controller"] = *ref.Controller
			}
			if ref.BlockOwnerDeletion != nil {
				r["blockOwnerDeletion"] = *ref.BlockOwnerDeletion
			}
			out[i] = r
		}
		m["ownerReferences"] = out
	}
	if fs := o.GetFinalizers(); len(fs) > 0 {
		out := make([]any, len(fs))
		for i, f := range fs {
			out[i] = f
		}
		m["finalizers"] = out
	}
	return m
}

// applyTyped applies desired, of a kind TypedKind names, with server-side
// apply, and returns the API server's answer: typed, and its view. The
// request is desired's JSON as any apply's, but made for the Go type, so
// that the answer comes back as protobuf and is decoded as the cache
// decodes the kind: a fraction of the cost of decoding it unstructured
// from JSON, and expressions read it with no conversion. The view returned
// is its metadata view (metaView). The answer's managed fields are
// dropped, as the caches drop them.
func applyTyped(ctx context.Context, c client.Client, desired *unstructured.Unstructured, opts ...client.PatchOption) (*unstructured.Unstructured, runtime.Object, error) {
	gvk := desired.GroupVersionKind()
	data, err := desired.MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	obj, err := c.Scheme().New(gvk)
	if err != nil {
		return nil, nil, err
	}
	native, ok := obj.(client.Object)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %T is not a client.Object", gvk, obj)
	}
	native.SetNamespace(desired.GetNamespace())
	native.SetName(desired.GetName())
	if err := c.Patch(ctx, native, client.RawPatch(types.ApplyPatchType, data), opts...); err != nil {
		return nil, nil, err
	}
	native.SetManagedFields(nil)
	view, err := metaView(native, gvk)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the %s the API server answered: %w", gvk.Kind, err)
	}
	return view, native, nil
}
