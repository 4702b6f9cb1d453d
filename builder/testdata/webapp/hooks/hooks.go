// Package hooks registers the transform hook "size".
package hooks

import (
	"context"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"
)

func init() {
	components.RegisterTransform("size", func(_ context.Context, req *components.TransformRequest) (*sdk.Resource, error) {
		return nil, nil // apply the child as rendered
	})
}
