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
	// Name is the registered name.
	Name string
	// Package is the import path of the package whose init registered it.
	Package string
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

// Registry holds registered reconcilers and hooks by name, each kind in
// its own namespace of names. The zero value is empty and ready to use;
// it is safe for concurrent use.
type Registry struct {
	mu          sync.Mutex
	reconcilers map[string]reconcilerEntry
	transforms  map[string]transformEntry
	errs        []error
}

type transformEntry struct {
	Registration
	fn TransformFunc
}

type reconcilerEntry struct {
	Registration
	new Constructor
}

// Default is the registry the Register functions add to and inrun reads.
var Default = &Registry{}

// RegisterReconciler registers a reconciler in Default under name. Call it
// from an init function.
func RegisterReconciler(name string, c Constructor) {
	Default.registerReconciler(name, c, callerPackage())
}

// RegisterReconciler registers a reconciler under name.
func (r *Registry) RegisterReconciler(name string, c Constructor) {
	r.registerReconciler(name, c, callerPackage())
}

// RegisterTransform registers a transform hook in Default under name.
// Call it from an init function.
func RegisterTransform(name string, fn TransformFunc) {
	Default.registerTransform(name, fn, callerPackage())
}

// RegisterTransform registers a transform hook under name.
func (r *Registry) RegisterTransform(name string, fn TransformFunc) {
	r.registerTransform(name, fn, callerPackage())
}

func (r *Registry) registerTransform(name string, fn TransformFunc, pkg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.valid("transform", name, fn == nil, pkg) {
		return
	}
	if prev, ok := r.transforms[name]; ok {
		r.errs = append(r.errs, fmt.Errorf("transform %q is registered twice, by %s and by %s: rename one", name, prev.Package, pkg))
		return
	}
	if r.transforms == nil {
		r.transforms = map[string]transformEntry{}
	}
	r.transforms[name] = transformEntry{Registration: Registration{Name: name, Package: pkg}, fn: fn}
}

// valid records what is wrong with registering a what named name by pkg,
// and reports whether nothing is.
func (r *Registry) valid(what, name string, isNil bool, pkg string) bool {
	switch {
	case !ValidName(name):
		r.errs = append(r.errs, fmt.Errorf("%s registers a %s named %q: a name is lower-case letters, digits, '-' and '.', at most 63, starting and ending with a letter or digit", pkg, what, name))
		return false
	case isNil:
		r.errs = append(r.errs, fmt.Errorf("%s registers %s %q with a nil function", pkg, what, name))
		return false
	}
	return true
}

// nameRE is a registered name: a DNS label, as Kubernetes names are, with
// dots allowed to qualify it (webapp, shop.webapp).
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// ValidName reports whether name may be registered: lower-case letters,
// digits, '-' and '.', at most 63, starting and ending with a letter or
// digit.
func ValidName(name string) bool { return len(name) <= 63 && nameRE.MatchString(name) }

func (r *Registry) registerReconciler(name string, c Constructor, pkg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.valid("reconciler", name, c == nil, pkg) {
		return
	}
	if prev, ok := r.reconcilers[name]; ok {
		r.errs = append(r.errs, fmt.Errorf("reconciler %q is registered twice, by %s and by %s: rename one", name, prev.Package, pkg))
		return
	}
	if r.reconcilers == nil {
		r.reconcilers = map[string]reconcilerEntry{}
	}
	r.reconcilers[name] = reconcilerEntry{Registration: Registration{Name: name, Package: pkg}, new: c}
}

// Err reports every registration that was refused, or nil.
func (r *Registry) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// Reconciler returns the Constructor registered under name.
func (r *Registry) Reconciler(name string) (Constructor, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.reconcilers[name]
	return e.new, ok
}

// Transform returns the transform hook registered under name.
func (r *Registry) Transform(name string) (TransformFunc, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.transforms[name]
	return e.fn, ok
}

// Reconcilers lists the registered reconcilers, sorted by name.
func (r *Registry) Reconcilers() []Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sorted(r.reconcilers, func(e reconcilerEntry) Registration { return e.Registration })
}

// Transforms lists the registered transform hooks, sorted by name.
func (r *Registry) Transforms() []Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sorted(r.transforms, func(e transformEntry) Registration { return e.Registration })
}

func sorted[E any](m map[string]E, reg func(E) Registration) []Registration {
	out := make([]Registration, 0, len(m))
	for _, e := range m {
		out = append(out, reg(e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names lists the registered names of kind what ("reconciler" or
// "transform"), sorted.
func (r *Registry) Names(what string) []string {
	var regs []Registration
	switch what {
	case Reconciler:
		regs = r.Reconcilers()
	case Transform:
		regs = r.Transforms()
	}
	names := make([]string, len(regs))
	for i, reg := range regs {
		names[i] = reg.Name
	}
	return names
}

// Has reports whether r has a what ("reconciler" or "transform") named
// name.
func (r *Registry) Has(what, name string) bool {
	switch what {
	case Reconciler:
		_, ok := r.Reconciler(name)
		return ok
	case Transform:
		_, ok := r.Transform(name)
		return ok
	}
	return false
}

// Empty reports whether nothing is registered: a plain inrun.
func (r *Registry) Empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reconcilers) == 0 && len(r.transforms) == 0
}

// The kinds of registration, as Needed.What names them.
const (
	Reconciler = "reconciler"
	Transform  = "transform"
)

// Needed is one name a Blueprint needs, and where it names it.
type Needed struct {
	// What is the kind of registration: Reconciler or Transform.
	What string
	Name string
	Pos  ir.Pos
}

func (n Needed) String() string { return fmt.Sprintf("%s %q (%s)", n.What, n.Name, n.Pos) }

// Needs lists the Go code bp names, in Blueprint order: each child's
// transform, then the reconciler.
func Needs(bp *ir.Blueprint) []Needed {
	var out []Needed
	for _, c := range bp.Children {
		if c.Transform != nil {
			out = append(out, Needed{What: Transform, Name: c.Transform.Name, Pos: c.Transform.Pos})
		}
	}
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil && bp.Reconcile.Remote.Go != nil {
		g := bp.Reconcile.Remote.Go
		out = append(out, Needed{What: Reconciler, Name: g.Name, Pos: g.Pos})
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
	var kinds []string
	for _, what := range []string{Reconciler, Transform} {
		if names := r.Names(what); len(names) > 0 {
			kinds = append(kinds, what+"s "+strings.Join(names, ", "))
		}
	}
	if len(kinds) > 0 {
		has = "it has " + strings.Join(kinds, "; ")
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
