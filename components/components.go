package components

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/sdk"
)

// ReconcilerOptions is what a Constructor is given, once, when the runtime
// starts a Blueprint that names its reconciler.
type ReconcilerOptions struct {
	// Name is the name the reconciler was registered and named by.
	Name string
	// Blueprint is the metadata.name of the Blueprint that names it. One
	// reconciler may serve several Blueprints; each gets its own.
	Blueprint string
	// Reader reads the cluster through the runtime's cache, for what the
	// request does not carry. A reconciler whose Result depends on it
	// returns requeueAfter, as any reconciler whose answer depends on
	// something outside the request must. It never writes: the runtime
	// does every write from the Result.
	Reader client.Reader
	// Log is the runtime's logger, named after the Blueprint.
	Log logr.Logger
}

// Constructor builds a reconciler. An error stops the Blueprint from
// starting, with the error's message.
type Constructor func(ReconcilerOptions) (sdk.Func, error)

// Registration is one name a package registered.
type Registration struct {
	// What is the kind of registration: Reconciler, Transform, Args,
	// Status, Controller or Scheme.
	What string
	// Name is the registered name.
	Name string
	// Package is the import path of the package whose init registered it.
	Package string
	// Kinds are the group/version/kinds a Scheme registration adds, as
	// "group/version, Kind=Name"; empty for the other kinds.
	Kinds []string `json:",omitempty"`
}

// TransformRequest is what a transform hook is given: the custom
// resource and one child its Blueprint rendered.
type TransformRequest struct {
	// Object is the custom resource, as a reconciler's request has it.
	Object map[string]any
	// Child is the rendered child: its id in the Blueprint, and the object
	// as the template rendered it, before the runtime's labels.
	Child sdk.Resource
}

// TransformFunc is a hook that changes a child a Blueprint rendered before
// the runtime applies it (go: {transform: NAME} on the child). It returns
// the object to apply, or nil to apply it as rendered. It must not change
// the child's apiVersion, kind, name or namespace: the template sets them,
// and RBAC, watches and prune derive from them. Like a reconciler, it
// must answer the same request the same way.
type TransformFunc func(ctx context.Context, req *TransformRequest) (*sdk.Resource, error)

// Registry holds registered reconcilers, hooks, controllers and scheme
// additions by name, each kind in its own namespace of names. The zero
// value is empty and ready to use; it is safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	entries map[string]map[string]entry // by kind, then by name
	errs    []error
}

// entry is one registration and its function, whose type the kind fixes.
type entry struct {
	Registration
	fn any
}

// Default is the registry the Register functions add to and inrun reads.
var Default = &Registry{}

// RegisterReconciler registers a reconciler in Default under name. Call it
// from an init function.
func RegisterReconciler(name string, c Constructor) {
	Default.register(Reconciler, name, c, c == nil, callerPackage())
}

// RegisterReconciler registers a reconciler under name.
func (r *Registry) RegisterReconciler(name string, c Constructor) {
	r.register(Reconciler, name, c, c == nil, callerPackage())
}

// RegisterTransform registers a transform hook in Default under name.
// Call it from an init function.
func RegisterTransform(name string, fn TransformFunc) {
	Default.register(Transform, name, fn, fn == nil, callerPackage())
}

// RegisterTransform registers a transform hook under name.
func (r *Registry) RegisterTransform(name string, fn TransformFunc) {
	r.register(Transform, name, fn, fn == nil, callerPackage())
}

// register records fn as the what named name, registered by pkg, or the
// mistake in doing so.
func (r *Registry) register(what, name string, fn any, isNil bool, pkg string) {
	r.registerEntry(entry{Registration: Registration{What: what, Name: name, Package: pkg}, fn: fn}, isNil)
}

func (r *Registry) registerEntry(e entry, isNil bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	what, name, pkg := e.What, e.Name, e.Package
	switch {
	case what == Scheme && !validGroupVersion(name):
		r.errs = append(r.errs, fmt.Errorf("%s registers a scheme named %q: name a scheme by the group/version it adds, such as webapp.my.domain/v1", pkg, name))
		return
	case what != Scheme && !ValidName(name):
		r.errs = append(r.errs, fmt.Errorf("%s registers a %s named %q: a name is lower-case letters, digits, '-' and '.', at most 63, starting and ending with a letter or digit", pkg, what, name))
		return
	case isNil:
		r.errs = append(r.errs, fmt.Errorf("%s registers %s %q with a nil function", pkg, what, name))
		return
	}
	if prev, ok := r.entries[what][name]; ok {
		r.errs = append(r.errs, fmt.Errorf("%s %q is registered twice, by %s and by %s: rename one", what, name, prev.Package, pkg))
		return
	}
	if r.entries == nil {
		r.entries = map[string]map[string]entry{}
	}
	if r.entries[what] == nil {
		r.entries[what] = map[string]entry{}
	}
	r.entries[what][name] = e
}

// nameRE is a registered name: a DNS label, as Kubernetes names are, with
// dots allowed to qualify it (webapp, shop.webapp).
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// ValidName reports whether name may be registered: lower-case letters,
// digits, '-' and '.', at most 63, starting and ending with a letter or
// digit.
func ValidName(name string) bool { return len(name) <= 63 && nameRE.MatchString(name) }

// validGroupVersion reports whether name is group/version, each part a
// valid name.
func validGroupVersion(name string) bool {
	group, version, ok := strings.Cut(name, "/")
	return ok && ValidName(group) && ValidName(version)
}

