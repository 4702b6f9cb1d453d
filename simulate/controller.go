package simulate

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// controllerRun runs a controller-runtime reconciler (reconcile.go.
// controller) in memory: its setup, as its module registered it, is given
// a manager whose client is the store, and each pass calls the Reconcile
// of the controller the setup built, as a work queue would after an event.
// Its watches are not started: a pass is the only event.
type controllerRun struct {
	name string
	ctrl reconcile.Reconciler
	key  types.NamespacedName
}

// newControllerRun sets up bp's controller on store for the custom
// resource key.
func newControllerRun(bp *ir.Blueprint, reg *components.Registry, store *Store, key types.NamespacedName) (*controllerRun, error) {
	name := bp.Reconcile.Remote.Controller.Name
	setup, ok := reg.ControllerSetup(name)
	if !ok {
		return nil, reg.Check(bp)
	}
	skip, recoverPanic := true, true
	m := &memoryManager{store: store, options: config.Controller{SkipNameValidation: &skip, RecoverPanic: &recoverPanic, ReconciliationTimeout: bp.Reconcile.Remote.Timeout}}
	if err := setup(m); err != nil {
		return nil, fmt.Errorf("setting up Go controller %q: %w", name, err)
	}
	for _, r := range m.added {
		if c, ok := r.(reconcile.Reconciler); ok {
			return &controllerRun{name: name, ctrl: c, key: key}, nil
		}
	}
	return nil, fmt.Errorf("Go controller %q: its setup added no controller to the manager", name)
}

// Sync calls the controller's Reconcile once. Its error is the pass's, as
// the runtime reports it on the custom resource (Degraded).
func (c *controllerRun) Sync(ctx context.Context, _ *unstructured.Unstructured) (*reconciler.Report, error) {
	rep := &reconciler.Report{Pending: map[string]string{}}
	if _, err := c.ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: c.key}); err != nil {
		rep.Errors = append(rep.Errors, fmt.Errorf("Go controller %q failed: %w", c.name, err))
	}
	return rep, nil
}

// controllerChildren are the objects of the kinds bp's controller declares
// (reconcile.resources) that cr owns, by "Kind/name".
func controllerChildren(ctx context.Context, store *Store, bp *ir.Blueprint, cr *unstructured.Unstructured) (map[string][]*unstructured.Unstructured, error) {
	out := map[string][]*unstructured.Unstructured{}
	for _, k := range bp.Reconcile.Remote.Resources {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
		var opts []client.ListOption
		if k.Namespaced {
			opts = append(opts, client.InNamespace(cr.GetNamespace()))
		}
		if err := store.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			for _, ref := range obj.GetOwnerReferences() {
				if ref.UID == cr.GetUID() {
					out[k.Kind+"/"+obj.GetName()] = append(out[k.Kind+"/"+obj.GetName()], obj)
					break
				}
			}
		}
	}
	return out, nil
}

// controllerScheme is the store's scheme for a controller: the built-in
// kinds' Go types, and those reg's modules register, which the controller
// reads its kind as.
func controllerScheme(reg *components.Registry) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, reg.AddToScheme(s)
}

// memoryManager is the manager a controller's setup is given in memory:
// what controller-runtime's builder uses of one (the client, the scheme,
// the controller options, a logger, event recorders, Add), and nothing
// that needs an API server. Anything else panics, and setup returns it as
// an error.
type memoryManager struct {
	manager.Manager
	store   *Store
	options config.Controller
	added   []manager.Runnable
}

var errNoCluster = errors.New("the in-memory simulator has no API server for this: test the controller with inrun e2e")

func (m *memoryManager) Add(r manager.Runnable) error            { m.added = append(m.added, r); return nil }
func (m *memoryManager) GetClient() client.Client                { return m.store }
func (m *memoryManager) GetAPIReader() client.Reader             { return m.store }
func (m *memoryManager) GetScheme() *runtime.Scheme              { return m.store.Scheme() }
func (m *memoryManager) GetRESTMapper() meta.RESTMapper          { return m.store.RESTMapper() }
func (m *memoryManager) GetControllerOptions() config.Controller { return m.options }
func (m *memoryManager) GetLogger() logr.Logger                  { return logr.Discard() }
func (m *memoryManager) GetCache() cache.Cache                   { return nil }
func (m *memoryManager) GetFieldIndexer() client.FieldIndexer    { return noIndexer{} }
func (m *memoryManager) GetConfig() *rest.Config                 { return &rest.Config{} }
func (m *memoryManager) GetHTTPClient() *http.Client             { return http.DefaultClient }
func (m *memoryManager) Elected() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
func (m *memoryManager) GetEventRecorderFor(string) record.EventRecorder {
	return &record.FakeRecorder{}
}
func (m *memoryManager) GetEventRecorder(string) recorder.EventRecorder {
	return &events.FakeRecorder{}
}
func (m *memoryManager) AddHealthzCheck(string, healthz.Checker) error { return nil }
func (m *memoryManager) AddReadyzCheck(string, healthz.Checker) error  { return nil }
func (m *memoryManager) Start(context.Context) error                   { return errNoCluster }

type noIndexer struct{}

func (noIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}
