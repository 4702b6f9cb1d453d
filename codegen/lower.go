package codegen

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// This file lowers CEL to Go: the expressions Go can evaluate with CEL's
// meaning become Go expressions, checks and fallible steps; the others
// stay CEL. It reads the checked AST the compiler left in the IR, never the
// expression's source.

// celKind is the CEL type of a compiled expression.
type celKind int

const (
	kInt celKind = iota
	kDouble
	kString
	kBool
	kBytes
	// kOther is a map or list, which generated code only passes on whole.
	kOther
)

// goExpr is an expression compiled to Go: code of Go type t, valid once the
// statements the compilation added to its body have run.
type goExpr struct {
	code *jen.Statement
	t    *gtype
	kind celKind
	// lit holds the value of a literal, which Go may spell untyped.
	lit any
	// binary is set for an operator's result, which needs parentheses as
	// an operand.
	binary bool
	// min and max bound an integer read from a schema field.
	min, max *float64
}

// lowering is one expression being lowered into a body: expression n of
// the Renderer's.
type lowering struct {
	b *body
	n int
}

// lower lowers the checked expression a, the Renderer's expression n, into
// b. When it reports false, b may hold statements of the attempt: see
// body.compile, which resets it.
func lower(b *body, n int, a *cel.Ast) (*goExpr, bool) {
	c := &lowering{b: b, n: n}
	return c.expr(a.NativeRep().Expr())
}

func (c *lowering) expr(e ast.Expr) (*goExpr, bool) {
	switch e.Kind() {
	case ast.LiteralKind:
		return literal(e.AsLiteral())
	case ast.SelectKind, ast.IdentKind:
		return c.path(e)
	case ast.CallKind:
		return c.call(e.AsCall())
	}
	return nil, false
}

func literal(v any) (*goExpr, bool) {
	switch t := v.(type) {
	case types.Int:
		return &goExpr{code: jen.Lit(int64(t)), t: tInt64, kind: kInt, lit: int64(t)}, true
	case types.Double:
		return &goExpr{code: jen.Lit(float64(t)), t: tFloat64, kind: kDouble, lit: float64(t)}, true
	case types.String:
		return &goExpr{code: jen.Lit(string(t)), t: tString, kind: kString, lit: string(t)}, true
	case types.Bool:
		return &goExpr{code: jen.Lit(bool(t)), t: tBool, kind: kBool, lit: bool(t)}, true
	}
	return nil, false
}

// path lowers a variable or a chain of field selections on one.
func (c *lowering) path(e ast.Expr) (*goExpr, bool) {
	v, keys, ok := c.variable(e)
	if !ok {
		return nil, false
	}
	c.guardLive(v)
	code, t := jen.Id("e").Dot(v.field), v.t
	var schema *apiextensionsv1.JSONSchemaProps
	for i := range keys {
		var f *gfield
		if code, t, f, ok = c.field(v, keys, i, code, t); !ok {
			return nil, false
		}
		if v.self {
			schema = f.schema
		}
	}
	return pathValue(code, t, schema)
}

// variable splits a chain of field selections into the variable it starts
// from and the keys it selects, when Go can read that variable.
func (c *lowering) variable(e ast.Expr) (*varInfo, []string, bool) {
	var keys []string
	for e.Kind() == ast.SelectKind {
		s := e.AsSelect()
		if s.IsTestOnly() {
			return nil, nil, false
		}
		keys = append([]string{s.FieldName()}, keys...)
		e = s.Operand()
	}
	if e.Kind() != ast.IdentKind {
		return nil, nil, false
	}
	v := c.b.m.vars[e.AsIdent()]
	if v == nil || v.t == nil || v.list || len(keys) == 0 {
		return nil, nil, false
	}
	return v, keys, true
}

