package compiler

import (
	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// hooks reads the top-level go section: the Blueprint's own Go hooks,
// {args: NAME, status: NAME}.
func (d *decoder) hooks(top *yamlpos.Map) {
	n := top.Get("go")
	if n == nil {
		return
	}
	o := d.Map(n, "go")
	if o == nil {
		return
	}
	d.Only(o, "args", "status")
	h := &ir.Hooks{Pos: d.Pos(n)}
	h.Args = d.goName(o, "go", "args", components.Args, false)
	h.Status = d.goName(o, "go", "status", components.Status, false)
	if h.Args == nil && h.Status == nil {
		d.add(d.Pos(top.KeyNode("go")), diag.MissingField, "name a hook, go: {args: NAME} or go: {status: NAME}, or remove go", "go names no hook")
		return
	}
	if r := d.bp.Reconcile; h.Args != nil && (r == nil || r.Remote == nil) {
		d.add(h.Args.Pos, diag.InvalidValue, "set reconcile.url, service, api or go.name, whose request gets the args; templates read the custom resource directly", "go.args computes arguments for a reconciler, and this Blueprint calls none")
	}
	d.bp.Hooks = h
}

// reconcileGo reads reconcile.go: {name: NAME}, a reconciler built from a
// constructor, or {controller: NAME}, a controller-runtime reconciler.
func (d *decoder) reconcileGo(n *yaml.Node, rem *ir.Remote) {
	o := d.Map(n, "reconcile.go")
	if o == nil {
		return
	}
	d.Only(o, "name", "controller")
	switch {
	case o.Get("name") != nil && o.Get("controller") != nil:
		d.add(d.Pos(o.KeyNode("controller")), diag.InvalidValue, "keep name for a reconciler that returns a Result, or controller for a controller-runtime Reconcile", "reconcile.go has both name and controller")
	case o.Get("controller") != nil:
		rem.Controller = d.goName(o, "reconcile.go", "controller", components.Controller, true)
	default:
		rem.Go = d.goName(o, "reconcile.go", "name", components.Reconciler, true)
	}
}

// controllerAlone refuses beside reconcile.go.controller what the runtime
// would do in a pass of its own: a controller-runtime reconciler owns the
// custom resource, its objects and its status.
func (d *decoder) controllerAlone(top *yamlpos.Map) {
	r := d.bp.Reconcile
	if r == nil || r.Remote == nil || r.Remote.Controller == nil {
		return
	}
	const hint = "a controller-runtime reconciler (reconcile.go.controller) owns the custom resource, its objects and its status, and inrun runs no pass of its own beside it: do this in the reconciler, or use reconcile.go.name for a reconciler that returns a Result"
	for _, key := range []string{"onCreate", "onReconcile", "emit", "go"} {
		if kn := top.KeyNode(key); kn != nil {
			d.add(d.Pos(kn), diag.InvalidValue, hint, "%s cannot be used with reconcile.go.controller", key)
		}
	}
	if r.Args != nil {
		d.add(r.Args.Pos, diag.InvalidValue, hint, "reconcile.args cannot be used with reconcile.go.controller")
	}
}
