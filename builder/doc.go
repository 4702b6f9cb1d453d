// Package builder is the typed-Go builder behind inrun build --with: it
// builds an inrun with Go modules compiled in (see package components and
// docs/typed.md), as xcaddy builds a Caddy.
//
// Build works in three stages:
//
//  1. Check, the one that fails fast: before anything is written, every
//     module's go.mod is read (ReadGoMod) and a module that requires
//     controller-runtime or a k8s.io module at another minor version than
//     the inrun it is built into is refused (CheckVersions). Go would
//     resolve both to one version and the mismatch would surface as
//     compile errors deep in someone else's code; here it is one message
//     per module naming both versions and the fix, in the time it takes
//     to read a few go.mod files.
//  2. A main module is generated: Inrun's embedded source (package inrun's
//     Source) in third_party/inrun, a go.mod (GoModFile) requiring it and
//     the modules, with a local module replaced by its directory and its
//     own replace directives kept (its go.mod is read, never written), and
//     a main.go (MainFile) importing every package of the modules for
//     their init functions and calling cli.Main.
//  3. go mod tidy, the versions it resolved checked again (CheckResolved:
//     a module's dependencies may raise them), then go build -trimpath -buildvcs=false with
//     CGO_ENABLED=0 and fixed flags, so that the same inputs give the same
//     binary; the linker stamps the module list (BuiltWith) for inrun
//     version --components. Options.NoCompile stops before go build
//     (inrun build --no-compile, make registry).
//
// Operator is inrun build --operator --with: it links the same modules
// into a typed Blueprint's operator, with the same steps (Check,
// AddModules: requires and replace directives into a go.mod, Sums,
// Packages: what to import, found with go list, and Recheck), given to
// codegen.Build as its Modules. The output directory is prepared by
// internal/outdir, as codegen's is.
package builder
