package compiler

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// checkLiteralKeys reports the keys of map literals in an expression's
// result that the field the result lands in does not have. CEL types such
// a literal map(string, dyn), so the type check alone lets
// ${self.spec.hosts.map(h, {"hots": h})} through to the API server, which
// refuses the unknown field (or prunes it from a custom resource). Only
// what surely becomes the result is followed: map and list literals, both
// branches of a conditional, and the element a map or filter macro appends.
func (c *checker) checkLiteralKeys(x *ir.Expr, info *ast.SourceInfo, e ast.Expr, s shape, path, kind string) {
	if s == nil || s.kind() == anyShape {
		return
	}
	switch e.Kind() {
	case ast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			me := entry.AsMapEntry()
			switch s.kind() {
			case objectShape:
				key := me.Key()
				if key.Kind() != ast.LiteralKind {
					continue
				}
				name, ok := key.AsLiteral().Value().(string)
				if !ok {
					continue
				}
				fs, ok := s.field(name)
				if !ok {
					hint := ""
					if near, found := closest(name, s.fieldNames()); found {
						hint = "did you mean " + join(path, near) + "?"
					}
					c.errs.Add(exprPos(x, info, key.ID()), diag.TemplateUnknownField, hint, "unknown field %s in %s, in ${%s}", join(path, name), kind, x.Source)
					continue
				}
				c.checkLiteralKeys(x, info, me.Value(), fs, join(path, name), kind)
			case mapShape:
				c.checkLiteralKeys(x, info, me.Value(), s.elem(), path+"[]", kind)
			}
		}
	case ast.ListKind:
		if s.kind() == listShape {
			for _, el := range e.AsList().Elements() {
				c.checkLiteralKeys(x, info, el, s.elem(), path+"[]", kind)
			}
		}
	case ast.CallKind:
		if call := e.AsCall(); call.FunctionName() == operators.Conditional && len(call.Args()) == 3 {
			c.checkLiteralKeys(x, info, call.Args()[1], s, path, kind)
			c.checkLiteralKeys(x, info, call.Args()[2], s, path, kind)
		}
	case ast.ComprehensionKind:
		if comp := e.AsComprehension(); s.kind() == listShape {
			for _, el := range appended(comp.LoopStep(), comp.AccuVar()) {
				c.checkLiteralKeys(x, info, el, s.elem(), path+"[]", kind)
			}
		}
	}
}

// appended returns the elements a comprehension's step appends to its
// accumulator: the x of accu + [x] (map), under a conditional (filter,
// the three-argument map).
func appended(step ast.Expr, accu string) []ast.Expr {
	if step.Kind() != ast.CallKind {
		return nil
	}
	call := step.AsCall()
	args := call.Args()
	switch {
	case call.FunctionName() == operators.Conditional && len(args) == 3:
		return append(appended(args[1], accu), appended(args[2], accu)...)
	case call.FunctionName() == operators.Add && len(args) == 2 &&
		args[0].Kind() == ast.IdentKind && args[0].AsIdent() == accu && args[1].Kind() == ast.ListKind:
		return args[1].AsList().Elements()
	}
	return nil
}

// exprPos is where node id of x's source is in the Blueprint.
func exprPos(x *ir.Expr, info *ast.SourceInfo, id int64) ir.Pos {
	pos := x.Pos
	loc := info.GetStartLocation(id)
	if loc.Line() > 1 {
		pos.Line += loc.Line() - 1
		pos.Col = loc.Column() + 1
	} else if loc.Line() == 1 {
		pos.Col += loc.Column()
	}
	return pos
}