// guardLive checks, once per body, that child v has a live object.
func (c *lowering) guardLive(v *varInfo) {
	if v.self || c.b.guarded[v.id] {
		return
	}
	// The runtime never asks for an expression over a child that has no
	// live object; the check keeps a broken promise from panicking.
	c.b.guarded[v.id] = true
	c.b.guards = append(c.b.guards, jen.If(jen.Id("e").Dot(v.field).Op("==").Nil()).Block(
		c.b.fail(c.n, jen.Qual(pkgTyped, "NoSuchVariable").Call(jen.Lit(v.id)))))
}

// field lowers the selection of keys[i] on code, a value of type t read
// from variable v: it returns the selection, its type (through a pointer)
// and the field.
func (c *lowering) field(v *varInfo, keys []string, i int, code *jen.Statement, t *gtype) (*jen.Statement, *gtype, *gfield, bool) {
	if t.kind != gStruct {
		return nil, nil, nil, false
	}
	fields := t.lookup(c.b.m.tm, keys[i])
	if fields == nil {
		return nil, nil, nil, false
	}
	f := fields[len(fields)-1]
	if v.self && !c.checkSet(keys[:i+1]) {
		return nil, nil, nil, false
	}
	for _, pf := range fields {
		if !pf.embedded {
			code = code.Clone().Dot(pf.goName)
		}
	}
	ft := f.t
	if ft.kind != gPointer {
		return code, ft, f, true
	}
	ft = ft.elem
	scalar := ft.kind == gString || ft.kind == gInt || ft.kind == gFloat || ft.kind == gBool
	last := i == len(keys)-1
	switch {
	case v.self && last && scalar:
		// Checked set by checkSet, so set.
		code = jen.Op("*").Add(code)
	case v.self && ft.kind == gStruct:
		// Go selects through the pointer, checked set by checkSet.
	case !v.self && last && scalar:
		// A nil pointer of a built-in kind reads as its zero value in
		// CEL, as in ptr.Deref.
		code = jen.Qual(pkgPtr, "Deref").Call(code, zeroValue(ft))
	default:
		return nil, nil, nil, false
	}
	return code, ft, f, true
}

// checkSet adds the check that the custom resource's field at keys is set,
// unless the API server guarantees it; false when Go cannot read the field.
// One check per field and body: the first expression that reads a missing
// field fails, as in the interpreter.
func (c *lowering) checkSet(keys []string) bool {
	present, guaranteed := c.b.m.selfPresence(keys)
	if !present {
		return false
	}
	if key := "has:" + strings.Join(keys, "."); !guaranteed && !c.b.guarded[key] {
		c.b.guarded[key] = true
		args := []jen.Code{jen.Id("e").Dot("cr").Dot("Object")}
		for _, p := range keys {
			args = append(args, jen.Lit(p))
		}
		c.b.add(key, jen.If(jen.Op("!").Qual(pkgTyped, "Has").Call(args...)).Block(
			c.b.fail(c.n, jen.Qual(pkgTyped, "NoSuchKey").Call(jen.Lit(keys[len(keys)-1])))))
	}
	return true
}

// pathValue is the value a path selects, code of Go type t, when CEL reads
// the same value; schema bounds an integer field of the custom resource.
func pathValue(code *jen.Statement, t *gtype, schema *apiextensionsv1.JSONSchemaProps) (*goExpr, bool) {
	out := &goExpr{code: code, t: t}
	switch t.kind {
	case gString:
		out.kind = kString
	case gBool:
		out.kind = kBool
	case gInt:
		if t.unsigned {
			return nil, false
		}
		out.kind = kInt
		if schema != nil {
			out.min, out.max = schema.Minimum, schema.Maximum
		}
	case gFloat:
		if t.bits != 64 {
			return nil, false
		}
		out.kind = kDouble
	case gBytes:
		out.kind = kBytes
	case gMap, gSlice:
		if !plain(t.elem) {
			return nil, false
		}
		out.kind = kOther
	default:
		return nil, false
	}
	return out, true
}

