package codegen

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/inrun/inrun/ir"
)

// This file builds the values of templates, status and reconcile.args into
// a body: typed, as a k8s.io/api object the child's Shape converts, or
// untyped, as the JSON value the interpreter gives.

// childCode is what the Renderer holds for one child: the method that
// builds its object, the Shape declaration of a typed one, and what they
// use.
type childCode struct {
	method jen.Code
	shape  []jen.Code
	uses   uses
}

// childObject renders the method, named method, that builds child c's
// object; a typed child's Shape is declared as shape.
func (m *renderModel) childObject(c *ir.Child, method, shape string) childCode {
	b := newBody(m, jen.Nil())
	doc := fmt.Sprintf("%s renders the %s child (%s)", method, c.ID, c.Pos)
	decl := func(comment string, stmts []jen.Code) jen.Code {
		return jen.Comment(comment).Line().
			Func().Params(jen.Id("e").Op("*").Id(m.evalType())).Id(method).Params().Params(jen.Map(jen.String()).Any(), jen.Error()).Block(stmts...)
	}
	v := m.vars[c.ID]
	if !m.typed(c) {
		obj := b.untyped(c.Template, c.ID)
		stmts := b.code(jen.Return(obj, jen.Nil()))
		what := "as the Blueprint writes it"
		if c.External {
			what = "the reference to the object it reads"
		}
		return childCode{method: decl(doc+": "+what+".", stmts), uses: b.uses}
	}
	sp := &splices{}
	obj, s := b.typed(c.Template, v.t, sp, c.ID, false)
	values := jen.Nil()
	if len(sp.values) > 0 {
		values = jen.Index().Any().Add(block(sp.values))
	}
	if obj == nil {
		obj = v.t.code().Values()
	}
	stmts := b.code(
		jen.Id("obj").Op(":=").Op("&").Add(obj),
		jen.Return(jen.Qual(pkgTyped, "Unstructured").Call(jen.Id("obj"), jen.Id(shape), values)),
	)
	return childCode{
		method: decl(fmt.Sprintf("%s as %s %s %s.", doc, article(c.GroupVersion().String()), c.GroupVersion(), c.Kind), stmts),
		shape: []jen.Code{
			jen.Comment(fmt.Sprintf("%s is what the template of %s sets.", shape, c.ID)),
			jen.Var().Id(shape).Op("=").Add(s),
			jen.Line(),
		},
		uses: b.uses,
	}
}

