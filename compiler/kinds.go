package compiler

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// clusterScoped lists the built-in kinds that are not namespaced. The
// compiler works offline, so it cannot ask discovery.
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}:  true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:               true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
}

// builtinKind is what the compiler knows offline about a built-in kind.
type builtinKind struct {
	plural     string
	namespaced bool
}

// lookupBuiltin resolves a GVK against the kinds client-go knows, which are
// the kinds every API server of this Kubernetes version serves.
func lookupBuiltin(gvk schema.GroupVersionKind) (builtinKind, bool) {
	if !clientgoscheme.Scheme.Recognizes(gvk) || strings.HasSuffix(gvk.Kind, "List") || gvk.Kind == "WatchEvent" || gvk.Group == "" && gvk.Kind == "Status" {
		return builtinKind{}, false
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return builtinKind{plural: plural.Resource, namespaced: !clusterScoped[gvk.GroupKind()]}, true
}

// builtinVersions returns the apiVersions that serve kind, for hints.
func builtinVersions(kind string) []string {
	var out []string
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.Kind == kind && gvk.Version != "__internal" {
			out = append(out, gvk.GroupVersion().String())
		}
	}
	sort.Strings(out)
	return out
}

// builtinKindNames returns every built-in kind name, for hints.
func builtinKindNames() []string {
	seen := map[string]bool{}
	var out []string
	for gvk := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") || seen[gvk.Kind] {
			continue
		}
		seen[gvk.Kind] = true
		out = append(out, gvk.Kind)
	}
	sort.Strings(out)
	return out
}
