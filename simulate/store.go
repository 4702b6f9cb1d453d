package simulate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/builtin"
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
// Blueprint it uses, whose custom resources its children may be. Writes of
// the custom resource are pruned, defaulted and validated by its CRD as
// the API server does (crdRules).
type Store struct {
	client.Client
	bp *ir.Blueprint
	// base is the store without the interceptors: what Store writes on its
	// own account (a pruned object, a refused write undone) is not counted.
	base  client.WithWatch
	rules *crdRules
	// builtin types built-in kinds' objects for server-side apply.
	builtin builtinTypes
	writes  atomic.Int64
	// written names the writes that succeeded, in order, for messages
	// that say what a pass changed.
	mu      sync.Mutex
	written []string
	// admit is set for a Blueprint that uses others: a child that is a
	// custom resource is reconciled in the store too, which needs what the
	// API server gives every object it stores (see settle).
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
	// events are the Events recorded through the store (Eventf), in order.
	events []recordedEvent
	// namespaces, when set, are the namespaces that exist besides those
	// of Namespace objects in the store: a write into another is refused,
	// as the API server refuses it. Nil: every namespace exists.
	namespaces map[string]bool
}

// ExistingNamespaces makes the namespaces given, every cluster's (default,
// kube-system, kube-public, kube-node-lease) and those of Namespace objects
// written to the store the only ones that exist: from now on, a namespaced
// object written into another is refused, as the API server refuses it.
func (s *Store) ExistingNamespaces(names ...string) {
	s.namespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}
	for _, n := range names {
		s.namespaces[n] = true
	}
}

// namespaceExists returns the API server's NotFound when ns, the
// namespace of an object of kind gvk being written, does not exist.
func (s *Store) namespaceExists(ctx context.Context, gvk schema.GroupVersionKind, ns string) error {
	if s.namespaces == nil || ns == "" || s.namespaces[ns] {
		return nil
	}
	if m, err := s.base.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil
	}
	if err := s.base.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err == nil {
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, ns)
}

// recordedEvent is an Event recorded on an object: what expect.events
// reads of it.
type recordedEvent struct {
	regarding schema.GroupVersionKind
	key       client.ObjectKey
	fields    map[string]any
}

// Eventf records an Event, as the runtime's Recorder would create one on
// the API server, for expect.events: the store is the runtime's recorder
// in a simulation. It is events.EventRecorder.
func (s *Store) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ev := recordedEvent{fields: map[string]any{"type": eventtype, "reason": reason, "action": action, "message": fmt.Sprintf(note, args...)}}
	if obj, ok := regarding.(client.Object); ok {
		ev.regarding, ev.key = obj.GetObjectKind().GroupVersionKind(), client.ObjectKeyFromObject(obj)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
}

// Events returns the Events recorded on the object of kind gvk named key
// since the first from were recorded, as {type, reason, action, message,
// count} maps, and how many have been recorded in all (the next from). An
// Event recorded again is counted, not listed again, as the runtime's
// Recorder makes a series of it.
func (s *Store) Events(gvk schema.GroupVersionKind, key client.ObjectKey, from int) (events []any, next int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	events = []any{}
	seen := map[string]map[string]any{}
	for _, ev := range s.events[min(from, len(s.events)):] {
		if ev.regarding != gvk || ev.key != key {
			continue
		}
		id := fmt.Sprint(ev.fields["type"], "\x00", ev.fields["reason"], "\x00", ev.fields["action"], "\x00", ev.fields["message"])
		if first, ok := seen[id]; ok {
			first["count"] = first["count"].(int64) + 1
			continue
		}
		m := maps.Clone(ev.fields)
		m["count"] = int64(1)
		seen[id] = m
		events = append(events, m)
	}
	return events, len(s.events)
}

// NewStore returns an empty Store for bp.
func NewStore(bp *ir.Blueprint) *Store {
	// A scheme of its own: the fake client adds every unstructured kind it
	// is given to its scheme, and client-go's global one must keep naming
	// only the built-in kinds, which the runtime reads typed.
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	return newStore(bp, scheme)
}

