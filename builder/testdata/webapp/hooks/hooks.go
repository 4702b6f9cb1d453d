// Package hooks registers the transform hook "size".
package hooks

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"

	v1 "example.com/webapp/api/v1"
)

func init() {
	components.RegisterTransform("size", size)
}

// size annotates the child with twice the custom resource's replicas,
// read through the Go types inrun generate api wrote from the Blueprint's
// CRD: a field the CRD does not have would not compile.
func size(_ context.Context, req *components.TransformRequest) (*sdk.Resource, error) {
	app, err := components.Decode[v1.WebApp](req.Object)
	if err != nil {
		return nil, err
	}
	child := req.Child
	if err := unstructured.SetNestedField(child.Object, strconv.FormatInt(2*app.Spec.Replicas, 10), "metadata", "annotations", "example.com/size"); err != nil {
		return nil, err
	}
	return &child, nil
}
