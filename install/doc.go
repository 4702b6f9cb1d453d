// Package install makes the manifests a platform team applies to run Inrun
// in a cluster: the interpreted runtime started as
// inrun run --from-configmaps, for a given set of compiled Blueprints.
//
// One function, Objects, builds every object from the IR and Options: the
// Blueprint ConfigMaps (those of the Blueprints they use too, each named
// as the runtime reads it), the CRDs (annotated helm.sh/resource-policy: keep,
// so that an upgrade updates them and an uninstall keeps them and the
// custom resources), the ServiceAccount with exactly the ClusterRoles
// package rbac derives (inrun rbac) and the Role reading the Blueprint
// ConfigMaps, the Deployment (leader election, restricted Pod Security,
// probes on /healthz and /readyz), its PodDisruptionBudget and the metrics
// Service. Chart writes them as a Helm chart, whose values stand where the
// options do; Kustomize writes the same objects, with the options' values,
// as a kustomize base. A test renders the chart with Helm and builds the
// base with kustomize, and checks that they give the same objects.
//
// Image makes the OCI image of a static inrun binary without Docker, with
// Mozilla's CA certificates from a Go module, and Push pushes it.
//
// It takes compiled Blueprints and never compiles; it reads only the
// Blueprint files the ConfigMaps carry.
package install
