// Package simulate runs a Blueprint's reconcile in memory: the runtime's own
// reconciler.Reconciler against an in-memory API store, with no cluster.
//
// It backs inrun simulate, which checks the cases of test/simulate.yaml, and
// inrun render, which shows what one custom resource becomes. The store is
// controller-runtime's fake client, with server-side apply, status
// subresources and the CRD's defaults, so what a case observes is what the
// runtime would write on a cluster, less what a cluster's own controllers
// do (those are injected with observe).
package simulate
