// Package webapp is the reconciler example's Go: the reconciler webapp,
// built from a constructor, and the args hook webapp.version. They
// register by name from init; an inrun built with this module (make build)
// has them.
package webapp

import (
	"context"
	"strings"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"
)

func init() {
	components.RegisterReconciler("webapp", func(o components.ReconcilerOptions) (sdk.Func, error) {
		// Runs once, when inrun starts the Blueprint: set up clients and
		// caches here. o.Reader reads the cluster; o.Log logs.
		o.Log.Info("webapp reconciler ready", "blueprint", o.Blueprint)
		return reconcile, nil
	})
	components.RegisterArgs("webapp.version", version)
}

// version adds args.version: the image's tag, or "latest" without one.
func version(_ context.Context, req *components.ArgsRequest) (map[string]any, error) {
	image, _ := req.Args["image"].(string)
	tag := "latest"
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		tag = image[i+1:]
	}
	return map[string]any{"version": tag}, nil
}

// reconcile returns a Deployment and a Service for the WebApp, and its
// phase from the Deployment it observes. It reads nothing but the request,
// so the same request gets the same Result.
func reconcile(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
	if req.Finalizing {
		return &sdk.Result{Done: true}, nil
	}
	name := sdk.Resource{Object: req.Object}.Name()
	labels := map[string]any{"app": name, "app.kubernetes.io/version": req.Args["version"]}
	ready := int64(0)
	for _, o := range req.Observed {
		if o.ID == "deployment" {
			if status, ok := o.Object["status"].(map[string]any); ok {
				ready, _ = status["readyReplicas"].(int64)
			}
		}
	}
	replicas, _ := req.Args["replicas"].(int64)
	phase := "Pending"
	if ready >= replicas {
		phase = "Running"
	}
	return &sdk.Result{
		Status: map[string]any{"phase": phase, "readyReplicas": ready, "version": req.Args["version"]},
		Resources: []sdk.Resource{
			{ID: "deployment", Object: map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": name, "labels": labels},
				"spec": map[string]any{
					"replicas": replicas,
					"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": labels},
						"spec": map[string]any{"containers": []any{map[string]any{
							"name": "web", "image": req.Args["image"],
							"ports": []any{map[string]any{"name": "http", "containerPort": int64(80)}},
						}}},
					},
				},
			}},
			{ID: "service", Object: map[string]any{
				"apiVersion": "v1", "kind": "Service",
				"metadata": map[string]any{"name": name, "labels": labels},
				"spec": map[string]any{
					"selector": map[string]any{"app": name},
					"ports":    []any{map[string]any{"name": "http", "port": int64(80), "targetPort": "http"}},
				},
			}},
		},
	}, nil
}
