// Package devcluster provides the cluster behind inrun --dev when the
// current kubeconfig reaches none: a kind cluster where a Docker engine
// answers, otherwise Inrun's local control plane of real processes.
//
// The kind path cannot be exercised on machines without a Docker engine,
// such as Inrun's own CI; it is a thin use of sigs.k8s.io/kind's library.
package devcluster
