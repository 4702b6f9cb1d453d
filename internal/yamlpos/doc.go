// Package yamlpos is the one YAML reader of every file Inrun reads: it keeps
// the line and column of every node, and reports every problem as a
// diag.Diagnostic instead of stopping at the first.
//
// A Reader wraps one file. Parse takes the file's single document; Map,
// List, String, Bool, Int, Duration and Value read nodes into Go values,
// reporting a value of the wrong type, an unknown or repeated field, or a
// missing one at the node it concerns, with a did-you-mean hint where one
// helps. Formats built on it (the Blueprint, test/simulate.yaml,
// test/e2e.yaml) say the same thing the same way about the same mistake.
package yamlpos
