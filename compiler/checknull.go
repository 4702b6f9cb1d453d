package compiler

import (
	"fmt"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// checkNullComparisons reports x == null and x != null where x is a field
// of a typed object. Such a field is never null: an absent field of a
// built-in kind reads as its zero value, and an absent field of a CRD is
// an error, so ${job.status.completionTime != null} is true while the Job
// runs. has() is the test people mean.
func (c *checker) checkNullComparisons(x *ir.Expr, ast *cel.Ast) {
	native := ast.NativeRep()
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.CallKind {
			return
		}
		call := e.AsCall()
		fn := call.FunctionName()
		if (fn != "_==_" && fn != "_!=_") || len(call.Args()) != 2 {
			return
		}
		field, other := call.Args()[0], call.Args()[1]
		if isNullLiteral(field) {
			field, other = other, field
		}
		if !isNullLiteral(other) || field.Kind() != celast.SelectKind || field.AsSelect().IsTestOnly() || nullable(native.GetType(field.ID())) {
			return
		}
		path := selectPath(field)
		always := "true"
		if fn == "_==_" {
			always = "false"
		}
		pos := x.Pos
		if loc := native.SourceInfo().GetStartLocation(e.ID()); loc.Line() == 1 {
			pos.Col += loc.Column()
		}
		c.errs.Add(pos, diag.ExprType, fmt.Sprintf("write has(%s) to test whether it is set", path),
			"${%s}: %s is never null, so this is always %s (an absent field of a built-in kind reads as its zero value, one of a CRD is an error)", x.Source, path, always)
	}))
}

func isNullLiteral(e celast.Expr) bool {
	return e.Kind() == celast.LiteralKind && e.AsLiteral() == types.NullValue
}

// nullable reports whether a value of type t may be null.
func nullable(t *types.Type) bool {
	if t == nil {
		return true
	}
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.NullTypeKind, types.TypeParamKind, types.ErrorKind, types.OpaqueKind:
		return true
	}
	return false
}

// selectPath renders a select chain such as job.status.completionTime.
func selectPath(e celast.Expr) string {
	switch e.Kind() {
	case celast.SelectKind:
		s := e.AsSelect()
		return selectPath(s.Operand()) + "." + s.FieldName()
	case celast.IdentKind:
		return e.AsIdent()
	}
	return "(...)"
}
