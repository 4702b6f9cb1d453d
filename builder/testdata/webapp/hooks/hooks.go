// Package hooks registers the transform hook "size".
package hooks

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"
)

func init() {
	components.RegisterTransform("size", func(_ context.Context, req *components.TransformRequest) (*sdk.Resource, error) {
		// Twice the custom resource's replicas, in an annotation.
		replicas, _, _ := unstructured.NestedInt64(req.Object, "spec", "replicas")
		child := req.Child
		if err := unstructured.SetNestedField(child.Object, strconv.FormatInt(2*replicas, 10), "metadata", "annotations", "example.com/size"); err != nil {
			return nil, err
		}
		return &child, nil
	})
}