func article(word string) string {
	if strings.ContainsRune("AEIOUaeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// splices are the values of one child that the typed object cannot hold.
type splices struct {
	values []jen.Code
}

func (s *splices) add(v jen.Code) *jen.Statement {
	s.values = append(s.values, v)
	return jen.Qual(pkgTyped, "Value").Call(jen.Lit(len(s.values) - 1))
}

// typed builds v as a value of Go type t. It returns the Go expression, or
// nil when the value is spliced in whole, and the Shape that says what of
// the converted object to keep. elide leaves out the type of a composite
// literal, as inside a slice or map literal.
func (b *body) typed(v *ir.Value, t *gtype, sp *splices, hint string, elide bool) (code, shape *jen.Statement) {
	ok := false
	switch {
	case v.Kind == ir.Null:
	case t.kind == gPointer:
		return b.typedPointer(v, t, sp, hint, elide)
	case v.Kind == ir.Map && (t.kind == gStruct || t.kind == gMap):
		return b.typedMap(v, t, sp, elide)
	case v.Kind == ir.List && t.kind == gSlice:
		return b.typedList(v, t, sp, hint, elide)
	case v.Kind == ir.Literal:
		code, ok = typedLiteral(v.Literal, t)
	case v.Kind == ir.Expression:
		code, ok = b.typedExpr(v.Expr, t, hint)
	case v.Kind == ir.Interpolation:
		code, ok = b.typedInterpolation(v, t, hint)
	}
	if !ok {
		// The typed object cannot hold v as the template says it.
		return nil, sp.add(b.untyped(v, hint))
	}
	return code, leaf(t)
}

func (b *body) typedPointer(v *ir.Value, t *gtype, sp *splices, hint string, elide bool) (code, shape *jen.Statement) {
	inner, shape := b.typed(v, t.elem, sp, hint, elide)
	switch {
	case inner == nil:
		return nil, shape
	case t.elem.kind == gStruct && elide:
		return inner, shape
	case t.elem.kind == gStruct:
		return jen.Op("&").Add(inner), shape
	case v.Kind == ir.Literal:
		// ptr.To needs a typed constant.
		return jen.Qual(pkgPtr, "To").Types(t.elem.code()).Call(inner), shape
	}
	return jen.Qual(pkgPtr, "To").Call(inner), shape
}

// typedMap builds a template map as a struct or a map.
func (b *body) typedMap(v *ir.Value, t *gtype, sp *splices, elide bool) (code, shape *jen.Statement) {
	if t.kind == gStruct {
		items, shape := b.typedStruct(v, t, sp)
		return composite(t, items, elide), shape
	}
	var items, fields []jen.Code
	for _, f := range v.Fields {
		c, s := b.typed(f.Value, t.elem, sp, f.Key, true)
		fields = append(fields, jen.Lit(f.Key).Op(":").Add(s))
		if c != nil {
			items = append(items, jen.Lit(f.Key).Op(":").Add(c))
		}
	}
	return composite(t, items, elide), shapeObject(fields)
}

func (b *body) typedList(v *ir.Value, t *gtype, sp *splices, hint string, elide bool) (code, shape *jen.Statement) {
	var items, shapes []jen.Code
	for _, it := range v.Items {
		c, s := b.typed(it, t.elem, sp, hint, true)
		if c == nil {
			// Keep the indexes of the items after it.
			c = zeroValue(t.elem)
			if t.elem.kind == gStruct || t.elem.kind == gPointer && t.elem.elem.kind == gStruct {
				c = jen.Values()
			}
		}
		items = append(items, c)
		shapes = append(shapes, s)
	}
	return composite(t, items, elide), jen.Qual(pkgTyped, "List").Custom(jen.Options{Open: "(", Close: ")", Separator: ",", Multi: len(shapes) > 1}, shapes...)
}

func (b *body) typedExpr(x *ir.Expr, t *gtype, hint string) (*jen.Statement, bool) {
	c, ok := b.compile(x)
	if !ok {
		return nil, false
	}
	return b.convert(c, t, b.m.index[x], hint)
}

func (b *body) typedInterpolation(v *ir.Value, t *gtype, hint string) (*jen.Statement, bool) {
	if t.kind != gString && !isOpaque(t, "IntOrString") {
		return nil, false
	}
	s, n := b.interpolation(v, hint)
	return b.convert(&goExpr{code: s, t: tString, kind: kString}, t, n, hint)
}

// composite is a composite literal of type t, whose type elide leaves out.
func composite(t *gtype, items []jen.Code, elide bool) *jen.Statement {
	if elide {
		return block(items)
	}
	return t.code().Add(block(items))
}

func shapeObject(fields []jen.Code) *jen.Statement {
	return jen.Qual(pkgTyped, "Object").Call(jen.Qual(pkgTyped, "Fields").Add(block(fields)))
}

// typedStruct builds the fields of a struct literal from a template map, in
// the template's order, with inline fields (apiVersion and kind in
// TypeMeta) gathered where the first of them appears.
func (b *body) typedStruct(v *ir.Value, t *gtype, sp *splices) (items []jen.Code, shape *jen.Statement) {
	type entry struct {
		name   string
		code   jen.Code
		inline []jen.Code
		t      *gtype
	}
	var entries []*entry
	inline := map[string]*entry{}
	var fields []jen.Code
	for _, f := range v.Fields {
		path := t.lookup(b.m.tm, f.Key)
		if path == nil || len(path) > 2 {
			fields = append(fields, jen.Lit(f.Key).Op(":").Add(sp.add(b.untyped(f.Value, f.Key))))
			continue
		}
		leafField := path[len(path)-1]
		c, s := b.typed(f.Value, leafField.t, sp, f.Key, false)
		fields = append(fields, jen.Lit(f.Key).Op(":").Add(s))
		if c == nil {
			continue
		}
		if len(path) == 2 {
			in := path[0]
			e := inline[in.goName]
			if e == nil {
				e = &entry{name: in.goName, t: in.t}
				inline[in.goName] = e
				entries = append(entries, e)
			}
			e.inline = append(e.inline, jen.Id(leafField.goName).Op(":").Add(c))
			continue
		}
		entries = append(entries, &entry{name: leafField.goName, code: c})
	}
	for _, e := range entries {
		c := e.code
		if c == nil {
			c = e.t.code().Add(block(e.inline))
		}
		items = append(items, jen.Id(e.name).Op(":").Add(c))
	}
	return items, shapeObject(fields)
}

// leaf is the Shape of a value the typed object holds whole, with the JSON
// value an omitted one stands for.
func leaf(t *gtype) *jen.Statement {
	var zero jen.Code = jen.Nil()
	switch t.kind {
	case gString, gBytes:
		zero = jen.Lit("")
	case gInt:
		zero = jen.Int64().Call(jen.Lit(0))
	case gFloat:
		zero = jen.Float64().Call(jen.Lit(0))
	case gBool:
		zero = jen.False()
	case gMap:
		zero = jen.Map(jen.String()).Any().Values()
	case gSlice:
		zero = jen.Index().Any().Values()
	}
	return jen.Qual(pkgTyped, "Leaf").Call(zero)
}

func isOpaque(t *gtype, name string) bool { return t.kind == gOpaque && t.name == name }

// typedLiteral spells a template literal as a value of Go type t, when the
// converted object gives back exactly the literal.
func typedLiteral(lit any, t *gtype) (*jen.Statement, bool) {
	switch l := lit.(type) {
	case string:
		switch {
		case t.kind == gString:
			return jen.Lit(l), true
		case isOpaque(t, "IntOrString"):
			return jen.Qual(pkgIntstr, "FromString").Call(jen.Lit(l)), true
		case isOpaque(t, "Quantity"):
			if q, err := resource.ParseQuantity(l); err == nil && q.String() == l {
				return jen.Qual(pkgResource, "MustParse").Call(jen.Lit(l)), true
			}
		case t.kind == gBytes:
			if raw, err := base64.StdEncoding.DecodeString(l); err == nil && base64.StdEncoding.EncodeToString(raw) == l {
				return jen.Index().Byte().Call(jen.Lit(string(raw))), true
			}
		}
	case int64:
		switch {
		case t.kind == gInt && !t.unsigned && fits(&goExpr{lit: l, t: tInt64}, bitsOf(t)):
			return jen.Lit(int(l)), true
		case t.kind == gFloat && t.bits == 64:
			return jen.Lit(int(l)), true
		case isOpaque(t, "IntOrString") && fits(&goExpr{lit: l, t: tInt64}, 32):
			return jen.Qual(pkgIntstr, "FromInt32").Call(jen.Lit(int(l))), true
		}
	case float64:
		if t.kind == gFloat && t.bits == 64 {
			return jen.Lit(l), true
		}
	case bool:
		if t.kind == gBool {
			return jen.Lit(l), true
		}
	}
	return nil, false
}

func bitsOf(t *gtype) int {
	if t.bits == 0 {
		return 64
	}
	return t.bits
}

// convert spells x as a value of Go type t, adding a checked conversion to
// b where Go would wrap and CEL's value would not fit.
func (b *body) convert(x *goExpr, t *gtype, n int, hint string) (*jen.Statement, bool) {
	same := x.t.pkg == t.pkg && x.t.name == t.name && x.t.kind == t.kind
	switch {
	case t.kind == gString && x.kind == kString,
		t.kind == gBool && x.kind == kBool,
		t.kind == gFloat && t.bits == 64 && x.kind == kDouble:
		if same || x.lit != nil {
			return x.code.Clone(), true
		}
		return t.code().Call(x.code.Clone()), true
	case t.kind == gInt && !t.unsigned && x.kind == kInt:
		if same {
			return x.code.Clone(), true
		}
		if x.lit != nil {
			if !fits(x, bitsOf(t)) {
				return nil, false
			}
			return jen.Lit(int(x.lit.(int64))), true
		}
		if fits(x, bitsOf(t)) {
			return t.code().Call(x.code.Clone()), true
		}
		if t.bits != 32 {
			return nil, false
		}
		v := b.call(n, hint, jen.Qual(pkgTyped, "Int32").Call(canon(x)))
		if t.name != "int32" || t.pkg != "" {
			return t.code().Call(v), true
		}
		return v, true
	case t.kind == gBytes && x.kind == kBytes:
		return x.code.Clone(), true
	case (t.kind == gMap || t.kind == gSlice) && x.kind == kOther && x.t.String() == t.String():
		return x.code.Clone(), true
	case isOpaque(t, "IntOrString") && x.kind == kString:
		return jen.Qual(pkgIntstr, "FromString").Call(canon(x)), true
	case isOpaque(t, "IntOrString") && x.kind == kInt:
		v, ok := b.convert(x, tInt32, n, hint)
		if !ok {
			return nil, false
		}
		return jen.Qual(pkgIntstr, "FromInt32").Call(v), true
	}
	return nil, false
}

// interpolation spells text with ${...} in it as a Go string expression,
// and returns the index of its first expression.
func (b *body) interpolation(v *ir.Value, hint string) (*jen.Statement, int) {
	var parts []*jen.Statement
	first := -1
	for _, p := range v.Parts {
		if p.Expr == nil {
			if p.Text != "" {
				parts = append(parts, jen.Lit(p.Text))
			}
			continue
		}
		if first < 0 {
			first = b.m.index[p.Expr]
		}
		if x, ok := b.compile(p.Expr); ok {
			if s, ok := formatString(x); ok {
				parts = append(parts, s)
				continue
			}
		}
		val := b.eval(b.m.index[p.Expr], hint)
		parts = append(parts, jen.Qual(pkgExpr, "FormatString").Call(val))
	}
	if len(parts) == 0 {
		return jen.Lit(""), first
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out = out.Clone().Op("+").Add(p)
	}
	return out, first
}

// untyped builds v as a JSON value: the same value the interpreter's
// Renderer gives.
func (b *body) untyped(v *ir.Value, hint string) *jen.Statement {
	switch v.Kind {
	case ir.Null:
		return jen.Nil()
	case ir.Literal:
		return jen.Lit(v.Literal)
	case ir.Map:
		var items []jen.Code
		for _, f := range v.Fields {
			items = append(items, jen.Lit(f.Key).Op(":").Add(b.untyped(f.Value, f.Key)))
		}
		return jen.Map(jen.String()).Any().Add(block(items))
	case ir.List:
		var items []jen.Code
		for _, it := range v.Items {
			items = append(items, b.untyped(it, hint))
		}
		return jen.Index().Any().Add(block(items))
	case ir.Interpolation:
		s, _ := b.interpolation(v, hint)
		return s
	case ir.Expression:
		if x, ok := b.compile(v.Expr); ok {
			switch x.kind {
			case kString, kInt, kDouble, kBool:
				if x.lit != nil {
					return jen.Lit(x.lit)
				}
				return canon(x)
			case kBytes:
				return jen.Qual("encoding/base64", "StdEncoding").Dot("EncodeToString").Call(x.code)
			}
		}
		return b.eval(b.m.index[v.Expr], hint)
	}
	panic(fmt.Sprintf("codegen: value kind %v", v.Kind))
}

// text builds a condition's reason or message as a Go string: "" when v
// is nil.
func (b *body) text(v *ir.Value, hint string) *jen.Statement {
	switch {
	case v == nil:
		return jen.Lit("")
	case v.Kind == ir.Expression:
		// Formatted as interpolated text formats its one expression.
		v = &ir.Value{Kind: ir.Interpolation, Pos: v.Pos, Parts: []ir.Part{{Expr: v.Expr}}}
	}
	return b.untyped(v, hint)
}

// boolExpr compiles includeWhen or readyWhen: Go when it can, else CEL.
func (b *body) boolExpr(x *ir.Expr) *jen.Statement {
	if c, ok := b.compile(x); ok && c.kind == kBool {
		return canon(c)
	}
	return b.evalBool(b.m.index[x])
}