// plain reports whether values of t read the same in Go and in CEL.
func plain(t *gtype) bool {
	switch t.kind {
	case gString, gBool, gBytes:
		return true
	case gInt:
		return !t.unsigned
	case gFloat:
		return t.bits == 64
	}
	return false
}

// selfPresence says whether the custom resource field at keys can be read
// by Go at all (present), and whether the API server guarantees it is set
// whenever its parent is (guaranteed): required or defaulted.
func (m *renderModel) selfPresence(keys []string) (present, guaranteed bool) {
	switch keys[0] {
	case "apiVersion", "kind":
		return len(keys) == 1, true
	case "metadata":
		if len(keys) == 1 {
			return true, true
		}
		switch keys[1] {
		case "name":
			return true, true
		case "namespace":
			return true, m.bp.Resource.Namespaced
		case "generateName", "uid", "resourceVersion", "generation", "labels", "annotations":
			return true, false
		}
		return false, false
	}
	s := m.bp.Resource.Schema
	if s == nil {
		return false, false
	}
	for _, k := range keys {
		p, ok := s.Properties[k]
		if !ok || p.Nullable {
			return false, false
		}
		guaranteed = p.Default != nil
		for _, r := range s.Required {
			guaranteed = guaranteed || r == k
		}
		s = &p
	}
	return true, guaranteed
}

func (c *lowering) call(call ast.CallExpr) (*goExpr, bool) {
	args := call.Args()
	if call.IsMemberFunction() {
		args = append([]ast.Expr{call.Target()}, args...)
	}
	switch fn := call.FunctionName(); fn {
	case operators.LogicalAnd, operators.LogicalOr:
		return c.logical(fn, args)
	case operators.Conditional:
		return c.conditional(args)
	case operators.LogicalNot:
		return c.not(args[0])
	case operators.Negate:
		return c.negate(args[0])
	case operators.Add, operators.Subtract, operators.Multiply, operators.Divide, operators.Modulo:
		return c.arith(fn, args)
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		return c.compare(fn, args)
	case "size":
		return c.size(args)
	case "string":
		return c.toString(args)
	}
	return nil, false
}

// logical lowers && and ||. CEL's forgive an error on the side that does
// not decide; Go's do not. So the operands may only fail alike: by a field
// of the custom resource that both read being missing.
func (c *lowering) logical(fn string, args []ast.Expr) (*goExpr, bool) {
	m := c.b.mark()
	_, rKeys, ok := c.checksOnly(args[1])
	c.b.reset(m)
	if !ok {
		return nil, false
	}
	l, lKeys, ok := c.checksOnly(args[0])
	if !ok || l.kind != kBool || strings.Join(lKeys, ",") != strings.Join(rKeys, ",") {
		c.b.reset(m)
		return nil, false
	}
	r, _, ok := c.checksOnly(args[1])
	if !ok || r.kind != kBool {
		c.b.reset(m)
		return nil, false
	}
	op := "&&"
	if fn == operators.LogicalOr {
		op = "||"
	}
	return &goExpr{code: operand(l, r).Op(op).Add(operand(r, l)), t: tBool, kind: kBool, binary: true}, true
}

// conditional lowers c ? a : b. An error in the condition is the
// conditional's; only the branch taken is evaluated, so the branches may
// not fail.
func (c *lowering) conditional(args []ast.Expr) (*goExpr, bool) {
	cond, ok := c.expr(args[0])
	if !ok || cond.kind != kBool {
		return nil, false
	}
	a, ok := c.pure(args[1])
	if !ok {
		return nil, false
	}
	b, ok := c.pure(args[2])
	if !ok || a.kind != b.kind || a.kind == kOther {
		return nil, false
	}
	return &goExpr{code: jen.Qual(pkgTyped, "If").Call(canon(cond), canon(a), canon(b)), t: canonType(a.kind), kind: a.kind}, true
}

