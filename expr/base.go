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
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.AuthzSelectors(),
		ext.TwoVarComprehensions(),
		library.SemverLib(library.SemverVersion(1)),
		ext.Lists(ext.ListsVersion(3)),
		cel.Lib(programOptions{}),
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

// programOptions are the API server's options for every program: its cost
// limit and cost tracking.
type programOptions struct{}

func (programOptions) CompileOptions() []cel.EnvOption { return nil }

func (programOptions) ProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostLimit(celconfig.PerCallLimit),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostTracking(&library.CostEstimator{}),
	}
}
