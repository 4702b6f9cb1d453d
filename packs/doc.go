// Package packs holds the example packs that `inrun init` copies, embedded in
// the binary so that a new project needs nothing but inrun itself.
//
// A pack is a directory with a pack.yaml (its name and a one-line
// description) and one or more examples. An example is a directory holding a
// blueprint.yaml, its manifests and its tests; a pack's root may itself be the
// example, as the canonical Website pack is.
//
// The package promises three things that the rest of Inrun relies on:
//
//   - List is stable: the canonical pack (Default) first, then the others by
//     name.
//   - Copy never overwrites a user's files by accident: it writes into an
//     empty or missing directory, and into a non-empty one only when asked to
//     (CopyOptions.Force). pack.yaml is metadata for `inrun init --list` and
//     is not copied.
//   - Examples lists every directory of a pack that holds a blueprint.yaml, so
//     that tests elsewhere (compiler, simulate, codegen) can run every example
//     after copying a pack into a temporary directory.
//
// The pack content is plain files, the same ones a user reads and edits; this
// package only lists and copies them.
package packs
