// Package templates holds the text/template sources of the files of a
// generated operator that are the same for every Blueprint but for a few
// names: its cmd/main.go, go.mod, Makefile, README, Dockerfile, kubebuilder
// PROJECT file and kustomize configuration. The Go files that follow the
// Blueprint (the API types, the controller and its Renderer) are emitted by
// codegen itself.
//
// Project mirrors the generated project's layout: a template at
// project/P.tmpl renders the file P. Package codegen fills them; a template
// that renders to nothing is not written, and a Go file is gofmt-clean
// whatever the template's layout.
package templates

import "embed"

// Project is the templates, rooted at project/.
//
//go:embed all:project
var Project embed.FS