func (c *lowering) not(arg ast.Expr) (*goExpr, bool) {
	x, ok := c.expr(arg)
	if !ok || x.kind != kBool {
		return nil, false
	}
	return &goExpr{code: jen.Op("!").Add(operand(x, x)), t: tBool, kind: kBool}, true
}

func (c *lowering) negate(arg ast.Expr) (*goExpr, bool) {
	x, ok := c.expr(arg)
	if !ok {
		return nil, false
	}
	switch x.kind {
	case kInt:
		if x.lit != nil {
			return literal(types.Int(-x.lit.(int64)))
		}
		return &goExpr{code: c.b.call(c.n, "v", jen.Qual(pkgTyped, "Neg").Call(canon(x))), t: tInt64, kind: kInt}, true
	case kDouble:
		return &goExpr{code: jen.Op("-").Add(operand(x, x)), t: tFloat64, kind: kDouble}, true
	}
	return nil, false
}

// size lowers size(): of a string it counts code points.
func (c *lowering) size(args []ast.Expr) (*goExpr, bool) {
	if len(args) != 1 {
		return nil, false
	}
	x, ok := c.expr(args[0])
	if !ok {
		return nil, false
	}
	switch x.kind {
	case kString:
		return &goExpr{code: jen.Qual(pkgTyped, "Size").Call(canon(x)), t: tInt64, kind: kInt}, true
	case kBytes, kOther:
		return &goExpr{code: jen.Int64().Call(jen.Len(x.code)), t: tInt64, kind: kInt}, true
	}
	return nil, false
}

// toString lowers string().
func (c *lowering) toString(args []ast.Expr) (*goExpr, bool) {
	if len(args) != 1 {
		return nil, false
	}
	x, ok := c.expr(args[0])
	if !ok {
		return nil, false
	}
	code, ok := formatString(x)
	if !ok {
		return nil, false
	}
	return &goExpr{code: code, t: tString, kind: kString}, true
}

// pure compiles e only if it adds no statement: it cannot fail.
func (c *lowering) pure(e ast.Expr) (*goExpr, bool) {
	n := len(c.b.stmts)
	x, ok := c.expr(e)
	if !ok || len(c.b.stmts) != n {
		return nil, false
	}
	return x, true
}