// newStore returns an empty Store for bp whose client knows scheme's Go
// types: the built-in kinds', and those a controller's module registers.
func newStore(bp *ir.Blueprint, scheme *runtime.Scheme) *Store {
	s := &Store{bp: bp, schemas: map[schema.GroupVersionKind]*structuralschema.Structural{}}
	// A CRD whose schema is not structural is refused by the compiler.
	s.rules, _ = newCRDRules(bp)
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
	s.builtin = builtinTypes{clientgoapplyconfigurations.NewTypeConverter(clientgoscheme.Scheme)}
	s.base = fake.NewClientBuilder().
		WithScheme(scheme).
		WithTypeConverters(s.builtin, managedfields.NewDeducedTypeConverter()).
		WithRESTMapper(RESTMapper(bp)).
		WithStatusSubresource(withStatus...).
		// The runtime reads who wrote an object before it deletes it, as
		// metadata only; every other read hides them, as the runtime's
		// caches do.
		WithReturnManagedFields().
		Build()
	count := func() { s.writes.Add(1) }
	s.Client = interceptor.NewClient(s.base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if _, metadata := obj.(*metav1.PartialObjectMetadata); !metadata {
				obj.SetManagedFields(nil)
			}
			dropNullStatus(obj)
			defaultServicePorts(obj)
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			_ = meta.EachListItem(list, func(o runtime.Object) error {
				if m, ok := o.(metav1.Object); ok {
					m.SetManagedFields(nil)
				}
				return nil
			})
			if ul, ok := list.(*unstructured.UnstructuredList); ok {
				for i := range ul.Items {
					dropNullStatus(&ul.Items[i])
				}
			}
			defaultServicePorts(list)
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			asStored(obj)
			if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
				if err := s.namespaceExists(ctx, gvk, obj.GetNamespace()); err != nil {
					return err
				}
			}
			if err := s.validObject(obj); err != nil {
				return err
			}
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			s.wrote("create", "", obj)
			return s.settle(ctx, obj.GetObjectKind().GroupVersionKind(), client.ObjectKeyFromObject(obj), nil, obj)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			asStored(obj)
			if err := s.validObject(obj); err != nil {
				return err
			}
			return s.wroteIf("update", "", obj, s.admitted(ctx, obj, false, func() error { return c.Update(ctx, obj, opts...) }))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if patch.Type() == types.ApplyPatchType {
				po := &client.PatchOptions{}
				return s.applyPatch(ctx, "", obj, patch, po.ApplyOptions(opts))
			}
			count()
			return s.wroteIf("patch", "", obj, s.admitted(ctx, obj, false, func() error {
				return s.validPatch(ctx, obj, func() error { return c.Patch(ctx, obj, patch, opts...) })
			}))
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			if err := s.validApplyMeta(obj); err != nil {
				return err
			}
			o, named := obj.(namedApply)
			if named {
				if err := s.namespaceExists(ctx, o.GroupVersionKind(), o.GetNamespace()); err != nil {
					return err
				}
			}
			var before *unstructured.Unstructured
			if s.admit && named {
				before = s.get(ctx, o.GroupVersionKind(), client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()})
			}
			write := func() error { return c.Apply(ctx, obj, opts...) }
			if named {
				key := client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
				apply := write
				write = func() error { return s.admitApply(ctx, o.GroupVersionKind(), key, apply) }
			}
			err := s.applied(ctx, obj, false, write)
			s.wroteApplyIf("", obj, err)
			if err != nil || !named {
				return err
			}
			return s.settle(ctx, o.GroupVersionKind(), client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, before, obj)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return s.wroteIf("delete", "", obj, c.Delete(ctx, obj, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return s.wroteIf("update", sub, obj, s.admitted(ctx, obj, sub == "status", func() error { return c.SubResource(sub).Update(ctx, obj, opts...) }))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if patch.Type() == types.ApplyPatchType {
				po := &client.SubResourcePatchOptions{}
				return s.applyPatch(ctx, sub, obj, patch, &po.ApplyOptions(opts).PatchOptions)
			}
			count()
			return s.wroteIf("patch", sub, obj, s.admitted(ctx, obj, sub == "status", func() error { return c.SubResource(sub).Patch(ctx, obj, patch, opts...) }))
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			count()
			prior := s.resourceVersion(ctx, obj)
			err := s.applied(ctx, obj, sub == "status", func() error { return c.SubResource(sub).Apply(ctx, obj, opts...) })
			s.wroteApplyIf(sub, obj, err)
			if err == nil {
				err = s.pastVersion(ctx, obj, prior)
			}
			return err
		},
	})
	return s
}

