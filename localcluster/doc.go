// Package localcluster runs a local Kubernetes control plane made of real
// processes, for Inrun's tests and for "inrun --dev" where kind cannot run.
//
// Start launches etcd and kube-apiserver through controller-runtime's
// envtest and, in Full mode, kube-controller-manager, kube-scheduler and
// kwok with one fake Node, so that Deployments create Pods, Pods become
// Running and Ready without a kubelet, and owned objects are
// garbage-collected. The binaries come from package
// github.com/inrun/inrun/localcluster/assets; Start never builds them.
//
// What a Cluster promises:
//
//   - Every component listens on a free loopback port and keeps its state
//     in a private temporary directory, so clusters never collide with each
//     other or with anything else on the machine.
//   - Start returns only once the API server is ready and, in Full mode,
//     the Node is Ready and schedulable. A component that fails to start, or
//     exits later, is reported as a *ComponentError that carries the tail of
//     its log.
//   - Stop ends every process the cluster started, removes its temporary
//     directory and frees its ports. If the owning process dies without
//     calling Stop (a panic, a test timeout, SIGKILL), a small watchdog
//     process notices and does the same.
//   - StopAPIServer and StartAPIServer stop kube-apiserver under a running
//     cluster and start it again at the same address with the same
//     certificates, while etcd and the other components run on: clients
//     that lose the API server and come back are tested that way. A stop
//     on purpose is no failure of the cluster.
//
// Package github.com/inrun/inrun/localcluster/clustertest shares one
// Cluster across the tests of a package and gives each test its own
// namespace.
package localcluster
