// Package compiler turns a loaded Blueprint (a load.Source) into an
// ir.Blueprint.
//
// It is the front end of the pipeline, modelled on go/parser and go/types,
// in two halves. The decoder reads the YAML with positions
// (internal/yamlpos) into an ir.Blueprint, one file per section:
// metadata.go, crd.go, uses.go, children.go, status.go, reconcile.go,
// serve.go and migrate.go (a served field's migrate), lifecycle.go,
// migratekind.go (the top-level migrate: a kind move, checked against the
// target kind's schema), and reserved.go for the sections later versions
// will implement (an error until then). uses.go compiles the Blueprints a Blueprint builds on in
// the same session, each once, and reports a cycle of them. The checker then checks templates against the types of the
// objects they write (check.go), type-checks every ${...} expression
// against the CRD's schema and the built-in kinds' Go types, offline, and
// keeps the checked AST in the IR (checkexpr.go), and orders children by
// their references (order.go).
//
// Compile never stops at the first mistake: it returns every diagnostic it
// found (internal/diag), sorted by position, each with a stable code, the
// file:line:col it points at, and a hint where one helps. A nil error means
// the returned Blueprint is complete and every expression in it will run.
package compiler
