// Package rbac derives the least-privilege RBAC a Blueprint needs from its IR
// alone: the verbs the runtime uses on the custom resource, its status and
// finalizers, on every child kind, on Events and on the leader-election
// Lease, and nothing else.
//
// The rules are controller-tools' rbac.Rule, the type behind
// +kubebuilder:rbac markers, so that inrun rbac, the interpreted runtime and
// generated operators share one source.
package rbac
