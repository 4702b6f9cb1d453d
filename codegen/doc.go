// Package codegen is Inrun's compiled back end: from a compiled Blueprint
// (the IR package compiler returns) it generates a standalone operator, a Go
// module in kubebuilder's layout that links Inrun's runtime library, and
// inrun build builds it.
//
// Generate is a generator only: it reads the IR, and the Blueprint's
// directory for the files it copies, and never compiles. The caller
// compiles first, so that a Blueprint inrun check rejects is rejected with
// the same errors before anything is generated. Generate then generates, in
// memory:
//
//   - api/<version>: the custom resource's Go types, derived from the CRD's
//     OpenAPI schema, with json tags, +kubebuilder markers, a Conditions
//     []metav1.Condition in status, and their deepcopy functions;
//   - internal/controller: the reconciler, with the +kubebuilder:rbac markers
//     of package rbac, and the Blueprint's Renderer (reconciler.Renderer)
//     compiled to Go. It reads the custom resource as its Go type once per
//     pass and builds each child as a typed k8s.io/api object. Every
//     expression it can (field paths, literals, interpolation, arithmetic,
//     comparisons, conditionals, size and string) becomes plain Go with
//     CEL's semantics; the rest stay CEL programs, planned once. For a
//     Blueprint with collections (forEach) it also implements
//     reconciler.Collections: iterators' items and whatever reads a
//     collection or an item's bindings run as CEL;
//   - internal/blueprint: the IR, as ir.Marshal encodes it, embedded: the
//     operator runs the compiler's IR without linking the compiler, and
//     plans the CEL programs it needs from the checked expressions in it;
//   - cmd/main.go, config/ (the CRD, RBAC as inrun rbac prints it, the
//     manager, samples), go.mod, Makefile, README.md and Dockerfile, from
//     the templates of package templates;
//   - tests that run the Blueprint's test/simulate.yaml against the
//     interpreter and its test/e2e.yaml on a local control plane.
//
// What it promises:
//
//   - Every generated Go file is gofmt-clean and starts with Header.
//   - Positions in the generated project are relative to the Blueprint's
//     directory (blueprint.yaml:12:5), never a path of the machine that
//     generated it.
//   - The operator's binary links neither the compiler nor codegen: its
//     run-time support is runtime-lib/typed. Only its tests reach e2e,
//     simulate and localcluster, through conformance/operatortest.
//   - Output is deterministic: the same Blueprint gives the same bytes.
//   - A compiled Renderer applies exactly what the interpreter's CEL
//     Renderer applies for the same custom resource and live children, so
//     the applied hashes match and switching between inrun run and the
//     compiled operator writes nothing; where Go cannot match CEL (an
//     optional field with no default, an int that may not fit an int32) it
//     checks and fails as CEL does.
//   - The generated module builds with only the Go module proxy: Write
//     copies the Inrun packages it imports, and those they import, from the
//     source embedded in the inrun binary (package inrun) into
//     third_party/inrun, which go.mod replaces github.com/inrun/inrun with.
//
// The generator is one emitter per concern, joined by data: apiModel
// (api.go) is the API types derived from the CRD, and emit_api.go writes
// them; renderModel (render.go) is the Blueprint as the Renderer reads it,
// whose function bodies are lowered once, each in a body of its own
// (body.go), from values (emit_child.go) and expressions, lowered from CEL
// to Go in lower.go; emit_renderer.go and emit_controller.go lay them out;
// emit_blueprint.go writes the IR, emit_tests.go the generated tests,
// files.go what is copied and config/, and templates.go the files that are
// the same for every operator, cmd/main.go among them.
//
// A Blueprint that names Go code is typed, and refused unless
// Options.Typed: its operator links Go modules (inrun build --operator
// --with), whose packages Options.Packages lists for
// internal/controller/components.go to import; cmd/main.go then checks
// components.Default, adds its schemes and passes it to the runtime, and
// third_party/inrun holds all of Inrun's source.
//
// API generates the API package alone, the same files as api/<version>,
// for inrun generate api: a module of hooks type-checks them against the
// Blueprint's CRD.
//
// Build runs the whole of inrun build on a Project: write, go mod tidy, go
// vet, the generated tests, go build. With BuildOptions.Modules it links
// them after writing the project (package builder implements Modules, and
// its Operator checks their versions before calling Build);
// BuildOptions.NoCompile stops after go mod tidy.
package codegen
