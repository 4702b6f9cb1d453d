// Package reconciler is the reconcile pass of a Blueprint: given the IR and a
// custom resource, it renders the desired children, applies them with
// server-side apply, prunes what the Blueprint no longer produces, and writes
// status and conditions.
//
// It is written against controller-runtime's client.Client and implements
// reconcile.Reconciler, so the same code runs in memory (inrun simulate,
// inrun render), in the interpreted runtime (inrun run) and in generated
// operators.
//
// Children of built-in kinds are listed, and their applies answered, as
// their Go types, as the runtime's cache holds them. The pass keeps a
// metadata view of each (its kind and metadata, unstructured) for keys,
// ownership and pruning; it compares the rest with what it renders in the
// typed object (upToDateTyped), judges readiness from it, and expressions
// read it as it is (TypedEvaluation, TypedReader). The whole unstructured
// view is made only for what reads more: a remote reconciler, a Go hook,
// a collection, an Evaluation that reads the child unstructured.
//
// Its promises:
//   - Nothing is written when nothing changed: a converged custom resource
//     costs reads from the cache and no API writes.
//   - Only objects labelled as children of this custom resource by this
//     Blueprint are ever deleted, and only when the Blueprint no longer
//     produces them. A child whose expressions fail is kept as it is.
//   - onCreate children are created once and never updated.
package reconciler
