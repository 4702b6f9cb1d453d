// Package diag is the one diagnostic type of every file Inrun reads: a
// Blueprint, test/simulate.yaml, test/e2e.yaml, and every format added
// after them.
//
// A Diagnostic is a position (file:line:col), a stable Code, a message and
// an optional hint on what would be valid, printed as
//
//	file:line:col: E0002 unknown field spec.replicaz; did you mean spec.replicas?
//
// Readers never stop at the first problem: they add every Diagnostic to a
// List, and List.Err returns them all at once, sorted by position, after
// go/scanner's ErrorList. Codes are only ever appended (see codes.go), so
// tests, docs and users can rely on them.
package diag