// Err reports every registration that was refused, or nil.
func (r *Registry) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// lookup returns the function registered as the what named name.
func (r *Registry) lookup(what, name string) (any, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[what][name]
	return e.fn, ok
}

// Reconciler returns the Constructor registered under name.
func (r *Registry) Reconciler(name string) (Constructor, bool) {
	fn, ok := r.lookup(Reconciler, name)
	c, _ := fn.(Constructor)
	return c, ok
}

// Transform returns the transform hook registered under name.
func (r *Registry) Transform(name string) (TransformFunc, bool) {
	fn, ok := r.lookup(Transform, name)
	f, _ := fn.(TransformFunc)
	return f, ok
}

// List lists the registrations of kind what, sorted by name.
func (r *Registry) List(what string) []Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Registration, 0, len(r.entries[what]))
	for _, e := range r.entries[what] {
		out = append(out, e.Registration)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Reconcilers lists the registered reconcilers, sorted by name.
func (r *Registry) Reconcilers() []Registration { return r.List(Reconciler) }

// Transforms lists the registered transform hooks, sorted by name.
func (r *Registry) Transforms() []Registration { return r.List(Transform) }

// Names lists the registered names of kind what (Reconciler, Transform,
// Args, Status, Controller or Scheme), sorted.
func (r *Registry) Names(what string) []string {
	regs := r.List(what)
	names := make([]string, len(regs))
	for i, reg := range regs {
		names[i] = reg.Name
	}
	return names
}

// Has reports whether r has a what named name.
func (r *Registry) Has(what, name string) bool {
	_, ok := r.lookup(what, name)
	return ok
}

// Empty reports whether nothing is registered: a plain inrun.
func (r *Registry) Empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.entries {
		if len(m) > 0 {
			return false
		}
	}
	return true
}

// The kinds of registration, as Needed.What names them.
const (
	Reconciler = "reconciler"
	Transform  = "transform"
	Args       = "args"
	Status     = "status"
	Controller = "controller"
	Scheme     = "scheme"
)

// kinds are the kinds of registration, in the order they are listed.
var kinds = []string{Reconciler, Controller, Transform, Args, Status, Scheme}

// Plural names several registrations of kind what, as messages list them:
// reconcilers, transforms, args hooks, status hooks, controllers, schemes.
func Plural(what string) string {
	switch what {
	case Args, Status:
		return what + " hooks"
	}
	return what + "s"
}

// Needed is one name a Blueprint needs, and where it names it.
type Needed struct {
	// What is the kind of registration: Reconciler, Controller,
	// Transform, Args or Status.
	What string
	Name string
	Pos  ir.Pos
}

func (n Needed) String() string { return fmt.Sprintf("%s %q (%s)", n.What, n.Name, n.Pos) }

// Needs lists the Go code bp names, in Blueprint order: each child's
// transform, the Blueprint's hooks, then its reconciler or controller.
func Needs(bp *ir.Blueprint) []Needed {
	var out []Needed
	add := func(what string, g *ir.GoRef) {
		if g != nil {
			out = append(out, Needed{What: what, Name: g.Name, Pos: g.Pos})
		}
	}
	for _, c := range bp.Children {
		add(Transform, c.Transform)
	}
	if h := bp.Hooks; h != nil {
		add(Args, h.Args)
		add(Status, h.Status)
	}
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil {
		add(Reconciler, bp.Reconcile.Remote.Go)
		add(Controller, bp.Reconcile.Remote.Controller)
	}
	return out
}

// Missing lists what bp needs that r does not have.
func (r *Registry) Missing(bp *ir.Blueprint) []Needed {
	var out []Needed
	for _, n := range Needs(bp) {
		if !r.Has(n.What, n.Name) {
			out = append(out, n)
		}
	}
	return out
}

// BuildHint says how to get an inrun with a module's Go code compiled in.
const BuildHint = "build an inrun with the Go module that registers it compiled in: inrun build --with MODULE=PATH (see docs/typed.md)"

// Check returns an error naming everything bp needs that r lacks, what r
// has instead, and how to build the right inrun; nil when r has it all.
func (r *Registry) Check(bp *ir.Blueprint) error {
	missing := r.Missing(bp)
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, len(missing))
	for i, m := range missing {
		names[i] = m.String()
	}
	has := "it has no Go code compiled in"
	var lists []string
	for _, what := range kinds {
		if names := r.Names(what); len(names) > 0 {
			lists = append(lists, Plural(what)+" "+strings.Join(names, ", "))
		}
	}
	if len(lists) > 0 {
		has = "it has " + strings.Join(lists, "; ")
	}
	return fmt.Errorf("blueprint %s names Go code this inrun does not have: %s; %s. To run it, %s", bp.Name, strings.Join(names, ", "), has, BuildHint)
}

// callerPackage is the import path of the package that called the
// exported Register function calling it.
func callerPackage() string {
	pc, _, _, ok := runtime.Caller(2)
	if !ok {
		return "an unknown package"
	}
	fn := runtime.FuncForPC(pc)
	if fn == nil {
		return "an unknown package"
	}
	return packageOf(fn.Name())
}

// packageOf cuts a function's symbol name, as runtime.Func.Name gives it
// (example.com/m/pkg.init.0, example.com/m/pkg.(*T).M), to its package.
func packageOf(symbol string) string {
	dir, last := "", symbol
	if i := strings.LastIndexByte(symbol, '/'); i >= 0 {
		dir, last = symbol[:i+1], symbol[i+1:]
	}
	if i := strings.IndexByte(last, '.'); i >= 0 {
		last = last[:i]
	}
	return dir + last
}
