// Package localregistry runs a real OCI registry on this machine: the CNCF
// Distribution registry (cmd/registry of
// github.com/distribution/distribution/v3), built from source and cached by
// package localcluster/assets beside the control plane, listening on a free
// loopback port with its storage in a directory of its own.
//
// The pattern registry's integration tests push to it, and so does inrun
// --dev. Distribution answers the OCI referrers API with 404, so clients
// find referrers through the tag schema there; package registry checks
// each referrer's subject for that reason.
package localregistry
