// Package componentstest holds the typed-Go fixtures that more than one
// package's tests run: a kubebuilder-style Guestbook API and its
// controller-runtime reconciler, registered as a module would register
// them. It is test support only.
package componentstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/components"
)

// GuestbookGV is the Guestbook's group and version.
var GuestbookGV = schema.GroupVersion{Group: "webapp.inrun.dev", Version: "v1"}

// Guestbook is a typed API as a kubebuilder project declares one, its deep
// copy written by hand.
type Guestbook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GuestbookSpec   `json:"spec,omitempty"`
	Status            GuestbookStatus `json:"status,omitempty"`
}

// GuestbookSpec is the Guestbook's desired state.
type GuestbookSpec struct {
	Size *int32 `json:"size,omitempty"`
}

// GuestbookStatus is what the reconciler reports.
type GuestbookStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GuestbookList is a list of Guestbooks.
type GuestbookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Guestbook `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (g *Guestbook) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if g.Spec.Size != nil {
		size := *g.Spec.Size
		out.Spec.Size = &size
	}
	out.Status.Conditions = nil
	for _, c := range g.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, *c.DeepCopy())
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *GuestbookList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = nil
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*Guestbook))
	}
	return &out
}

// AddGuestbook adds the Guestbook kinds to s, as a module's AddToScheme.
func AddGuestbook(s *runtime.Scheme) error {
	s.AddKnownTypes(GuestbookGV, &Guestbook{}, &GuestbookList{})
	metav1.AddToGroupVersion(s, GuestbookGV)
	return nil
}

// GuestbookOptions make the reconciler misbehave.
type GuestbookOptions struct {
	// Panicking, while true, makes each Reconcile panic with a runtime
	// error (a write to a nil map), after reading its Guestbook.
	Panicking *atomic.Bool
	// Err, when not nil, is returned by each Reconcile after reading its
	// Guestbook, before writing anything.
	Err error
	// Calling, when set, is called at the start of each Reconcile of a
	// Guestbook that exists, with its name; the func it returns is called
	// when that Reconcile returns. Tests count calls in flight with it.
	Calling func(name string) (done func())
	// RequeueAfter, when set, is the RequeueAfter of every Result: the
	// reconciler then calls itself again and again, as a busy one does.
	RequeueAfter time.Duration
	// Workers, when set, is the controller's MaxConcurrentReconciles.
	Workers int
}

// GuestbookReconciler is a controller-runtime reconciler as kubebuilder
// users write them: it reads its kind typed, owns a ConfigMap named
// <name>-config holding data.size, and writes its own Available condition.
type GuestbookReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	GuestbookOptions
}

// Reconcile implements reconcile.Reconciler.
func (r *GuestbookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gb := &Guestbook{}
	if err := r.Get(ctx, req.NamespacedName, gb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.Calling != nil {
		defer r.Calling(gb.Name)()
	}
	if r.Panicking != nil && r.Panicking.Load() {
		var m map[string]int
		m["boom"]++ // a nil map: a real runtime panic
	}
	if r.Err != nil {
		return ctrl.Result{}, r.Err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: gb.Name + "-config", Namespace: gb.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"size": fmt.Sprint(*gb.Spec.Size)}
		return controllerutil.SetControllerReference(gb, cm, r.Scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	if meta.SetStatusCondition(&gb.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "Configured", Message: "the ConfigMap is there"}) {
		if err := r.Status().Update(ctx, gb); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: r.RequeueAfter}, nil
}

// SetupWithManager registers the reconciler with mgr, as "guestbook".
func (r *GuestbookReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&Guestbook{}).Owns(&corev1.ConfigMap{}).Named("guestbook").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Workers}).Complete(r)
}

// GuestbookRegistry registers the Guestbook's scheme (webapp.inrun.dev/v1)
// and its reconciler, as controller "guestbook", the way a module's init
// does.
func GuestbookRegistry(opts GuestbookOptions) *components.Registry {
	reg := &components.Registry{}
	reg.RegisterScheme(GuestbookGV.String(), AddGuestbook)
	reg.RegisterController("guestbook", func(mgr manager.Manager) error {
		return (&GuestbookReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), GuestbookOptions: opts}).SetupWithManager(mgr)
	})
	return reg
}