// checksOnly compiles e only if all it adds are checks that fields of the
// custom resource are set, and returns their keys, sorted.
func (c *lowering) checksOnly(e ast.Expr) (*goExpr, []string, bool) {
	n := len(c.b.stmts)
	x, ok := c.expr(e)
	if !ok {
		return nil, nil, false
	}
	var keys []string
	for _, k := range c.b.kinds[n:] {
		if k == "" {
			return nil, nil, false
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return x, keys, true
}

func (c *lowering) arith(fn string, args []ast.Expr) (*goExpr, bool) {
	l, ok := c.expr(args[0])
	if !ok {
		return nil, false
	}
	r, ok := c.expr(args[1])
	if !ok || l.kind != r.kind {
		return nil, false
	}
	switch l.kind {
	case kString:
		if fn != operators.Add {
			return nil, false
		}
		return &goExpr{code: operand(l, r).Op("+").Add(operand(r, l)), t: tString, kind: kString, binary: true}, true
	case kDouble:
		ops := map[string]string{operators.Add: "+", operators.Subtract: "-", operators.Multiply: "*", operators.Divide: "/"}
		op, ok := ops[fn]
		if !ok {
			return nil, false
		}
		return &goExpr{code: operand(l, r).Op(op).Add(operand(r, l)), t: tFloat64, kind: kDouble, binary: true}, true
	case kInt:
		funcs := map[string]string{operators.Add: "Add", operators.Subtract: "Sub", operators.Multiply: "Mul", operators.Divide: "Div", operators.Modulo: "Mod"}
		return &goExpr{code: c.b.call(c.n, "v", jen.Qual(pkgTyped, funcs[fn]).Call(canon(l), canon(r))), t: tInt64, kind: kInt}, true
	}
	return nil, false
}

func (c *lowering) compare(fn string, args []ast.Expr) (*goExpr, bool) {
	l, ok := c.expr(args[0])
	if !ok {
		return nil, false
	}
	r, ok := c.expr(args[1])
	if !ok || l.kind != r.kind {
		return nil, false
	}
	ops := map[string]string{
		operators.Equals: "==", operators.NotEquals: "!=", operators.Less: "<",
		operators.LessEquals: "<=", operators.Greater: ">", operators.GreaterEquals: ">=",
	}
	switch l.kind {
	case kInt, kDouble, kString:
	case kBool:
		if fn != operators.Equals && fn != operators.NotEquals {
			return nil, false
		}
	default:
		return nil, false
	}
	lc, rc := operand(l, r), operand(r, l)
	return &goExpr{code: lc.Op(ops[fn]).Add(rc), t: tBool, kind: kBool, binary: true}, true
}

// canon spells x in the Go type of its CEL kind: int64, float64, string,
// bool or []byte.
func canon(x *goExpr) *jen.Statement {
	if c := canonType(x.kind); x.kind == kOther || x.t.pkg == "" && x.t.name == c.name && x.t.kind == c.kind {
		return x.code.Clone()
	}
	return canonType(x.kind).code().Call(x.code.Clone())
}

// operand spells x for a binary operator whose other operand is y: a
// literal next to a non-literal is untyped, so that Go gives it y's type.
func operand(x, y *goExpr) *jen.Statement {
	switch {
	case x.lit != nil && y.lit == nil:
		return jen.Lit(untyped(x.lit))
	case x.binary:
		return jen.Parens(canon(x))
	}
	return canon(x)
}

func untyped(v any) any {
	if i, ok := v.(int64); ok {
		return int(i)
	}
	return v
}

func canonType(k celKind) *gtype {
	switch k {
	case kInt:
		return tInt64
	case kDouble:
		return tFloat64
	case kString:
		return tString
	case kBool:
		return tBool
	case kBytes:
		return tBytes
	}
	return nil
}

// formatString spells x as text the way CEL's string() and interpolation
// format it.
func formatString(x *goExpr) (*jen.Statement, bool) {
	switch x.kind {
	case kString:
		return canon(x), true
	case kInt:
		if x.lit != nil {
			return jen.Lit(strconv.FormatInt(x.lit.(int64), 10)), true
		}
		return jen.Qual("strconv", "FormatInt").Call(canon(x), jen.Lit(10)), true
	case kBool:
		return jen.Qual("strconv", "FormatBool").Call(canon(x)), true
	case kDouble:
		return jen.Qual("strconv", "FormatFloat").Call(canon(x), jen.LitRune('g'), jen.Lit(-1), jen.Lit(64)), true
	}
	return nil, false
}

// zeroValue spells the zero value of a scalar type.
func zeroValue(t *gtype) *jen.Statement {
	switch t.kind {
	case gString:
		if t.named() {
			return t.code().Call(jen.Lit(""))
		}
		return jen.Lit("")
	case gBool:
		if t.named() {
			return t.code().Call(jen.False())
		}
		return jen.False()
	case gInt, gFloat:
		return t.code().Call(jen.Lit(0))
	case gPointer, gSlice, gMap, gBytes:
		return jen.Nil()
	}
	return t.code().Values()
}

// fits reports whether every value of x fits in an integer of bits bits.
func fits(x *goExpr, bits int) bool {
	if x.t.kind == gInt && x.t.bits != 0 && x.t.bits <= bits {
		return true
	}
	lo, hi := -math.Pow(2, float64(bits-1)), math.Pow(2, float64(bits-1))-1
	if x.lit != nil {
		v := float64(x.lit.(int64))
		return v >= lo && v <= hi
	}
	return x.min != nil && x.max != nil && *x.min >= lo && *x.max <= hi
}
