// Package controller runs Blueprints on a cluster: it wires one
// reconciler.Reconciler per Blueprint into a controller-runtime manager,
// with informers on the custom resource and every child kind, a
// rate-limited work queue, several workers, and watches that bring a
// child's owner back into the queue when the child drifts or is deleted.
// Objects externalRefs select by label are watched by their metadata, in a
// cache of their own, and bring back the custom resources that select them.
//
// ManagerOptions shapes the manager itself: caches of child kinds hold only
// objects labelled as Inrun's, so memory grows with what Inrun owns, not
// with the cluster. Children of built-in kinds are watched and cached as
// their k8s.io/api types (reconciler.TypedKind), which controller-runtime
// fetches as protobuf and holds as Go structs; custom resources and other
// kinds are cached unstructured. Leader election, metrics and probes are
// controller-runtime's.
package controller
