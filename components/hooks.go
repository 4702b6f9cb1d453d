package components

import "context"

// ArgsRequest is what an args hook is given: the custom resource, and the
// arguments reconcile.args evaluated to.
type ArgsRequest struct {
	// Object is the custom resource, as a reconciler's request has it.
	Object map[string]any
	// Args are what reconcile.args evaluated to, a copy; empty when the
	// Blueprint declares none.
	Args map[string]any
}

// ArgsFunc is a hook that computes extra arguments for a Blueprint's
// reconciler (go: {args: NAME} at the top of the Blueprint). What it
// returns is merged into the request's args before each call; a key that
// reconcile.args already sets is an error, so each argument has one
// author. It runs before every call, so it must answer the same request
// the same way, and quickly.
type ArgsFunc func(ctx context.Context, req *ArgsRequest) (map[string]any, error)

// StatusRequest is what a status hook is given: the custom resource, its
// children as the pass left them, and the status the Blueprint declared.
type StatusRequest struct {
	// Object is the custom resource, as a reconciler's request has it.
	Object map[string]any
	// Children are the live children by id, copies: one object for a
	// single child, every object of a collection, none for a child that
	// does not exist (yet).
	Children map[string][]map[string]any
	// Status is what emit.status and the reconciler set this pass, a copy.
	Status map[string]any
}

// StatusFunc is a hook that computes status fields after the pass applied
// the children (go: {status: NAME} at the top of the Blueprint). What it
// returns is written under .status beside the fields emit.status declares;
// a field emit.status declares, conditions and observedGeneration are the
// runtime's and refused. It runs on every pass: answer the same request
// the same way, and quickly.
type StatusFunc func(ctx context.Context, req *StatusRequest) (map[string]any, error)

// RegisterArgs registers an args hook in Default under name. Call it from
// an init function.
func RegisterArgs(name string, fn ArgsFunc) {
	Default.register(Args, name, fn, fn == nil, callerPackage())
}

// RegisterArgs registers an args hook under name.
func (r *Registry) RegisterArgs(name string, fn ArgsFunc) {
	r.register(Args, name, fn, fn == nil, callerPackage())
}

// RegisterStatus registers a status hook in Default under name. Call it
// from an init function.
func RegisterStatus(name string, fn StatusFunc) {
	Default.register(Status, name, fn, fn == nil, callerPackage())
}

// RegisterStatus registers a status hook under name.
func (r *Registry) RegisterStatus(name string, fn StatusFunc) {
	r.register(Status, name, fn, fn == nil, callerPackage())
}

// ArgsHook returns the args hook registered under name.
func (r *Registry) ArgsHook(name string) (ArgsFunc, bool) {
	fn, ok := r.lookup(Args, name)
	f, _ := fn.(ArgsFunc)
	return f, ok
}

// StatusHook returns the status hook registered under name.
func (r *Registry) StatusHook(name string) (StatusFunc, bool) {
	fn, ok := r.lookup(Status, name)
	f, _ := fn.(StatusFunc)
	return f, ok
}
