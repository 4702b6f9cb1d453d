package builtin

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KubernetesMinor is the Kubernetes release, 1.KubernetesMinor, whose API
// server the built-in kinds are those of: the release of k8s.io/api in
// go.mod, and of the local control plane. A test holds it to go.mod.
const KubernetesMinor = 37

// notServedUntagged are the group-versions client-go's scheme still knows
// whose k8s.io/api packages say nothing of their removal (they carry no
// prerelease-lifecycle tags), by the release that stopped serving them.
// Every other removal is read from k8s.io/api, as the API server reads it.
var notServedUntagged = map[schema.GroupVersion]int{
	{Group: "rbac.authorization.k8s.io", Version: "v1alpha1"}: 22,
	{Group: "node.k8s.io", Version: "v1alpha1"}:               22,
}

// lifecycle is what k8s.io/api generates from a prerelease type's
// "k8s:prerelease-lifecycle-gen" tags: the release that stops serving it.
type lifecycle interface {
	APILifecycleRemoved() (major, minor int)
}

// Removed reports whether gvk is a kind Scheme knows in a version no API
// server of this release serves, and the release that removed it ("1.16").
// The API server decides alike (k8s.io/apiserver's deleted_kinds.go): a
// type whose removal release is this one or earlier is not served.
func Removed(gvk schema.GroupVersionKind) (string, bool) {
	if minor, ok := notServedUntagged[gvk.GroupVersion()]; ok {
		return fmt.Sprintf("1.%d", minor), true
	}
	t, ok := Scheme.AllKnownTypes()[gvk]
	if !ok {
		return "", false
	}
	l, ok := reflect.New(t).Interface().(lifecycle)
	if !ok {
		return "", false
	}
	major, minor := l.APILifecycleRemoved()
	if major > 1 || major == 1 && minor > KubernetesMinor {
		return "", false
	}
	return fmt.Sprintf("%d.%d", major, minor), true
}
