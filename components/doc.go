// Package components is the registry of Go code compiled into an inrun,
// registered by name by the Go modules an inrun is built with:
//   - reconcilers built from a constructor (reconcile.go: {name: NAME}),
//     which answer the same sdk.Result as a reconciler over HTTP;
//   - hooks: transforms of a rendered child (go: {transform: NAME} on the
//     child), args for a reconciler and status fields (go: {args: NAME,
//     status: NAME} at the top of the Blueprint);
//   - controller-runtime reconcilers, unchanged, by the setup that adds
//     them to a manager (reconcile.go: {controller: NAME});
//   - the scheme additions (AddToScheme) of the API types they read.
//
// A module registers in an init function, as database/sql drivers and Caddy
// modules do:
//
//	func init() {
//		components.RegisterReconciler("webapp", func(o components.ReconcilerOptions) (sdk.Func, error) {
//			return reconcileWebApp, nil
//		})
//	}
//
// and a Blueprint refers to it by that name:
//
//	reconcile:
//	  go: {name: webapp}
//
// A registered reconciler takes the same sdk.Request and answers the same
// sdk.Result as a reconciler over HTTP; the runtime does every write.
//
// A hook reads the custom resource it is given typed with Decode, into the
// Go types inrun generate api writes from the Blueprint's CRD (typed.go).
//
// Its promises:
//   - Registration never panics. A bad or duplicate name is recorded and
//     reported by Registry.Err, every one at once, which inrun checks before
//     it runs anything.
//   - Every registration remembers the Go package that made it, so that a
//     binary can list what it has compiled in, by module.
//   - Missing lists every name a Blueprint needs that the registry lacks,
//     so that an inrun without them refuses the Blueprint before it
//     reconciles anything, naming all of them.
package components
