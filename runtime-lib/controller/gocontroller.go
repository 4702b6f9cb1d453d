package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/internal/contain"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// DefaultControllerTimeout bounds one Reconcile call of a controller-runtime
// reconciler (reconcile.go.controller) when the Blueprint's
// reconcile.timeout does not.
const DefaultControllerTimeout = time.Minute

// ReasonReconcilerFailed is the reason of the Degraded condition and of
// the Warning Event the runtime records when a reconciler fails.
const ReasonReconcilerFailed = "ReconcilerFailed"

// setupController runs the controller-runtime reconciler bp names in
// reconcile.go.controller, unchanged, through the setup its module
// registered, in mgr: under the runtime's leader election, metrics, probes
// and scheme. Panics in its Reconcile are recovered, each call is bounded
// by reconcile.timeout, and a failed call marks the custom resource
// Degraded with the error and records a Warning Event; the next call that
// succeeds clears it. The runtime writes nothing else: the reconciler owns
// the custom resource and its objects.
func setupController(mgr manager.Manager, bp *ir.Blueprint, opts Options) error {
	name := bp.Reconcile.Remote.Controller.Name
	setup, ok := opts.Components.ControllerSetup(name)
	if !ok {
		return opts.Components.Check(bp)
	}
	gvk := bp.Resource.GroupVersionKind
	if !mgr.GetScheme().Recognizes(gvk) {
		return fmt.Errorf("blueprint %s: controller %q reads %s typed, and no Go type is registered for it: in the Go module, register its API types beside the controller, components.RegisterScheme(%q, %s.AddToScheme), where %s is the package of its api/%s types (docs/typed.md)",
			bp.Name, name, ir.FormatKind(gvk), gvk.GroupVersion().String(), gvk.Version, gvk.Version, gvk.Version)
	}
	recorder, err := NewRecorder(mgr, "inrun-"+bp.Name)
	if err != nil {
		return err
	}
	timeout := bp.Reconcile.Remote.Timeout
	if timeout <= 0 {
		timeout = DefaultControllerTimeout
	}
	g := &guard{bp: bp, name: name, client: mgr.GetClient(), recorder: recorder, fieldOwner: opts.FieldOwner, log: mgr.GetLogger().WithName(bp.Name), conditions: mapConditions(bp)}
	global := mgr.GetControllerOptions()
	recoverPanic := true
	global.RecoverPanic = &recoverPanic
	global.ReconciliationTimeout = timeout
	if opts.SkipNameValidation {
		global.SkipNameValidation = &opts.SkipNameValidation
	}
	cm := &guardedManager{Manager: mgr, options: global, log: logr.New(&guardSink{sink: sinkOf(mgr.GetLogger()), guard: g})}
	_, err = contain.Call(context.Background(), 30*time.Second, func(context.Context) (struct{}, error) { return struct{}{}, setup(cm) })
	if err != nil {
		return fmt.Errorf("blueprint %s: setting up Go controller %q: %w", bp.Name, name, err)
	}
	return nil
}

// guardedManager is the manager a controller's setup is given: the
// runtime's, with its controllers' panics recovered, their calls bounded,
// and their log watched for failures.
type guardedManager struct {
	manager.Manager
	options config.Controller
	log     logr.Logger
}

func (m *guardedManager) GetControllerOptions() config.Controller { return m.options }

// GetLogger is the logger controller-runtime's builder gives the
// controllers it builds, which log each failed call on it.
func (m *guardedManager) GetLogger() logr.Logger { return m.log }

// guard marks custom resources Degraded while their controller fails.
type guard struct {
	bp         *ir.Blueprint
	name       string
	client     client.Client
	recorder   *Recorder
	fieldOwner string
	log        logr.Logger
	// conditions is true when the CRD's status.conditions is a list
	// keyed by type, which the runtime can add Degraded to with
	// server-side apply without taking the reconciler's conditions.
	conditions bool
}

// failed records that the controller's call for key returned err. A
// conflict is how optimistic concurrency works, not a failure: the call is
// retried on the newer object.
func (g *guard) failed(key types.NamespacedName, err error) {
	if apierrors.IsConflict(err) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cr, ok := g.get(ctx, key)
	if !ok {
		return
	}
	msg := fmt.Sprintf("Go controller %q failed: %v", g.name, err)
	g.recorder.Eventf(cr, nil, corev1.EventTypeWarning, ReasonReconcilerFailed, "Reconcile", "%s", msg)
	g.setDegraded(ctx, cr, metav1.ConditionTrue, ReasonReconcilerFailed, msg)
}

// succeeded clears a Degraded condition the runtime set on key.
func (g *guard) succeeded(key types.NamespacedName) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cr, ok := g.get(ctx, key)
	if !ok {
		return
	}
	if c := degradedOf(cr); c == nil || c["status"] != string(metav1.ConditionTrue) || c["reason"] != ReasonReconcilerFailed {
		return
	}
	g.setDegraded(ctx, cr, metav1.ConditionFalse, "Reconciled", fmt.Sprintf("Go controller %q reconciled it", g.name))
}

