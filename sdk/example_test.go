package sdk_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inrun/inrun/sdk"
)

// reconcileWebApp is a whole reconciler: a WebApp becomes a Deployment and,
// when the Blueprint's reconcile.args say expose: true, a Service. Turn
// expose off and the runtime prunes the Service it no longer gets.
func reconcileWebApp(ctx context.Context, req *sdk.Request) (*sdk.Result, error) {
	if req.Finalizing {
		return &sdk.Result{Done: true}, nil // nothing outside the cluster to clean up
	}
	name := sdk.Resource{Object: req.Object}.Name()
	image, _ := req.Args["image"].(string)
	labels := map[string]string{"app": name}

	deployment, err := sdk.NewResource("deployment", &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	})
	if err != nil {
		return nil, err
	}
	res := &sdk.Result{Resources: []sdk.Resource{deployment}, Status: map[string]any{"phase": "Deploying"}}
	// Report what the cluster says of the Deployment asked for last time.
	if live := req.ObservedByID("deployment"); live != nil {
		status, _ := live["status"].(map[string]any)
		if ready, ok := status["readyReplicas"]; ok {
			res.Status["readyReplicas"] = ready
		}
	}

	if expose, _ := req.Args["expose"].(bool); expose {
		service, err := sdk.NewResource("service", &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{
				Selector: labels,
				Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		})
		if err != nil {
			return nil, err
		}
		res.Resources = append(res.Resources, service)
	}
	return res, nil
}

// A Go reconciler is a function served by sdk.Handler. In its own program it
// would be:
//
//	http.ListenAndServe(":8080", sdk.Handler(reconcileWebApp))
//
// Here a test server stands in for that program, and the request is the one
// the runtime sends for a WebApp named shop.
func ExampleHandler() {
	srv := httptest.NewServer(sdk.Handler(reconcileWebApp))
	defer srv.Close()

	request := `{
		"apiVersion": "inrun.dev/reconciler/v1alpha1",
		"kind": "ReconcileRequest",
		"object": {"apiVersion": "example.inrun.dev/v1", "kind": "WebApp", "metadata": {"name": "shop", "namespace": "default"}},
		"args": {"image": "nginx:1.27", "expose": true},
		"observed": [],
		"finalizing": false
	}`
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(request))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	res, err := sdk.DecodeResult(body, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Resources {
		fmt.Println(r.ID, r.Ref())
	}
	fmt.Println("phase:", res.Status["phase"])
	// Output:
	// deployment Deployment.apps shop
	// service Service shop
	// phase: Deploying
}
