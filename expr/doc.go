// Package expr is the one home of Inrun's CEL: the environment a Blueprint's
// expressions are checked in, and the compiled programs they run as.
//
// The compiler uses Env to type-check every expression offline; the runtime
// uses Programs, which compiles every expression of a Blueprint once and keeps
// the programs for the Blueprint's lifetime. Both see the same variables and
// the same Kubernetes CEL libraries the API server offers to
// x-kubernetes-validations, so an expression that checks is an expression that
// runs.
//
// Variables: self is the custom resource, typed by its CRD's structural
// schema; each child id is the child's live object, typed by its k8s.io/api Go
// struct for built-in kinds (absent fields read as zero values) or by the CRD
// schema for the Blueprint's own kind.
//
// Two shortcuts keep a reconcile cheap without changing an answer: a
// program whose cost CEL's estimate bounds under the API server's per-call
// limit runs without the cost tracker (base.go), and an expression that
// only reads a path of fields, ${self.spec.image}, is answered by walking
// the object where the value is plain, its program run everywhere else
// (path.go; TestFieldPathsAreCEL holds the two to the same answers).
package expr
