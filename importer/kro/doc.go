// Package kro converts kro ResourceGraphDefinitions (kro.run/v1alpha1) into
// Blueprints: inrun import kro.
//
// Convert reads every ResourceGraphDefinition of its files and returns one
// Blueprint for each, and an error listing, with file:line:col, a stable
// code (internal/diag) and a hint, every construct it could not convert.
// It never stops at the first problem and never drops a construct without
// saying so: what a Blueprint cannot express is listed, and the rest is
// converted. Changes that keep the meaning, such as a name made a DNS-1123
// label, are listed as notes.
//
// The mapping keeps kro's spelling where the meaning is the same:
//
//	metadata.name             metadata.name (a DNS-1123 label)
//	spec.schema               schema (SimpleSchema, group defaulting to kro.run)
//	spec.schema.status        emit.status
//	spec.resources            onReconcile: id, template, externalRef,
//	                          readyWhen, includeWhen, forEach
//	${schema.spec.x}          ${self.spec.x}
//	${x.y != null}            ${has(x.y)}
//
// Expressions are rewritten on cel-go's parse of them, at the positions of
// the identifiers, so text inside string literals is never touched and the
// rest of an expression keeps its spelling. When several are converted at
// once, a Blueprint whose children are the custom resources of another gets
// a uses entry for it. A child of a kind another operator reconciles (an
// ACK VPC, a cert-manager Certificate) is typed by that kind's
// CustomResourceDefinition, given among the files: it is copied to crds/
// and named in a uses: crd entry, as kro reads it from the cluster.
//
// The package only converts: it does not compile what it writes. The
// Blueprints it returns are checked by the compiler like any other
// (inrun check).
package kro
