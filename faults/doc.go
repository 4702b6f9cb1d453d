// Command faults runs Inrun's fault matrix: each row a fault done to the
// interpreted runtime, what Inrun promises to do about it, and what it did,
// measured on a real local control plane (localcluster, Minimal: etcd and
// kube-apiserver).
//
// The runtime under test is `inrun run`, a process of its own built with
// go build, so that it can be killed with SIGKILL. Its Blueprint
// (testdata/blueprint.yaml) makes each Widget custom resource a ConfigMap
// of its own, whose value divides by a field of the spec, and calls a
// remote reconciler that the matrix runs in-process and scripts per
// Widget: it answers with two ConfigMaps and a status, or with a fault.
//
// The rows:
//
//   - the remote reconciler down, slow past its timeout, answering 5xx, 429
//     with Retry-After, a cut-off reply, invalid JSON, a wrong apiVersion,
//     an undeclared kind, an oversized status or reply, a takeover of an
//     object a person made, duplicate ids, done outside finalizing. Each
//     starts from a converged Widget, turns the reconciler faulty and makes
//     the Widget reconcile: its children must be kept, Degraded must name
//     the fault, a Warning Event too, reconciles stay within what the
//     backoff allows, and once the reconciler is fixed the Widget must be
//     Ready again without an edit;
//   - a Widget edited so that an expression fails, then fixed;
//   - a Blueprint ConfigMap edited into a broken state while running;
//   - inrun run killed with SIGKILL in the middle of converging Widgets,
//     then started again;
//   - kube-apiserver stopped under a running runtime and started again;
//   - two runtimes with --leader-elect, the leader killed under load.
//
// In every row the matrix also makes objects a person would (a ConfigMap,
// a Secret, a ConfigMap that carries Inrun's labels for a custom resource
// that does not exist) and checks that none is touched, and it watches
// every object to tell a child kept from one deleted or created again.
// Writes are counted with the runtime's own metrics
// (inrun_client_writes_total), as the benchmark (bench/) counts them.
//
// Usage, from the repository root:
//
//	go run ./faults [-quick] [-only down,kill] [-json faults.json] [-n 300]
//
// It prints progress to stderr and the table, in Markdown, to stdout.
// go test ./faults runs the quick subset (-quick). docs/reliability.md
// explains the promises and holds the latest table.
package main