func (g *guard) get(ctx context.Context, key types.NamespacedName) (*unstructured.Unstructured, bool) {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(g.bp.Resource.GroupVersionKind)
	if err := g.client.Get(ctx, key, cr); err != nil {
		return nil, false
	}
	return cr, true
}

// setDegraded applies the Degraded condition alone, as its own field
// manager's, when the CRD keys conditions by type.
func (g *guard) setDegraded(ctx context.Context, cr *unstructured.Unstructured, status metav1.ConditionStatus, reason, msg string) {
	if !g.conditions {
		return
	}
	if len(msg) > 2048 {
		msg = msg[:2045] + "..."
	}
	since := metav1.Now().UTC().Format(time.RFC3339)
	if c := degradedOf(cr); c != nil && c["status"] == string(status) {
		if t, ok := c["lastTransitionTime"].(string); ok {
			since = t
		}
		if c["message"] == msg && c["reason"] == reason {
			return
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cr.GetAPIVersion(), "kind": cr.GetKind(),
		"metadata": map[string]any{"name": cr.GetName(), "namespace": cr.GetNamespace()},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": reconciler.ConditionDegraded, "status": string(status), "reason": reason, "message": msg,
			"lastTransitionTime": since, "observedGeneration": cr.GetGeneration(),
		}}},
	}}
	if cr.GetNamespace() == "" {
		unstructured.RemoveNestedField(obj.Object, "metadata", "namespace")
	}
	ac := client.ApplyConfigurationFromUnstructured(obj)
	var err error
	if g.bp.Resource.StatusSubresource {
		err = g.client.Status().Apply(ctx, ac, client.FieldOwner(g.fieldOwner+"-guard"))
	} else {
		err = g.client.Apply(ctx, ac, client.FieldOwner(g.fieldOwner+"-guard"))
	}
	if err != nil {
		g.log.Error(err, "writing the Degraded condition", "namespace", cr.GetNamespace(), "name", cr.GetName())
	}
}

func degradedOf(cr *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == reconciler.ConditionDegraded {
			return m
		}
	}
	return nil
}

// mapConditions reports whether bp's CRD declares status.conditions a
// list keyed by type, as kubebuilder's scaffold does.
func mapConditions(bp *ir.Blueprint) bool {
	s := bp.Resource.Schema
	if s == nil {
		return false
	}
	status, ok := s.Properties["status"]
	if !ok {
		return false
	}
	conds, ok := status.Properties["conditions"]
	if !ok || conds.XListType == nil || *conds.XListType != "map" {
		return false
	}
	return len(conds.XListMapKeys) == 1 && conds.XListMapKeys[0] == "type"
}

// guardSink passes every line to sink, and tells guard of the calls
// controller-runtime's controller logs as failed ("Reconciler error") or
// done (at V(5)), by the namespace and name they are logged with.
type guardSink struct {
	sink   logr.LogSink
	guard  *guard
	values []any
}

func sinkOf(l logr.Logger) logr.LogSink {
	if s := l.GetSink(); s != nil {
		return s
	}
	return logr.Discard().GetSink()
}

func (s *guardSink) Init(info logr.RuntimeInfo) {
	if s.sink != nil {
		s.sink.Init(logr.RuntimeInfo{CallDepth: info.CallDepth + 1})
	}
}

// Enabled is true at every level: the line that says a call is done is
// logged at V(5).
func (s *guardSink) Enabled(int) bool { return true }

func (s *guardSink) Info(level int, msg string, kv ...any) {
	if strings.HasPrefix(msg, "Reconcile successful") || strings.HasPrefix(msg, "Reconcile done") {
		if key, ok := s.key(); ok {
			s.guard.succeeded(key)
		}
	}
	if s.sink != nil && s.sink.Enabled(level) {
		s.sink.Info(level, msg, kv...)
	}
}

func (s *guardSink) Error(err error, msg string, kv ...any) {
	if msg == "Reconciler error" {
		if key, ok := s.key(); ok {
			s.guard.failed(key, err)
		}
	}
	if s.sink != nil {
		s.sink.Error(err, msg, kv...)
	}
}

func (s *guardSink) WithValues(kv ...any) logr.LogSink {
	out := &guardSink{guard: s.guard, values: append(append([]any{}, s.values...), kv...)}
	if s.sink != nil {
		out.sink = s.sink.WithValues(kv...)
	}
	return out
}

func (s *guardSink) WithName(name string) logr.LogSink {
	out := &guardSink{guard: s.guard, values: s.values}
	if s.sink != nil {
		out.sink = s.sink.WithName(name)
	}
	return out
}

// key is the custom resource the line is about: the "namespace" and
// "name" controller-runtime adds to a call's logger.
func (s *guardSink) key() (types.NamespacedName, bool) {
	var key types.NamespacedName
	found := false
	for i := 0; i+1 < len(s.values); i += 2 {
		switch s.values[i] {
		case "namespace":
			key.Namespace, _ = s.values[i+1].(string)
		case "name":
			key.Name, found = s.values[i+1].(string)
		}
	}
	return key, found && key.Name != ""
}
