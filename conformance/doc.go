// Package conformance holds a compiled operator to the interpreter's
// behaviour on a real API server.
//
// Binary is an e2e.Runtime that runs an operator binary made by inrun build
// as a process, against the cluster the cases run on: the cases of a
// Blueprint's test/e2e.yaml then run against the compiled operator exactly
// as inrun e2e runs them against the interpreted runtime. The package's
// tests build the website pack's operator and run its test/e2e.yaml so, and
// check that an operator taking over from the interpreted runtime writes
// nothing to custom resources it has converged. They also hold the
// simulator's validation of built-in kinds (builtin.Validate) to the API
// server's, message for message.
package conformance