// asStored makes obj, about to be created or updated, what the API server
// stores of it: a Secret's stringData merged into its data. The runtime
// writes its Secret children so already; this is for every other object
// that enters the store: those that exist before the first pass (a case's
// objects, render's --object), and those a Go reconciler writes.
func asStored(obj client.Object) {
	switch o := obj.(type) {
	case *corev1.Secret:
		if len(o.StringData) > 0 && o.Data == nil {
			o.Data = map[string][]byte{}
		}
		for k, v := range o.StringData {
			o.Data[k] = []byte(v)
		}
		o.StringData = nil
	case *unstructured.Unstructured:
		builtin.SecretAsStored(o)
	}
}

// resourceVersion is the stored resourceVersion of the object obj applies
// to, as a number; 0 when there is none.
func (s *Store) resourceVersion(ctx context.Context, obj runtime.ApplyConfiguration) int64 {
	o, named := obj.(namedApply)
	if !named {
		return 0
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GroupVersionKind())
	if err := s.base.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, u); err != nil {
		return 0
	}
	rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	return rv
}

// pastVersion moves the object obj applied to past the resourceVersion
// prior. The fake client's apply to a status subresource gives the object
// a resourceVersion of 1 again, where an API server's only grows: a
// reconciler that remembers the version it saw would take the next for
// one it has seen. Each update of the object as it is adds one.
func (s *Store) pastVersion(ctx context.Context, obj runtime.ApplyConfiguration, prior int64) error {
	o, named := obj.(namedApply)
	if !named {
		return nil
	}
	for range prior + 1 {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		if err := s.base.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, u); err != nil {
			return nil
		}
		if rv, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64); rv > prior {
			return nil
		}
		if err := s.base.Update(ctx, u); err != nil {
			return fmt.Errorf("advancing the resourceVersion of %s: %w", u.GetName(), err)
		}
	}
	return nil
}

// dropNullStatus removes a null status from obj: the fake client keeps the
// status of an object with a status subresource that has none as null on
// every write of the object, where an API server stores no such field, and
// a reconciler reading status.get("x") must not meet one.
func dropNullStatus(obj client.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if st, has := u.Object["status"]; has && st == nil {
			delete(u.Object, "status")
		}
	}
}

// wroteIf records the write op of obj's subresource sub when err is nil,
// and returns err.
func (s *Store) wroteIf(op, sub string, obj client.Object, err error) error {
	if err == nil {
		s.wrote(op, sub, obj)
		dropNullStatus(obj)
	}
	return err
}

// wrote records that op of obj's subresource sub succeeded.
func (s *Store) wrote(op, sub string, obj client.Object) {
	gvk, gvkErr := apiutil.GVKForObject(obj, s.base.Scheme())
	kind := gvk.Kind
	if gvkErr != nil || kind == "" {
		kind = fmt.Sprintf("%T", obj)
	}
	s.record(op, sub, kind, obj.GetNamespace(), obj.GetName())
}

// wroteApplyIf records an apply of obj's subresource sub when err is nil.
func (s *Store) wroteApplyIf(sub string, obj runtime.ApplyConfiguration, err error) {
	if err != nil {
		return
	}
	if o, named := obj.(namedApply); named {
		s.record("apply", sub, o.GroupVersionKind().Kind, o.GetNamespace(), o.GetName())
		return
	}
	s.record("apply", sub, fmt.Sprintf("%T", obj), "", "")
}

