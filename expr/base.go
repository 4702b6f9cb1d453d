package expr

import (
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// baseEnv is the API server's base CEL environment
// (k8s.io/apiserver/pkg/cel/environment, at the compatibility version
// Kubernetes 1.37 defaults to, 1.36): the same libraries, cost limits and
// literal validation, but for one thing. The API server refuses list and
// map literals whose items differ in type, {"name": p.name, "port":
// p.port}; kro accepts them, its users write them in every ports list, and
// a template field they fill is still type-checked against its schema. So
// here such a literal is a map (or list) of dyn.
//
// The environment cannot be taken from the API server's and changed:
// cel-go adds validators and never removes one. A test (TestBaseEnv) keeps
// the two alike.
var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		library.URLs(),
		library.Regex(),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		library.Lists(library.ListsVersion(0)),
		library.Authz(),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		library.Quantity(),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
		),
		// Version 3 adds reverse(), which kro has; 4 would change format().
		ext.Strings(ext.StringsVersion(3)),
		ext.Sets(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.AuthzSelectors(),
		ext.TwoVarComprehensions(),
		library.SemverLib(library.SemverVersion(1)),
		ext.Lists(ext.ListsVersion(3)),
	)
})

// libraryEnv is baseEnv with the libraries a Blueprint may call besides
// (libraries): built once, as every Blueprint's environment extends it.
var libraryEnv = sync.OnceValues(func() (*cel.Env, error) {
	base, err := baseEnv()
	if err != nil {
		return nil, err
	}
	return base.Extend(libraries()...)
})

// trackedOptions are the API server's options for a program whose cost
// is not bounded by its form: its cost limit, and the cost tracking that
// enforces it, step by step, as the program runs.
func trackedOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostLimit(celconfig.PerCallLimit),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostTracking(&library.CostEstimator{}),
	}
}

// boundedCost reports whether the cost of ast, however large the objects
// it reads, stays within the API server's per-call limit: its estimate,
// with no size known (so any cost that grows with a size is unbounded),
// is at most the limit. Such a program needs no tracking: the tracker
// would never stop it, and watching every step costs more than most of
// these programs (a path such as self.spec.image) do.
func boundedCost(env *cel.Env, ast *cel.Ast) bool {
	est, err := env.EstimateCost(ast, &library.CostEstimator{}, checker.PresenceTestHasCost(false))
	return err == nil && est.Max <= celconfig.PerCallLimit
}
