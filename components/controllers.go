package components

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SetupFunc adds a controller-runtime controller to mgr: the line a
// kubebuilder project's cmd/main.go has for it, such as
//
//	return (&controller.GuestbookReconciler{
//		Client: mgr.GetClient(),
//		Scheme: mgr.GetScheme(),
//	}).SetupWithManager(mgr)
//
// The reconciler runs unchanged under inrun's manager: inrun's leader
// election, metrics, probes and access review. mgr's client, cache and
// scheme are the runtime's, and its scheme holds every registered
// AddToScheme. Panics in Reconcile are recovered and each call is bounded
// by the Blueprint's reconcile.timeout.
type SetupFunc func(mgr manager.Manager) error

// AddToScheme adds a group's Go types to a scheme: the AddToScheme of a
// kubebuilder project's api/<version> package.
type AddToScheme func(s *runtime.Scheme) error

// RegisterController registers a controller-runtime reconciler's setup in
// Default under name, which a Blueprint names in reconcile.go.controller.
// Call it from an init function.
func RegisterController(name string, setup SetupFunc) {
	Default.register(Controller, name, setup, setup == nil, callerPackage())
}

// RegisterController registers a controller-runtime reconciler's setup
// under name.
func (r *Registry) RegisterController(name string, setup SetupFunc) {
	r.register(Controller, name, setup, setup == nil, callerPackage())
}

// RegisterScheme registers the Go types of an API group version in
// Default under name (by convention the group/version, such as
// webapp.my.domain/v1). The runtime's scheme, and so every client and
// cache it makes, knows them: a controller that reads them typed finds
// them registered. Call it from an init function.
func RegisterScheme(name string, add AddToScheme) {
	Default.registerScheme(name, add, callerPackage())
}

// RegisterScheme registers the Go types of an API group version under
// name.
func (r *Registry) RegisterScheme(name string, add AddToScheme) {
	r.registerScheme(name, add, callerPackage())
}

// registerScheme runs add on a scheme of its own, to refuse one that
// fails now and to record the kinds it adds.
func (r *Registry) registerScheme(name string, add AddToScheme, pkg string) {
	e := entry{Registration: Registration{What: Scheme, Name: name, Package: pkg}, fn: add}
	if add != nil {
		kinds, err := schemeKinds(add)
		if err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, fmt.Errorf("%s registers scheme %q, whose AddToScheme fails: %w", pkg, name, err))
			r.mu.Unlock()
			return
		}
		e.Kinds = kinds
	}
	r.registerEntry(e, add == nil)
}

// schemeKinds lists the kinds add registers, leaving out the list types
// and the options every group version gets.
func schemeKinds(add AddToScheme) ([]string, error) {
	s := runtime.NewScheme()
	if err := add(s); err != nil {
		return nil, err
	}
	var out []string
	for gvk, t := range s.AllKnownTypes() {
		if t.PkgPath() == "k8s.io/apimachinery/pkg/apis/meta/v1" {
			continue
		}
		if base, ok := strings.CutSuffix(gvk.Kind, "List"); ok && s.Recognizes(gvk.GroupVersion().WithKind(base)) {
			continue
		}
		out = append(out, gvk.GroupVersion().String()+", Kind="+gvk.Kind)
	}
	sort.Strings(out)
	return out, nil
}

// ControllerSetup returns the controller setup registered under name.
func (r *Registry) ControllerSetup(name string) (SetupFunc, bool) {
	fn, ok := r.lookup(Controller, name)
	f, _ := fn.(SetupFunc)
	return f, ok
}

// AddToScheme adds every registered scheme to s, in name order.
func (r *Registry) AddToScheme(s *runtime.Scheme) error {
	var errs []error
	for _, reg := range r.List(Scheme) {
		fn, _ := r.lookup(Scheme, reg.Name)
		if add, ok := fn.(AddToScheme); ok {
			if err := add(s); err != nil {
				errs = append(errs, fmt.Errorf("scheme %q (%s): %w", reg.Name, reg.Package, err))
			}
		}
	}
	return errors.Join(errs...)
}
