package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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
		return nil, hookError(ctx, "transform", name, err)
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

// hookError says how the what hook named name failed: a panic (its stack
// logged), no answer in time, or the error it returned.
func hookError(ctx context.Context, what, name string, err error) error {
	var pe *contain.PanicError
	switch {
	case errors.As(err, &pe):
		logr.FromContextOrDiscard(ctx).Error(err, "Go "+what+" hook panicked", what, name, "stack", string(pe.Stack))
		return fmt.Errorf("Go %s %q panicked: %v (the stack is in inrun's log)", what, name, err)
	case errors.Is(err, contain.ErrTimeout):
		return fmt.Errorf("Go %s %q did not answer in time: %v (make it return sooner and stop when its context is done)", what, name, err)
	default:
		return fmt.Errorf("Go %s %q failed: %w", what, name, err)
	}
}

// extraArgs runs the Blueprint's args hook (go.args) and merges what it
// returns into args, which reconcile.args evaluated to. A key both set is
// an error: each argument has one author.
func (p *pass) extraArgs(ctx context.Context, args map[string]any) error {
	name := p.bp.Hooks.Args.Name
	req := &components.ArgsRequest{Object: wireObject(p.cr), Args: runtime.DeepCopyJSON(args)}
	out, err := contain.Call(ctx, p.opts.HookTimeout, func(ctx context.Context) (map[string]any, error) { return p.argsHook(ctx, req) })
	if err != nil {
		return hookError(ctx, "args", name, err)
	}
	extra, err := jsonFields(out)
	if err != nil {
		return fmt.Errorf("Go args %q returned an invalid value: %w", name, err)
	}
	for _, k := range sortedKeys(extra) {
		if _, ok := args[k]; ok {
			return fmt.Errorf("Go args %q returned %q, which reconcile.args sets too: leave it to one of them", name, k)
		}
		args[k] = extra[k]
	}
	return nil
}

// hookStatus runs the Blueprint's status hook (go.status) and adds the
// fields it returns to status. A field emit.status declares, or one the
// runtime writes, is refused. When the hook fails, the fields the custom
// resource has that nothing else sets are kept as they are, and the
// failure is an error of the pass (Degraded, with an Event).
func (p *pass) hookStatus(ctx context.Context, status, liveStatus map[string]any) {
	name := p.bp.Hooks.Status.Name
	keepLive := func() {
		for k, v := range liveStatus {
			if _, set := status[k]; !set && k != "conditions" && k != "observedGeneration" && (p.bp.Status == nil || p.bp.Status.Lookup(k) == nil) {
				status[k] = v
			}
		}
	}
	children := map[string][]map[string]any{}
	for _, c := range p.bp.Children {
		objs := p.items[c.ID]
		if len(c.ForEach) == 0 && !c.Selector {
			objs = nil
			if live := p.live[c.ID]; live != nil {
				objs = append(objs, live)
			}
		}
		list := make([]map[string]any, 0, len(objs))
		for _, o := range objs {
			list = append(list, wireObject(p.whole(o)))
		}
		children[c.ID] = list
	}
	req := &components.StatusRequest{Object: wireObject(p.cr), Children: children, Status: runtime.DeepCopyJSON(status)}
	out, err := contain.Call(ctx, p.opts.HookTimeout, func(ctx context.Context) (map[string]any, error) { return p.statusHook(ctx, req) })
	if err != nil {
		err = hookError(ctx, "status", name, err)
	}
	if err == nil {
		// Before the contract's reader, whose message speaks of a Result.
		for _, k := range sortedKeys(out) {
			if k == "conditions" || k == "observedGeneration" || (p.bp.Status != nil && p.bp.Status.Lookup(k) != nil) {
				err = fmt.Errorf("Go status %q returned status.%s, which emit.status or the runtime writes: leave it to one of them", name, k)
				break
			}
		}
	}
	if err == nil {
		if out, err = jsonFields(out); err != nil {
			err = fmt.Errorf("Go status %q returned an invalid value: %w", name, err)
		}
	}
	if err != nil {
		p.rep.Errors = append(p.rep.Errors, err)
		p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeWarning, "HookFailed", "Reconcile", "%v", err)
		keepLive()
		return
	}
	for k, v := range out {
		status[k] = v
	}
}

// jsonFields reads what a hook returned as JSON would have it (whole
// numbers int64, Go's own types as their JSON), through the contract's
// strict reader of a Result's status.
func jsonFields(m map[string]any) (map[string]any, error) {
	if len(m) == 0 {
		return map[string]any{}, nil
	}
	data, err := json.Marshal(&sdk.Result{APIVersion: sdk.APIVersion, Kind: sdk.KindResult, Status: m})
	if err != nil {
		return nil, err
	}
	res, err := sdk.DecodeResult(data, false)
	if err != nil {
		return nil, err
	}
	return res.Status, nil
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
