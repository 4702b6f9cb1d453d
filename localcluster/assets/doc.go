// Package assets builds and finds the binaries of Inrun's local control
// plane.
//
// The control plane is made of kube-apiserver, kube-controller-manager,
// kube-scheduler and kubectl from k8s.io/kubernetes, etcd from
// go.etcd.io/etcd/server/v3, and kwok from sigs.k8s.io/kwok, plus the kwok
// stage files that make fake Nodes and Pods become Ready. Beside them it
// builds the CNCF Distribution registry (github.com/distribution/distribution/v3,
// cmd/registry), the real OCI registry patterns are pushed to in tests and
// with --dev (package localregistry runs it). There are no
// downloads of prebuilt binaries: Ensure compiles every binary from source
// through the Go module proxy, in throwaway modules, into one directory per
// set of versions (see DefaultDir). The first build takes about ten minutes
// on two cores; later calls verify what is there and return at once.
//
// The directory is laid out the way controller-runtime's envtest expects
// its BinaryAssetsDirectory (files named etcd, kube-apiserver and kubectl),
// so it can be handed to envtest or exported as KUBEBUILDER_ASSETS as is.
//
// Ensure is the only function that builds. Check is cheap and never builds;
// it is what a cluster or a test calls before it starts processes, and its
// error says which binary is missing and how to build it.
package assets
