package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/internal/contain"
	"github.com/inrun/inrun/sdk"
)

// GoOptions configure a Go caller.
type GoOptions struct {
	// Timeout bounds one call. Default DefaultTimeout.
	Timeout time.Duration
	// DisableCache makes every Call reach the reconciler, even when its
	// request is the same as last time.
	DisableCache bool
	// Log receives the stack of a reconciler that panicked.
	Log logr.Logger
}

// Go calls a reconciler compiled into the binary, registered in package
// components and named by reconcile.go. It is a Caller like Client: the
// reconciler is given the request an HTTP reconciler would be sent, and
// its Result is read as strictly as an HTTP reply, so that the runtime
// applies it by the same code. Its failures are contained: a panic, an
// error, a Result that is not valid, or no answer within the timeout is a
// *GoError, and the runtime keeps every child, sets Degraded and records
// an Event, as for a reconciler over HTTP. Safe for concurrent use.
type Go struct {
	name string
	fn   sdk.Func
	opts GoOptions
	memo memo
}

var _ Caller = &Go{}

// NewGo returns a Caller of fn, registered as name.
func NewGo(name string, fn sdk.Func, opts GoOptions) *Go {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Go{name: name, fn: fn, opts: opts}
}

// Name returns the name the reconciler is registered by.
func (g *Go) Name() string { return g.name }

// BuildGo builds the Caller of bp's Go reconciler (reconcile.go) with the
// Constructor reg has under its name. The constructor is given reader and
// log; a missing name is an error saying how to build an inrun that has
// it, and a constructor that fails or panics is an error with its message.
func BuildGo(bp *ir.Blueprint, reg *components.Registry, reader client.Reader, log logr.Logger) (*Go, error) {
	spec := bp.Reconcile.Remote
	if err := reg.Check(bp); err != nil {
		return nil, err
	}
	name := spec.Go.Name
	newFn, _ := reg.Reconciler(name)
	fn, err := construct(newFn, components.ReconcilerOptions{Name: name, Blueprint: bp.Name, Reader: reader, Log: log})
	if err != nil {
		return nil, fmt.Errorf("blueprint %s: building Go reconciler %q: %w", bp.Name, name, err)
	}
	if fn == nil {
		return nil, fmt.Errorf("blueprint %s: the constructor of Go reconciler %q returned no reconciler", bp.Name, name)
	}
	return NewGo(name, fn, GoOptions{Timeout: spec.Timeout, Log: log}), nil
}

func construct(newFn components.Constructor, o components.ReconcilerOptions) (fn sdk.Func, err error) {
	defer func() {
		if p := recover(); p != nil {
			fn, err = nil, fmt.Errorf("its constructor panicked: %v", p)
		}
	}()
	return newFn(o)
}

// Call gives req to the reconciler and returns its Result. A request
// whose canonical JSON is the same as that of the last successful call
// for the same custom resource, when that call's Result asked for no
// requeue, does not reach it: the last Result is returned with Cached set,
// as Client does. A failure is a *GoError, unless ctx ended first.
//
// A reconciler that does not return within the timeout is left running:
// Go cannot stop a goroutine. Its context is cancelled, and whatever it
// returns later is dropped; a reconciler must honour its context.
func (g *Go) Call(ctx context.Context, req *sdk.Request) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("remote: the runtime built an invalid request: %w", err)
	}
	body, err := canonical(req)
	if err != nil {
		return nil, fmt.Errorf("remote: encoding the request: %w", err)
	}
	key := g.memo.key(req, body, g.opts.DisableCache)
	if cached := g.memo.get(key); cached != nil {
		return cached, nil
	}
	res, err := g.call(ctx, body, req.Finalizing)
	g.memo.put(key, res, err)
	if err != nil {
		return nil, err
	}
	return &Result{Result: *res, Attempts: 1}, nil
}

// Forget drops what the Go caller remembers of the custom resource ref.
func (g *Go) Forget(ref sdk.ObjectRef) { g.memo.forget(ref) }

// call runs the reconciler on the request body decodes to, contained (a
// panic or a timeout is an error, never the process's end), and reads its
// Result back through JSON: what an HTTP reconciler would have sent.
func (g *Go) call(ctx context.Context, body []byte, finalizing bool) (*sdk.Result, error) {
	// The reconciler gets a request of its own, with JSON's numbers, as a
	// reconciler over HTTP would: never the runtime's objects.
	req, err := sdk.DecodeRequest(body)
	if err != nil {
		return nil, fmt.Errorf("remote: decoding the request the runtime built: %w", err)
	}
	res, err := contain.Call(ctx, g.opts.Timeout, func(ctx context.Context) (*sdk.Result, error) { return g.fn(ctx, req) })
	var pe *contain.PanicError
	var ge *GoError
	switch {
	case err == nil:
		return g.read(res, finalizing)
	case errors.As(err, &pe):
		g.opts.Log.Error(err, "Go reconciler panicked", "reconciler", g.name, "stack", string(pe.Stack))
		return nil, &GoError{Kind: Panicked, Name: g.name, Err: err}
	case errors.Is(err, contain.ErrTimeout):
		return nil, &GoError{Kind: Timeout, Name: g.name, Err: err}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("Go reconciler %q: %w", g.name, err)
	case errors.As(err, &ge):
		return nil, ge
	default:
		return nil, &GoError{Kind: Failed, Name: g.name, Err: err}
	}
}

// read turns what the reconciler returned into the Result an HTTP reply
// with its JSON would be, checked by the same strict reader.
func (g *Go) read(res *sdk.Result, finalizing bool) (*sdk.Result, error) {
	if res == nil {
		res = &sdk.Result{}
	}
	out := *res
	if out.APIVersion == "" {
		out.APIVersion = sdk.APIVersion
	}
	if out.Kind == "" {
		out.Kind = sdk.KindResult
	}
	data, err := json.Marshal(&out)
	if err != nil {
		return nil, &GoError{Kind: BadReply, Name: g.name, Err: err}
	}
	decoded, err := sdk.DecodeResult(data, finalizing)
	if err != nil {
		return nil, &GoError{Kind: BadReply, Name: g.name, Err: err}
	}
	return decoded, nil
}

// Kinds of GoError besides Timeout and BadReply, which mean what they mean
// for a Client.
const (
	// Panicked: the Go reconciler panicked.
	Panicked Kind = "Panicked"
	// Failed: the Go reconciler returned an error.
	Failed Kind = "Failed"
)

// GoError is a failed call of a Go reconciler.
type GoError struct {
	// Kind is Panicked, Failed, Timeout or BadReply.
	Kind Kind
	// Name is the name the reconciler is registered by.
	Name string
	Err  error
}

func (e *GoError) Error() string {
	switch e.Kind {
	case Panicked:
		return fmt.Sprintf("Go reconciler %q panicked: %v (the stack is in inrun's log)", e.Name, e.Err)
	case Timeout:
		return fmt.Sprintf("Go reconciler %q did not answer in time: %v (make it return sooner and stop when its context is done, or raise reconcile.timeout)", e.Name, e.Err)
	case BadReply:
		return fmt.Sprintf("Go reconciler %q returned an invalid Result: %v", e.Name, e.Err)
	default:
		return fmt.Sprintf("Go reconciler %q failed: %v", e.Name, e.Err)
	}
}

func (e *GoError) Unwrap() error { return e.Err }