func (s *Store) record(op, sub, kind, namespace, name string) {
	what := op + " " + kind + " " + name
	if namespace != "" {
		what = op + " " + kind + " " + namespace + "/" + name
	}
	if sub != "" {
		what += " (" + sub + ")"
	}
	s.mu.Lock()
	s.written = append(s.written, what)
	s.mu.Unlock()
}

// Written returns the writes that succeeded, in order, from the nth on:
// "apply ConfigMap shop/web-config", "apply Website shop/web (status)".
func (s *Store) Written(from int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from >= len(s.written) {
		return nil
	}
	return slices.Clone(s.written[from:])
}

// applyPatch runs a server-side apply sent as a patch of obj, of its
// subresource sub when sub is set, as the apply it is, through the
// store's Apply, and gives obj the answer. The runtime applies so where it
// wants the answer in another form than the object sent: typed for the
// built-in kinds, metadata only (a PartialObjectMetadata) for a status.
// The fake client would store a raw apply patch that creates an object
// with no resourceVersion, which no API server does.
func (s *Store) applyPatch(ctx context.Context, sub string, obj client.Object, patch client.Patch, po *client.PatchOptions) error {
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the apply patch of %s is not an object: %v", obj.GetName(), err))
	}
	ao := client.ApplyOptions{FieldManager: po.FieldManager, Force: po.Force, DryRun: po.DryRun}
	ac := client.ApplyConfigurationFromUnstructured(u)
	if sub == "" {
		err = s.Client.Apply(ctx, ac, &ao)
	} else {
		err = s.Client.SubResource(sub).Apply(ctx, ac, &client.SubResourceApplyOptions{ApplyOptions: ao})
	}
	if err != nil {
		return err
	}
	// The API server answers with the object as it stored it, admission
	// and resourceVersion included, not with what was sent.
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(u.GroupVersionKind())
	if err := s.base.Get(ctx, client.ObjectKeyFromObject(u), stored); err == nil {
		dropNullStatus(stored)
		u = stored
	}
	if un, ok := obj.(runtime.Unstructured); ok {
		un.SetUnstructuredContent(u.Object)
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// isCR reports whether gvk is the Blueprint's custom resource kind, whose
// writes the CRD's rules govern.
func (s *Store) isCR(gvk schema.GroupVersionKind) bool {
	return s.rules != nil && gvk == s.bp.Resource.GroupVersionKind
}

// applied runs write, a server-side apply of ac. As on the API server, an
// apply of the custom resource that sets a field its schema does not
// declare is refused whole; what is applied is then admitted.
func (s *Store) applied(ctx context.Context, ac runtime.ApplyConfiguration, statusOnly bool, write func() error) error {
	data, err := json.Marshal(ac)
	if err != nil {
		return write()
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return write()
	}
	if !s.isCR(u.GroupVersionKind()) {
		// A field the kind does not have, as the API server says it
		// (the fake client's merge would not name it).
		if clientgoscheme.Scheme.Recognizes(u.GroupVersionKind()) {
			if _, err := s.builtin.ObjectToTyped(u); err != nil && !strings.Contains(err.Error(), "no type found matching") {
				return apierrors.NewBadRequest(fmt.Sprintf("failed to create typed patch object (%s/%s; %s): %v", u.GetNamespace(), u.GetName(), u.GroupVersionKind(), err))
			}
		}
		return write()
	}
	applied := u.Object
	if statusOnly {
		// The status subresource takes the status and ignores the rest.
		applied = map[string]any{"status": u.Object["status"]}
	}
	if unknown := s.rules.unknownFields(applied); len(unknown) > 0 {
		return s.rules.unknownFieldsError(u.GetName(), unknown)
	}
	return s.admitted(ctx, u, statusOnly, write)
}

// admitted runs write, a write of obj, and when obj is the custom resource
// does what the API server does before it stores one: prunes unknown
// fields, fills in defaults and validates the result, refusing the write
// (the object is left as it was) with every field error.
func (s *Store) admitted(ctx context.Context, obj client.Object, statusOnly bool, write func() error) error {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if !s.isCR(gvk) {
		return write()
	}
	key := client.ObjectKeyFromObject(obj)
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(gvk)
	if err := s.base.Get(ctx, key, old); err != nil {
		return write()
	}
	if err := write(); err != nil {
		return err
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(gvk)
	if err := s.base.Get(ctx, key, stored); err != nil {
		return nil
	}
	// Else admission, which prunes the null, would differ from it and
	// store the object again.
	dropNullStatus(stored)
	admitted := stored.DeepCopy()
	if errs := s.rules.admit(ctx, admitted, old, statusOnly); len(errs) > 0 {
		if err := s.store(ctx, old, stored.GetResourceVersion()); err != nil {
			return fmt.Errorf("undoing a refused write: %w", err)
		}
		return s.rules.invalid(key.Name, errs)
	}
	if !equality.Semantic.DeepEqual(admitted.Object, stored.Object) {
		if err := s.store(ctx, admitted, stored.GetResourceVersion()); err != nil {
			return err
		}
	}
	return nil
}

// store writes obj, spec and status, over the version rv without counting
// the write: the store's own correction of what a write left.
func (s *Store) store(ctx context.Context, obj *unstructured.Unstructured, rv string) error {
	obj = obj.DeepCopy()
	obj.SetResourceVersion(rv)
	status, hasStatus := obj.DeepCopy().Object["status"]
	hasStatus = hasStatus && status != nil
	if err := s.base.Update(ctx, obj); err != nil {
		return err
	}
	if !s.bp.Resource.StatusSubresource {
		return nil
	}
	// An update leaves the status subresource as it was.
	unstructured.RemoveNestedField(obj.Object, "status")
	if hasStatus {
		obj.Object["status"] = status
	}
	return s.base.Status().Update(ctx, obj)
}

// namedApply is what an apply configuration made from an unstructured
// object (client.ApplyConfigurationFromUnstructured) says of its object.
type namedApply interface {
	GroupVersionKind() schema.GroupVersionKind
	GetNamespace() string
	GetName() string
}

// get reads an object from the store as it is, or nil.
func (s *Store) get(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := s.base.Get(ctx, key, u); err != nil {
		return nil
	}
	return u
}

// settle gives an object just written what the API server would, when
// the store admits (a Blueprint that uses others): a UID and generation 1
// when it is new, the next generation when its spec changed, and the
// defaults of its CRD when it is of a used kind. A used Blueprint's
// readiness (its status.observedGeneration against the generation) and
// the owner references of its children depend on them. before is the
// object before the write, or nil; written is what the write returns to
// the writer, which gets what the API server stored.
func (s *Store) settle(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey, before *unstructured.Unstructured, written any) error {
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
	// Only some kinds count their spec's changes (a ConfigMap has no
	// generation on a cluster); custom resources all do.
	generational := s.isCR(gvk) || s.schemas[gvk] != nil || builtin.Generational(gvk.GroupKind())
	switch {
	case u.GetUID() == "":
		u.SetUID(s.nextUID())
		if generational {
			u.SetGeneration(1)
		}
	case generational && before != nil && !equality.Semantic.DeepEqual(before.Object["spec"], u.Object["spec"]) && u.GetGeneration() == before.GetGeneration():
		u.SetGeneration(before.GetGeneration() + 1)
	}
	if equality.Semantic.DeepEqual(orig.Object, u.Object) {
		return nil
	}
	if err := s.base.Update(ctx, u); err != nil {
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

// CreateCR stores a custom resource the way the API server would: a
// namespace, a UID and a generation; no status, which only the status
// subresource writes; fields the CRD does not declare refused (as kubectl
// does by default), and the rest pruned, defaulted and validated.
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
	s.root = cr.GetUID()
	if s.rules != nil {
		if s.bp.Resource.StatusSubresource {
			unstructured.RemoveNestedField(cr.Object, "status")
		}
		if err := s.rules.strict(cr); err != nil {
			return err
		}
		if errs := s.rules.admit(ctx, cr, nil, false); len(errs) > 0 {
			return s.rules.invalid(cr.GetName(), errs)
		}
	}
	return s.Create(ctx, cr)
}
