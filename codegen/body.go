package codegen

import (
	"github.com/dave/jennifer/jen"

	"github.com/inrun/inrun/ir"
)

// body collects the statements of one generated function: checks and
// fallible steps hoisted before the value they compute. Every function of
// the Renderer has a body of its own, which records what its code uses:
// bodies share nothing but the renderModel, which they only read.
type body struct {
	m *renderModel
	uses
	// guards check that the children the body reads have live objects;
	// they come first and cannot fail where the runtime keeps its promise.
	guards []jen.Code
	stmts  []jen.Code
	// kinds say what each statement is: "" for a fallible step, or the
	// key of a check that a field of the custom resource is set.
	kinds []string
	names map[string]bool
	// zero are the values returned next to an error.
	zero    []jen.Code
	guarded map[string]bool
}

func newBody(m *renderModel, zero ...jen.Code) *body {
	names := map[string]bool{"e": true, "err": true, "obj": true, "values": true}
	return &body{m: m, uses: newUses(), names: names, zero: zero, guarded: map[string]bool{}}
}

// uses is what generated code needs besides itself: the expressions it
// leaves to CEL, by index, and the variables its Go reads.
type uses struct {
	cel   map[int]bool
	reads map[string]bool
}

func newUses() uses { return uses{cel: map[int]bool{}, reads: map[string]bool{}} }

// merge adds what o uses to u.
func (u uses) merge(o uses) {
	for n := range o.cel {
		u.cel[n] = true
	}
	for id := range o.reads {
		u.reads[id] = true
	}
}

// code is the body's statements, then final.
func (b *body) code(final ...jen.Code) []jen.Code {
	out := append(append([]jen.Code{}, b.guards...), b.stmts...)
	return append(out, final...)
}

func (b *body) local(hint string) string { return localName(hint, b.names) }

// returnErr returns err from the function.
func (b *body) returnErr(err jen.Code) jen.Code {
	return jen.Return(append(append([]jen.Code{}, b.zero...), err)...)
}

// fail returns err, from expression n, wrapped as the interpreter wraps it.
func (b *body) fail(n int, err jen.Code) jen.Code {
	return b.returnErr(jen.Id("e").Dot("fail").Call(jen.Lit(n), err))
}

// mark is a body as it was, for reset to go back to when an expression
// turns out not to compile.
type mark struct {
	n, g    int
	names   map[string]bool
	guarded map[string]bool
}

func (b *body) mark() mark {
	m := mark{n: len(b.stmts), g: len(b.guards), names: map[string]bool{}, guarded: map[string]bool{}}
	for k, v := range b.names {
		m.names[k] = v
	}
	for k, v := range b.guarded {
		m.guarded[k] = v
	}
	return m
}

func (b *body) reset(m mark) {
	b.stmts, b.kinds, b.guards = b.stmts[:m.n], b.kinds[:m.n], b.guards[:m.g]
	b.names, b.guarded = m.names, m.guarded
}

// add appends statements of one kind.
func (b *body) add(kind string, codes ...jen.Code) {
	for _, c := range codes {
		b.stmts = append(b.stmts, c)
		b.kinds = append(b.kinds, kind)
	}
}

// call adds `name, err := call` and the check of err, for a fallible step
// of expression n, and returns name.
func (b *body) call(n int, hint string, call jen.Code) *jen.Statement {
	name := b.local(hint)
	b.add("",
		jen.List(jen.Id(name), jen.Err()).Op(":=").Add(call),
		jen.If(jen.Err().Op("!=").Nil()).Block(b.fail(n, jen.Err())),
	)
	return jen.Id(name)
}

// eval adds the evaluation of expression n by its CEL program and returns
// the local holding its JSON value.
func (b *body) eval(n int, hint string) *jen.Statement {
	b.cel[n] = true
	name := b.local(hint)
	b.add("",
		jen.List(jen.Id(name), jen.Err()).Op(":=").Id("e").Dot("eval").Call(jen.Lit(n)),
		jen.If(jen.Err().Op("!=").Nil()).Block(b.returnErr(jen.Err())),
	)
	return jen.Id(name)
}

// evalBool adds the evaluation of boolean expression n by its CEL program
// and returns the local holding its value.
func (b *body) evalBool(n int) *jen.Statement {
	b.cel[n] = true
	name := b.local("ok")
	b.add("",
		jen.List(jen.Id(name), jen.Err()).Op(":=").Id("e").Dot("r").Dot("programs").Dot("EvalBool").Call(
			jen.Id("e").Dot("r").Dot("exprs").Index(jen.Lit(n)), jen.Id("e").Dot("vars")),
		jen.If(jen.Err().Op("!=").Nil()).Block(b.returnErr(jen.Err())),
	)
	return jen.Id(name)
}

// compile lowers expression x to Go in b (see lower.go), or reports false
// when it must stay CEL; then b is as it was.
func (b *body) compile(x *ir.Expr) (*goExpr, bool) {
	if x.Checked == nil {
		return nil, false
	}
	m := b.mark()
	out, ok := lower(b, b.m.index[x], x.Checked)
	if !ok {
		b.reset(m)
		return nil, false
	}
	for _, r := range x.Refs {
		b.reads[r] = true
	}
	return out, true
}
