// Package builder is the typed-Go builder behind inrun build --with and the
// typed pack's make registry: it will build an inrun with Go modules
// compiled in (see package components and docs/typed.md).
//
// So far it holds the builder's first stage, the one that fails fast:
// before anything is compiled, CheckVersions reads every module's go.mod
// and refuses a module that requires controller-runtime or a k8s.io
// module at another minor version than the inrun it is built into. Go
// would resolve both to one version and the mismatch would surface as
// compile errors deep in someone else's code; here it is one message per
// module naming both versions and the fix, in the time it takes to read a
// few go.mod files.
//
// Generating the main package, resolving with go.work (never rewriting a
// user's go.mod, keeping local replace directives) and building are not
// implemented yet.
package builder
