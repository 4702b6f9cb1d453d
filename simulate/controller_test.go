package simulate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/simulate"
)

// Guestbook is a typed API as a kubebuilder project declares one.
type Guestbook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size *int32 `json:"size,omitempty"`
	} `json:"spec,omitempty"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

type GuestbookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Guestbook `json:"items"`
}

func (g *Guestbook) DeepCopyObject() kruntime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if g.Spec.Size != nil {
		size := *g.Spec.Size
		out.Spec.Size = &size
	}
	out.Status.Conditions = append([]metav1.Condition(nil), g.Status.Conditions...)
	return &out
}

func (l *GuestbookList) DeepCopyObject() kruntime.Object {
	out := *l
	out.Items = nil
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*Guestbook))
	}
	return &out
}

var guestbookGV = schema.GroupVersion{Group: "webapp.inrun.dev", Version: "v1"}

// guestbookReconciler reads its kind typed, owns a ConfigMap and writes
// its own condition; fail makes it fail.
type guestbookReconciler struct {
	client.Client
	scheme *kruntime.Scheme
	fail   bool
}

func (r *guestbookReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gb := &Guestbook{}
	if err := r.Get(ctx, req.NamespacedName, gb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.fail {
		return ctrl.Result{}, fmt.Errorf("the guestbook is closed")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: gb.Name + "-config", Namespace: gb.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"size": fmt.Sprint(*gb.Spec.Size)}
		return controllerutil.SetControllerReference(gb, cm, r.scheme)
	}); err != nil {
		return ctrl.Result{}, err
	}
	if meta.SetStatusCondition(&gb.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "Configured", Message: "ok"}) {
		return ctrl.Result{}, r.Status().Update(ctx, gb)
	}
	return ctrl.Result{}, nil
}

func guestbookRegistry(fail bool) *components.Registry {
	reg := &components.Registry{}
	reg.RegisterScheme("webapp.inrun.dev/v1", func(s *kruntime.Scheme) error {
		s.AddKnownTypes(guestbookGV, &Guestbook{}, &GuestbookList{})
		metav1.AddToGroupVersion(s, guestbookGV)
		return nil
	})
	reg.RegisterController("guestbook", func(mgr manager.Manager) error {
		r := &guestbookReconciler{Client: mgr.GetClient(), scheme: mgr.GetScheme(), fail: fail}
		return ctrl.NewControllerManagedBy(mgr).For(&Guestbook{}).Owns(&corev1.ConfigMap{}).Named("guestbook").Complete(r)
	})
	return reg
}

// TestController simulates an unchanged controller-runtime reconciler in
// memory: each pass calls its Reconcile on the store, what the custom
// resource owns is its children by Kind/name, and a failing call is an
// error of the pass.
func TestController(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/controller/blueprint.yaml", compiler.Options{Components: guestbookRegistry(false)})
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "webapp.inrun.dev/v1", "kind": "Guestbook",
		"metadata": map[string]any{"name": "book", "namespace": "default"},
		"spec":     map[string]any{"size": int64(2)},
	}}
	for _, fail := range []bool{false, true} {
		sim, err := simulate.New(bp)
		if err != nil {
			t.Fatal(err)
		}
		out, err := sim.WithComponents(guestbookRegistry(fail)).Run(context.Background(), simulate.Input{CR: cr.DeepCopy()})
		if err != nil {
			t.Fatal(err)
		}
		cms := out.Children["ConfigMap/book-config"]
		if fail {
			if err := out.Last().Err(); err == nil || !strings.Contains(err.Error(), `Go controller "guestbook" failed: the guestbook is closed`) {
				t.Errorf("a failing controller's pass: errors %v", err)
			}
			if len(cms) != 0 {
				t.Errorf("a failing controller made %d ConfigMaps", len(cms))
			}
			continue
		}
		if err := out.Last().Err(); err != nil {
			t.Fatal(err)
		}
		if len(cms) != 1 {
			t.Fatalf("children = %v, want ConfigMap/book-config", out.Children)
		}
		if size, _, _ := unstructured.NestedString(cms[0].Object, "data", "size"); size != "2" {
			t.Errorf("data.size = %q, want 2", size)
		}
		conds, _, _ := unstructured.NestedSlice(out.CR.Object, "status", "conditions")
		if len(conds) != 1 || conds[0].(map[string]any)["type"] != "Available" {
			t.Errorf("status.conditions = %v, want the controller's Available", conds)
		}
	}
}
