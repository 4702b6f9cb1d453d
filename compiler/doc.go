// Package compiler turns a Blueprint's YAML into an ir.Blueprint.
//
// It is the front end of a three-stage pipeline, modelled on go/parser and
// go/types: it parses with positions, validates every field, resolves every
// child's kind, orders children by their references, and type-checks every
// ${...} expression against the CRD's OpenAPI schema and the Go types of the
// built-in kinds, offline.
//
// Compile never stops at the first mistake: it returns every diagnostic it
// found as one ErrorList, sorted by position, each with a stable Code, the
// file:line:col it points at, and a hint where one helps. A nil error means
// the returned Blueprint is complete and every expression in it will compile.
package compiler
