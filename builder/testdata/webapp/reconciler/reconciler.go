// Package reconciler registers the Go reconciler "webapp".
package reconciler

import (
	"context"

	"example.com/greeting"
	"example.com/webapp/internal/names"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"
)

func init() {
	components.RegisterReconciler(names.Reconciler, func(components.ReconcilerOptions) (sdk.Func, error) {
		return reconcile, nil
	})
}

func reconcile(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
	if req.Finalizing {
		return &sdk.Result{Done: true}, nil
	}
	name := sdk.Resource{Object: req.Object}.Name()
	return &sdk.Result{
		Status: map[string]any{"phase": greeting.Phase},
		Resources: []sdk.Resource{{ID: "config", Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name},
			"data":     map[string]any{"image": req.Args["image"]},
		}}},
	}, nil
}
