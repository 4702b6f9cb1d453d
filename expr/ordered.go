package expr

import (
	"cmp"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// Go's maps iterate in a random order, and so do CEL's over them: a
// comprehension over a map (m.map(k, ...), m.transformList(k, v, ...))
// would render its list in another order on every pass, and the child
// would be written for ever. OrderMapIteration has every comprehension
// over a map iterate its keys in order, so that what a map renders is the
// same whenever the map is.

// orderedFunction is the function OrderMapIteration wraps a map range in.
const orderedFunction = "inrun.ordered"

// OrderMapIteration returns a, checked in env, with the range of every
// comprehension over a map wrapped in inrun.ordered, which iterates its
// keys in order; a itself when it has none.
func OrderMapIteration(env *cel.Env, a *cel.Ast) *cel.Ast {
	if len(mapRanges(a.NativeRep())) == 0 {
		return a
	}
	opt, err := cel.NewStaticOptimizer(orderMaps{})
	if err != nil {
		return a
	}
	ordered, iss := opt.Optimize(env, a)
	if iss.Err() != nil {
		return a
	}
	return ordered
}

// mapRanges returns the ranges of a's comprehensions that are maps, and
// not already ordered.
func mapRanges(a *ast.AST) []ast.Expr {
	var out []ast.Expr
	for _, c := range ast.MatchDescendants(ast.NavigateAST(a), ast.KindMatcher(ast.ComprehensionKind)) {
		r := c.AsComprehension().IterRange()
		if a.GetType(r.ID()).Kind() != types.MapKind {
			continue
		}
		if r.Kind() == ast.CallKind && r.AsCall().FunctionName() == orderedFunction {
			continue
		}
		out = append(out, r)
	}
	return out
}

// orderMaps is the optimizer that wraps map ranges.
type orderMaps struct{}

func (orderMaps) Optimize(ctx *cel.OptimizerContext, a *ast.AST) *ast.AST {
	for _, r := range mapRanges(a) {
		arg, _ := ctx.CopyAST(ast.NewAST(r, a.SourceInfo()))
		ctx.UpdateExpr(r, ctx.NewCall(orderedFunction, arg))
	}
	return a
}

// orderedMap is a map whose iteration is in key order: strings, then
// numbers, then booleans, each in order.
type orderedMap struct{ traits.Mapper }

func ordered(v ref.Val) ref.Val {
	if m, ok := v.(traits.Mapper); ok {
		return orderedMap{m}
	}
	return v
}

func (m orderedMap) Iterator() traits.Iterator {
	var keys []ref.Val
	for it := m.Mapper.Iterator(); it.HasNext() == types.True; {
		keys = append(keys, it.Next())
	}
	slices.SortFunc(keys, compareKeys)
	return types.NewRefValList(types.DefaultTypeAdapter, keys).Iterator()
}

// compareKeys orders map keys: by kind, then by value.
func compareKeys(a, b ref.Val) int {
	rank := func(v ref.Val) int {
		switch v.(type) {
		case types.String:
			return 0
		case types.Int, types.Uint, types.Double:
			return 1
		case types.Bool:
			return 2
		}
		return 3
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	switch x := a.(type) {
	case types.String:
		return cmp.Compare(x, b.(types.String))
	case types.Bool:
		return cmp.Compare(boolRank(x), boolRank(b.(types.Bool)))
	}
	if c, ok := a.(traits.Comparer); ok {
		if r, ok := c.Compare(b).(types.Int); ok {
			return int(r)
		}
	}
	return 0
}

func boolRank(b types.Bool) int {
	if b {
		return 1
	}
	return 0
}
