// Package gate is what a pattern passes before inrun push pushes it.
//
// Collect reads a pattern from the Blueprint's directory: the Blueprint,
// every file it names (recorded while the compiler reads it, so that one
// outside the directory is caught), and the rest of the directory but
// hidden files: test/, README.md, and the files the tests name. Test writes exactly those bytes to a fresh directory and runs
// the pattern's simulate cases in memory and its e2e cases on a local
// control plane started for the run, and returns the results the proof
// records. Because the tests run on the collected bytes rather than on the
// working directory, the proof is about what is pushed, and a pattern that
// needs a file it does not carry fails here rather than for its users.
//
// The gate always runs the tests itself: it takes no results file, since
// results it did not produce would be signed on faith.
package gate
