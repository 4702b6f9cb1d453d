package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/internal/contain"
	"github.com/inrun/inrun/sdk"
)

// transform runs c's Go hook (go.transform) on the object its template
// rendered, and returns the object to apply. Without a hook m is returned
// as it is. The hook is contained: a panic, an error, no answer within
// Options.HookTimeout, or an object whose identity it changed is an error
// of the child, which is then kept as it is, as when an expression fails.
func (p *pass) transform(ctx context.Context, c *ir.Child, m map[string]any) (map[string]any, error) {
	if c.Transform == nil {
		return m, nil
	}
	name := c.Transform.Name
	fn := p.transforms[name]
	// The hook gets copies (whole numbers int64, as a reconciler's
	// request has them): never the runtime's objects.
	req := &components.TransformRequest{Object: wireObject(p.cr), Child: sdk.Resource{ID: c.ID, Object: runtime.DeepCopyJSON(m)}}
	res, err := contain.Call(ctx, p.opts.HookTimeout, func(ctx context.Context) (*sdk.Resource, error) { return fn(ctx, req) })
	if err != nil {
		var pe *contain.PanicError
		switch {
		case errors.As(err, &pe):
			logr.FromContextOrDiscard(ctx).Error(err, "Go transform panicked", "transform", name, "stack", string(pe.Stack))
			return nil, fmt.Errorf("Go transform %q panicked: %v (the stack is in inrun's log)", name, err)
		case errors.Is(err, contain.ErrTimeout):
			return nil, fmt.Errorf("Go transform %q did not answer in time: %v (make it return sooner and stop when its context is done)", name, err)
		default:
			return nil, fmt.Errorf("Go transform %q failed: %w", name, err)
		}
	}
	if res == nil {
		return m, nil
	}
	out, ok := jsonCopy(res.Object)
	if !ok {
		// Go's own types (an int, a struct): read it as JSON would be.
		var err error
		if out, err = readResource(res); err != nil {
			return nil, fmt.Errorf("Go transform %q returned an invalid object: %w", name, err)
		}
	}
	if was, is := identity(m), identity(out); was != is {
		return nil, fmt.Errorf("Go transform %q changed the child's identity from %s to %s; it may change anything but apiVersion, kind, name and namespace, which the template sets", name, was, is)
	}
	return out, nil
}

// jsonCopy copies obj when it holds JSON's types only (as unstructured
// objects do: int64, float64, string, bool, maps and slices of them), so
// that the hook keeps no hold on what is applied; ok is false otherwise.
func jsonCopy(obj map[string]any) (out map[string]any, ok bool) {
	defer func() {
		if recover() != nil {
			out, ok = nil, false
		}
	}()
	return runtime.DeepCopyJSON(obj), true
}

// readResource reads what a hook returned as the contract's strict reader
// reads a resource of a Result: JSON's types, apiVersion, kind and
// metadata.name required.
func readResource(res *sdk.Resource) (map[string]any, error) {
	data, err := json.Marshal(&sdk.Result{APIVersion: sdk.APIVersion, Kind: sdk.KindResult, Resources: []sdk.Resource{{Object: res.Object}}})
	if err != nil {
		return nil, err
	}
	decoded, err := sdk.DecodeResult(data, false)
	if err != nil {
		return nil, err
	}
	return decoded.Resources[0].Object, nil
}

// identity is what a transform may not change of an object: "apps/v1
// Deployment shop/web", or without the namespace when it has none.
func identity(obj map[string]any) string {
	r := sdk.Resource{Object: obj}
	name := r.Name()
	if ns := r.Namespace(); ns != "" {
		name = ns + "/" + name
	}
	return r.APIVersion() + " " + r.Kind() + " " + name
}
