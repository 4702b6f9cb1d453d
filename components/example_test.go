package components_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"
)

// A module registers its reconciler and hooks from init; a Blueprint
// names them in reconcile.go and on a child's go.transform.
func Example() {
	// In a module, these calls go in func init() and use the package
	// functions components.RegisterReconciler and RegisterTransform, which
	// register in components.Default.
	reg := &components.Registry{}
	reg.RegisterReconciler("webapp", func(o components.ReconcilerOptions) (sdk.Func, error) {
		return func(ctx context.Context, req *sdk.Request) (*sdk.Result, error) {
			if req.Finalizing {
				return &sdk.Result{Done: true}, nil
			}
			return &sdk.Result{Status: map[string]any{"phase": "Running"}}, nil
		}, nil
	})
	reg.RegisterTransform("size", func(ctx context.Context, req *components.TransformRequest) (*sdk.Resource, error) {
		replicas, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas")
		if err := unstructured.SetNestedField(req.Child.Object, replicas*2, "spec", "replicas"); err != nil {
			return nil, err
		}
		return &req.Child, nil
	})
	if err := reg.Err(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(reg.Names(components.Reconciler), reg.Names(components.Transform))
	// Output: [webapp] [size]
}
