// Package controller is a controller-runtime reconciler as kubebuilder
// users write one: it reads its kind typed and does its own writes.
package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	webappv1 "example.com/guestbook/api/v1"
)

// GuestbookReconciler reconciles a Guestbook object.
type GuestbookReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=webapp.inrun.dev,resources=guestbooks,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=webapp.inrun.dev,resources=guestbooks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// Reconcile keeps a ConfigMap holding the Guestbook's size, and an
// Available condition.
func (r *GuestbookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gb := &webappv1.Guestbook{}
	if err := r.Get(ctx, req.NamespacedName, gb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	size := int32(1)
	if gb.Spec.Size != nil {
		size = *gb.Spec.Size
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: gb.Name + "-config", Namespace: gb.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"size": fmt.Sprint(size)}
		return controllerutil.SetControllerReference(gb, cm, r.Scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	if meta.SetStatusCondition(&gb.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "Configured", Message: "the ConfigMap is there"}) {
		return ctrl.Result{}, r.Status().Update(ctx, gb)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager sets up the controller with the Manager.
func (r *GuestbookReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&webappv1.Guestbook{}).
		Owns(&corev1.ConfigMap{}).
		Named("guestbook").
		Complete(r)
}
