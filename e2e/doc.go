// Package e2e runs the cases of a Blueprint's test/e2e.yaml on a real API
// server: a Full local control plane started for the run (package
// localcluster), or an existing cluster from a kubeconfig context.
//
// Run is the whole of it. What it promises:
//
//   - Every problem with the file is reported at once, sorted, as the
//     diagnostics of package internal/diag, each with its file:line:col, a
//     stable code, the case and the field: unknown fields (with what was
//     probably meant), values of the wrong type, missing names, a case with
//     both or neither of cr and object, bad durations, unreadable CR files,
//     and kinds the cluster would not serve. All of that happens before any
//     cluster starts; on an existing cluster, kinds beyond the built-in ones
//     and the Blueprint's own are looked up there first.
//   - The Blueprint runs in a Runtime: by default the interpreted runtime in
//     this process (InProcess), which installs the CRDs and listens on no
//     port; NoRuntime when an operator already runs on the cluster. The
//     interface leaves room for a compiled operator run as a process.
//   - A file's reconciler block starts a reconciler process for the run
//     (simulate.Reconciler) before the runtime, and stops it after the
//     runtime; the in-process runtime calls it at the block's url instead
//     of the Blueprint's reconcile.url.
//   - Each case runs in a fresh namespace of its own, labelled
//     inrun.dev/e2e, and is deleted afterwards with everything the case
//     created elsewhere, unless Options.Keep. The CR is deleted first and
//     waited for, while the runtime still runs, so its finalizer is honoured.
//   - A step's expectations are polled until they hold or the step's
//     timeout runs out. A failure says, per expectation, what was expected
//     and what was last observed (the partial match of package
//     internal/match, which simulate.yaml uses too), with the CR's
//     conditions and latest Events. The steps after a failed one are skipped.
//   - Results are printed as they come, one RUN line and one PASS or FAIL
//     line with its duration per case, a line per step, and a last line
//     "<file>: N passed, M failed in <duration>". Failed cases are in the
//     Report, not in the error, which is kept for what stopped the run.
//
// The format of the file is documented in docs/e2e.md.
package e2e
