package expr

import (
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// ReadPaths returns every path of the variable name that e reads, as
// field names from the variable down, longest only: reading
// self.spec.image gives [spec image], not [spec] too. An empty path means
// e reads the variable whole (passes it to a function, iterates it,
// returns it). An index ends a path at what it indexes, and has(x.f)
// reads x: a path may be shorter than what e reads, never longer, so
// whatever lies outside every path is something e cannot see.
func ReadPaths(e celast.Expr, name string) [][]string {
	var out [][]string
	readPaths(e, name, &out)
	return out
}

func readPaths(e celast.Expr, name string, out *[][]string) {
	if p, ok := chain(e, name); ok {
		*out = append(*out, p)
		return
	}
	switch e.Kind() {
	case celast.SelectKind:
		readPaths(e.AsSelect().Operand(), name, out)
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			readPaths(call.Target(), name, out)
		}
		for _, a := range call.Args() {
			readPaths(a, name, out)
		}
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			readPaths(el, name, out)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			me := en.AsMapEntry()
			readPaths(me.Key(), name, out)
			readPaths(me.Value(), name, out)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			readPaths(f.AsStructField().Value(), name, out)
		}
	case celast.ComprehensionKind:
		comp := e.AsComprehension()
		for _, x := range []celast.Expr{comp.IterRange(), comp.AccuInit(), comp.LoopCondition(), comp.LoopStep(), comp.Result()} {
			readPaths(x, name, out)
		}
	}
}

// chain returns the path a chain of selects from the variable name reads:
// name is [], name.spec.image is [spec image], name.spec.?tls is
// [spec tls]; an index ends the chain at what it indexes.
func chain(e celast.Expr, name string) ([]string, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		return []string{}, e.AsIdent() == name
	case celast.SelectKind:
		sel := e.AsSelect()
		if sel.IsTestOnly() {
			return nil, false
		}
		p, ok := chain(sel.Operand(), name)
		return append(p, sel.FieldName()), ok
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case "_?._":
			if len(args) == 2 && args[1].Kind() == celast.LiteralKind {
				if field, ok := args[1].AsLiteral().(types.String); ok {
					p, ok := chain(args[0], name)
					return append(p, string(field)), ok
				}
			}
		case "_[_]", "_[?_]":
			if len(args) == 2 {
				if p, ok := chain(args[0], name); ok && len(p) > 0 {
					return p, true
				}
			}
		}
	}
	return nil, false
}
