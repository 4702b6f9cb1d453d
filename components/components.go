package components

import (
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

// Registry holds registered reconcilers by name. The zero value is empty
// and ready to use; it is safe for concurrent use.
type Registry struct {
	mu          sync.Mutex
	reconcilers map[string]reconcilerEntry
	errs        []error
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
	switch {
	case !ValidName(name):
		r.errs = append(r.errs, fmt.Errorf("%s registers a reconciler named %q: a name is lower-case letters, digits, '-' and '.', at most 63, starting and ending with a letter or digit", pkg, name))
		return
	case c == nil:
		r.errs = append(r.errs, fmt.Errorf("%s registers reconciler %q with a nil Constructor", pkg, name))
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

// Reconcilers lists the registered reconcilers, sorted by name.
func (r *Registry) Reconcilers() []Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Registration, 0, len(r.reconcilers))
	for _, e := range r.reconcilers {
		out = append(out, e.Registration)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Empty reports whether nothing is registered: a plain inrun.
func (r *Registry) Empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reconcilers) == 0
}

// Needed is one name a Blueprint needs, and where it names it.
type Needed struct {
	// What is the kind of registration: "reconciler".
	What string
	Name string
	Pos  ir.Pos
}

func (n Needed) String() string { return fmt.Sprintf("%s %q (%s)", n.What, n.Name, n.Pos) }

// Needs lists the Go code bp names, in Blueprint order.
func Needs(bp *ir.Blueprint) []Needed {
	var out []Needed
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil && bp.Reconcile.Remote.Go != nil {
		g := bp.Reconcile.Remote.Go
		out = append(out, Needed{What: "reconciler", Name: g.Name, Pos: g.Pos})
	}
	return out
}

// Missing lists what bp needs that r does not have.
func (r *Registry) Missing(bp *ir.Blueprint) []Needed {
	var out []Needed
	for _, n := range Needs(bp) {
		if _, ok := r.Reconciler(n.Name); !ok {
			out = append(out, n)
		}
	}
	return out
}

// BuildHint says how to get an inrun with a module's Go code compiled in.
const BuildHint = "build an inrun with the Go module that registers it compiled in (see docs/typed.md; inrun build --with is not implemented yet)"

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
	if regs := r.Reconcilers(); len(regs) > 0 {
		var list []string
		for _, reg := range regs {
			list = append(list, reg.Name)
		}
		has = "it has reconcilers " + strings.Join(list, ", ")
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
