// Package simulate runs a Blueprint's reconcile in memory: the runtime's own
// reconciler.Reconciler against an in-memory API store, with no cluster.
//
// It backs inrun simulate, which checks the cases of test/simulate.yaml, and
// inrun render, which shows what one custom resource becomes. The file is
// read by the positioned reader every format shares (internal/yamlpos):
// every mistake in it is reported at once, sorted, as the diagnostics of
// package internal/diag, each with its file:line:col and a stable code;
// then, before any case runs, the child ids and status fields the cases
// name are checked against the Blueprint the same way (CheckFile). The store is
// controller-runtime's fake client, with server-side apply, status
// subresources, and the custom resource pruned, defaulted and validated by
// its CRD as the API server does (crdRules), so what a case observes is what the
// runtime would write on a cluster, less what a cluster's own controllers
// do (those are injected with observe). A case may go on in steps that
// patch or delete the custom resource; once it is gone, the store deletes
// what it owned, as the garbage collector would. A Secret created or
// updated in the store, one given before the run too, has its stringData
// stored as data, as the API server stores it.
//
// A Blueprint with a remote reconciler is called over real HTTP, as on a
// cluster. The simulate file says who answers: a reconciler process it
// starts (Reconciler, which e2e uses too), a recorded reply served by an
// HTTP server in this process, or else the reconciler the Blueprint names.
// A process runs in a process group of its own and is stopped with all it
// started, by a watchdog if this process dies first; the Blueprint's URL is
// replaced on a copy (WithURL), never on the compiled IR.
package simulate
