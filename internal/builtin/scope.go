package builtin

import "k8s.io/apimachinery/pkg/runtime/schema"

// ClusterScoped reports whether built-in kind gk is not namespaced.
func ClusterScoped(gk schema.GroupKind) bool { return clusterScoped[gk] }

// clusterScoped lists the built-in kinds that are not namespaced: the
// compiler and the simulator work offline, and cannot ask discovery.
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

// Generational reports whether the API server gives objects of gk a
// metadata.generation, counting changes of their spec: workloads, Pods,
// Ingresses and the like do; Services, ConfigMaps, Secrets, RBAC and the
// other kinds without a spec to roll out do not. Custom resources always
// do; gk is a built-in kind's. (Read from a real API server's answers to a
// create of each built-in kind.)
func Generational(gk schema.GroupKind) bool { return generational[gk] }

var generational = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:                                             true,
	{Group: "apps", Kind: "ReplicaSet"}:                                             true,
	{Group: "apps", Kind: "StatefulSet"}:                                            true,
	{Group: "apps", Kind: "DaemonSet"}:                                              true,
	{Group: "batch", Kind: "Job"}:                                                   true,
	{Group: "batch", Kind: "CronJob"}:                                               true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:                         true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                             true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                                  true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                             true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                 true,
	{Kind: "Pod"}: true,
}
