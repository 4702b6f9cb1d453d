package simulate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/api/equality"
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
// kind and every child kind, with server-side apply; and the same of every
// Blueprint it uses, whose custom resources its children may be.
type Store struct {
	client.Client
	bp *ir.Blueprint
	// raw is the store without the write count: what the API server does
	// on its own (a UID, a generation, defaults) is no write of the
	// runtime's.
	raw    client.Client
	writes atomic.Int64
	// admit is set for a Blueprint that uses others: a child that is a
	// custom resource is reconciled in the store too, which needs what the
	// API server gives every object it stores (see admitted).
	admit bool
	// schemas are the structural schemas of the used kinds, by kind: their
	// defaults are filled in on every write.
	schemas map[schema.GroupVersionKind]*structuralschema.Structural
	// root is the UID of the custom resource (CreateCR), and admittedN the
	// objects admitted since: their UIDs derive from both, so that two
	// stores that take the same writes for the same custom resource give
	// the same UIDs (a compiled and an interpreted run compare), while a
	// UID still names one object in the process.
	root      types.UID
	admittedN int
}

// NewStore returns an empty Store for bp.
func NewStore(bp *ir.Blueprint) *Store {
	s := &Store{bp: bp, schemas: map[schema.GroupVersionKind]*structuralschema.Structural{}}
	var withStatus []client.Object
	all := ir.WithUsed([]*ir.Blueprint{bp})
	for _, b := range all {
		cr := &unstructured.Unstructured{}
		cr.SetGroupVersionKind(b.Resource.GroupVersionKind)
		withStatus = append(withStatus, cr)
		for _, u := range b.Uses {
			if u.Schema == nil {
				continue
			}
			if st, err := expr.ResourceSchema(u.Schema); err == nil {
				s.schemas[u.GroupVersionKind] = st
			}
		}
	}
	s.admit = len(all) > 1
	count := func() { s.writes.Add(1) }
	raw := fake.NewClientBuilder().
		WithScheme(clientgoscheme.Scheme).
		WithTypeConverters(builtinTypes{clientgoapplyconfigurations.NewTypeConverter(clientgoscheme.Scheme)}, managedfields.NewDeducedTypeConverter()).
		WithRESTMapper(RESTMapper(bp)).
		WithStatusSubresource(withStatus...).
		Build()
	s.raw = raw
	s.Client = interceptor.NewClient(raw, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			return s.admitted(ctx, obj.GetObjectKind().GroupVersionKind(), client.ObjectKeyFromObject(obj), nil, obj)
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
			o, named := obj.(applied)
			var before *unstructured.Unstructured
			if s.admit && named {
				before = s.get(ctx, o.GroupVersionKind(), client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()})
			}
			if err := c.Apply(ctx, obj, opts...); err != nil || !named {
				return err
			}
			return s.admitted(ctx, o.GroupVersionKind(), client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, before, obj)
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
	})
	return s
}

// applied is what an apply configuration made from an unstructured
// object (client.ApplyConfigurationFromUnstructured) says of its object.
type applied interface {
	GroupVersionKind() schema.GroupVersionKind
	GetNamespace() string
	GetName() string
}

// get reads an object from the store as it is, or nil.
func (s *Store) get(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := s.raw.Get(ctx, key, u); err != nil {
		return nil
	}
	return u
}

// admitted gives an object just written what the API server would, when
// the store admits (a Blueprint that uses others): a UID and generation 1
// when it is new, the next generation when its spec changed, and the
// defaults of its CRD when it is of a used kind. A used Blueprint's
// readiness (its status.observedGeneration against the generation) and
// the owner references of its children depend on them. before is the
// object before the write, or nil; written is what the write returns to
// the writer, which gets what the API server stored.
func (s *Store) admitted(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, before *unstructured.Unstructured, written any) error {
	if !s.admit {
		return nil
	}
	u := s.get(ctx, gvk, key)
	if u == nil {
		return nil
	}
	orig := u.DeepCopy()
	if st := s.schemas[gvk]; st != nil {
		defaulting.Default(u.Object, st)
	}
	switch {
	case u.GetUID() == "":
		u.SetUID(s.nextUID())
		u.SetGeneration(1)
	case before != nil && !equality.Semantic.DeepEqual(before.Object["spec"], u.Object["spec"]) && u.GetGeneration() == before.GetGeneration():
		u.SetGeneration(before.GetGeneration() + 1)
	}
	if equality.Semantic.DeepEqual(orig.Object, u.Object) {
		return nil
	}
	if err := s.raw.Update(ctx, u); err != nil {
		return err
	}
	if w, ok := written.(interface{ SetUnstructuredContent(map[string]any) }); ok {
		w.SetUnstructuredContent(u.DeepCopy().Object)
	}
	return nil
}

// nextUID is the UID of the next object admitted (see Store.root).
func (s *Store) nextUID() types.UID {
	s.admittedN++
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", s.root, s.admittedN)))
	x := hex.EncodeToString(h[:16])
	return types.UID(x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32])
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

// RESTMapper maps the kinds a Blueprint writes and reads to resources and
// scopes, offline, from the IR: those of the Blueprints it uses too.
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
	for _, b := range ir.WithUsed([]*ir.Blueprint{bp}) {
		add(b.Resource.GroupVersionKind, b.Resource.Plural, b.Resource.Namespaced)
		for _, u := range b.Uses {
			add(u.GroupVersionKind, u.Plural, u.Namespaced)
		}
		for _, c := range b.Children {
			add(c.GroupVersionKind, c.Plural, c.Namespaced)
		}
		for _, k := range reconciler.OwnedKinds(b) {
			add(k.GroupVersionKind, k.Plural, k.Namespaced)
		}
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
	s.root = cr.GetUID()
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
