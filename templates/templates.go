// Package templates holds the text/template sources of the files of a
// generated operator that are not Go: its go.mod, Makefile, README,
// Dockerfile, kubebuilder PROJECT file and kustomize configuration.
//
// Project mirrors the generated project's layout: a template at
// project/P.tmpl renders the file P. Package codegen fills them; a template
// that renders to nothing is not written.
package templates

import "embed"

// Project is the templates, rooted at project/.
//
//go:embed all:project
var Project embed.FS
