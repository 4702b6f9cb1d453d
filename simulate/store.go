package simulate

import (
	"context"
	"fmt"
	"sync/atomic"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// uids numbers the custom resources of every Store in the process: a UID
// names one object for all time, and a reconciler or API that outlives a
// Store (one process serves a whole simulate file) must not meet the same
// UID twice, as it never would on a cluster.
var uids atomic.Int64

// Store is an in-memory API server for one Blueprint: its custom resource
// kind and every child kind, with server-side apply.
type Store struct {
	client.Client
	bp     *ir.Blueprint
	writes atomic.Int64
}

// NewStore returns an empty Store for bp.
func NewStore(bp *ir.Blueprint) *Store {
	s := &Store{bp: bp}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(bp.Resource.GroupVersionKind)
	count := func() { s.writes.Add(1) }
	s.Client = fake.NewClientBuilder().
		WithScheme(clientgoscheme.Scheme).
		WithTypeConverters(builtinTypes{clientgoapplyconfigurations.NewTypeConverter(clientgoscheme.Scheme)}, managedfields.NewDeducedTypeConverter()).
		WithRESTMapper(RESTMapper(bp)).
		WithStatusSubresource(cr).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				count()
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				count()
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				count()
				return c.Patch(ctx, obj, patch, opts...)
			},
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				count()
				return c.Apply(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				count()
				return c.Delete(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				count()
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				count()
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				count()
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		}).
		Build()
	return s
}

// builtinTypes types built-in kinds for server-side apply with the schemas
// the API server has. The fake client hands it some objects as their Go
// structs turned unstructured, which carry an empty status the schema of a
// kind without one (NetworkPolicy, since Kubernetes 1.30) does not declare:
// that empty status is dropped, as the API server never has it, instead of
// the object falling back to a deduced schema that cannot be merged with
// the typed one ("expected objects with types from the same schema").
type builtinTypes struct {
	managedfields.TypeConverter
}

func (b builtinTypes) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	v, err := b.TypeConverter.ObjectToTyped(obj, opts...)
	if err == nil {
		return v, nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, err
	}
	status, isMap := u.Object["status"].(map[string]any)
	if _, has := u.Object["status"]; !has || (isMap && len(status) > 0) || (!isMap && u.Object["status"] != nil) {
		return nil, err
	}
	u = u.DeepCopy()
	delete(u.Object, "status")
	return b.TypeConverter.ObjectToTyped(u, opts...)
}

// Writes returns how many writes the store has taken.
func (s *Store) Writes() int64 { return s.writes.Load() }

// RESTMapper maps the kinds a Blueprint uses to resources and scopes,
// offline, from the IR.
func RESTMapper(bp *ir.Blueprint) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	add := func(gvk schema.GroupVersionKind, plural string, namespaced bool) {
		scope := meta.RESTScopeRoot
		if namespaced {
			scope = meta.RESTScopeNamespace
		}
		singular := gvk.GroupVersion().WithResource(lower(gvk.Kind))
		m.AddSpecific(gvk, gvk.GroupVersion().WithResource(plural), singular, scope)
	}
	add(bp.Resource.GroupVersionKind, bp.Resource.Plural, bp.Resource.Namespaced)
	for _, c := range bp.Children {
		add(c.GroupVersionKind, c.Plural, c.Namespaced)
	}
	for _, k := range reconciler.OwnedKinds(bp) {
		add(k.GroupVersionKind, k.Plural, k.Namespaced)
	}
	return m
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// CreateCR stores a custom resource the way the API server would: the
// CRD's defaults applied, a namespace, a UID and a generation.
func (s *Store) CreateCR(ctx context.Context, cr *unstructured.Unstructured) error {
	if cr.GroupVersionKind() != s.bp.Resource.GroupVersionKind {
		return fmt.Errorf("%s is a %s, but the Blueprint reconciles %s", cr.GetName(), ir.FormatKind(cr.GroupVersionKind()), ir.FormatKind(s.bp.Resource.GroupVersionKind))
	}
	if s.bp.Resource.Namespaced && cr.GetNamespace() == "" {
		cr.SetNamespace("default")
	}
	if cr.GetUID() == "" {
		cr.SetUID(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", uids.Add(1))))
	}
	if cr.GetGeneration() == 0 {
		cr.SetGeneration(1)
	}
	if s.bp.Resource.Schema != nil {
		if st, err := expr.ResourceSchema(s.bp.Resource.Schema); err == nil {
			defaulting.Default(cr.Object, st)
		}
	}
	return s.Create(ctx, cr)
}
