// Package codegen will turn the IR into a standalone kubebuilder-style Go
// operator that calls runtime-lib. It is not implemented yet: inrun build is
// a later milestone, and this package only reserves its place in the
// pipeline compiler → ir → (runtime-lib | codegen).
package codegen
