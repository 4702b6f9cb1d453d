package codegen

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// generator compiles one Blueprint's expressions into the Renderer of the
// generated controller.
type generator struct {
	bp    *ir.Blueprint
	tm    *typeModel
	api   *apiModel
	exprs []*ir.Expr
	index map[*ir.Expr]int
	vars  map[string]*varInfo
	// cel marks the expressions left to CEL, by index.
	cel map[int]bool
	// goVars are the variables compiled Go reads.
	goVars map[string]bool
	// shapes are the package-level Shape declarations, in order.
	shapes []jen.Code
	// globals are the package-level names taken.
	globals map[string]bool
}

func newGenerator(bp *ir.Blueprint, api *apiModel, tm *typeModel) (*generator, error) {
	g := &generator{
		bp: bp, tm: tm, api: api,
		exprs:   bp.RenderExprs(),
		index:   map[*ir.Expr]int{},
		vars:    map[string]*varInfo{},
		cel:     map[int]bool{},
		goVars:  map[string]bool{},
		globals: map[string]bool{},
	}
	for i, x := range g.exprs {
		g.index[x] = i
	}
	fields := map[string]bool{"r": true, "cr": true, "self": true, "vars": true}
	selfVar := &varInfo{id: expr.Self, field: "self", self: true}
	if bp.Resource.Schema != nil {
		selfVar.t = api.root
	}
	g.vars[expr.Self] = selfVar
	for _, c := range bp.Children {
		v := &varInfo{id: c.ID, field: localName(c.ID, fields)}
		if t := g.childType(c); t != nil {
			v.t = t
		}
		g.vars[c.ID] = v
	}
	return g, nil
}

// childType is the k8s.io/api type of a built-in child, or nil.
func (g *generator) childType(c *ir.Child) *gtype {
	if !c.BuiltIn {
		return nil
	}
	rt, ok := expr.NativeType(c.GroupVersionKind)
	if !ok {
		return nil
	}
	return g.tm.of(rt)
}

// global returns a package-level name based on hint, unique in the file.
func (g *generator) global(hint string) string { return localName(hint, g.globals) }

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
func (g *generator) typed(b *body, v *ir.Value, t *gtype, sp *splices, hint string, elide bool) (code, shape *jen.Statement) {
	splice := func() (*jen.Statement, *jen.Statement) {
		return nil, sp.add(g.untyped(b, v, hint))
	}
	if v.Kind == ir.Null {
		return splice()
	}
	if t.kind == gPointer {
		inner, shape := g.typed(b, v, t.elem, sp, hint, elide)
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
	composite := func(items []jen.Code) *jen.Statement {
		if elide {
			return block(items)
		}
		return t.code().Add(block(items))
	}
	switch v.Kind {
	case ir.Map:
		switch t.kind {
		case gStruct:
			items, shape := g.typedStruct(b, v, t, sp)
			return composite(items), shape
		case gMap:
			var items, fields []jen.Code
			for _, f := range v.Fields {
				c, s := g.typed(b, f.Value, t.elem, sp, f.Key, true)
				fields = append(fields, jen.Lit(f.Key).Op(":").Add(s))
				if c != nil {
					items = append(items, jen.Lit(f.Key).Op(":").Add(c))
				}
			}
			return composite(items), shapeObject(fields)
		}
		return splice()
	case ir.List:
		if t.kind != gSlice {
			return splice()
		}
		var items, shapes []jen.Code
		for _, it := range v.Items {
			c, s := g.typed(b, it, t.elem, sp, hint, true)
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
		return composite(items), jen.Qual(pkgTyped, "List").Custom(jen.Options{Open: "(", Close: ")", Separator: ",", Multi: len(shapes) > 1}, shapes...)
	case ir.Literal:
		c, ok := typedLiteral(v.Literal, t)
		if !ok {
			return splice()
		}
		return c, leaf(t)
	case ir.Expression:
		x, ok := b.compile(v.Expr)
		if !ok {
			return splice()
		}
		c, ok := g.convert(b, x, t, g.index[v.Expr], hint)
		if !ok {
			return splice()
		}
		return c, leaf(t)
	case ir.Interpolation:
		if t.kind != gString && !isOpaque(t, "IntOrString") {
			return splice()
		}
		s, n := g.interpolation(b, v, hint)
		c, ok := g.convert(b, &goExpr{code: s, t: tString, kind: kString}, t, n, hint)
		if !ok {
			return splice()
		}
		return c, leaf(t)
	}
	return splice()
}

// block is a composite literal's braces around items, one per line.
func block(items []jen.Code) *jen.Statement {
	if len(items) == 0 {
		return jen.Values()
	}
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, items...)
}

func shapeObject(fields []jen.Code) *jen.Statement {
	return jen.Qual(pkgTyped, "Object").Call(jen.Qual(pkgTyped, "Fields").Add(block(fields)))
}

// typedStruct builds the fields of a struct literal from a template map, in
// the template's order, with inline fields (apiVersion and kind in
// TypeMeta) gathered where the first of them appears.
func (g *generator) typedStruct(b *body, v *ir.Value, t *gtype, sp *splices) (items []jen.Code, shape *jen.Statement) {
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
		path := t.lookup(g.tm, f.Key)
		if path == nil || len(path) > 2 {
			fields = append(fields, jen.Lit(f.Key).Op(":").Add(sp.add(g.untyped(b, f.Value, f.Key))))
			continue
		}
		leafField := path[len(path)-1]
		c, s := g.typed(b, f.Value, leafField.t, sp, f.Key, false)
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
func (g *generator) convert(b *body, x *goExpr, t *gtype, n int, hint string) (*jen.Statement, bool) {
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
		v, ok := g.convert(b, x, tInt32, n, hint)
		if !ok {
			return nil, false
		}
		return jen.Qual(pkgIntstr, "FromInt32").Call(v), true
	}
	return nil, false
}

// interpolation spells text with ${...} in it as a Go string expression,
// and returns the index of its first expression.
func (g *generator) interpolation(b *body, v *ir.Value, hint string) (*jen.Statement, int) {
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
			first = g.index[p.Expr]
		}
		if x, ok := b.compile(p.Expr); ok {
			if s, ok := formatString(x); ok {
				parts = append(parts, s)
				continue
			}
		}
		val := b.eval(g.index[p.Expr], hint)
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
func (g *generator) untyped(b *body, v *ir.Value, hint string) *jen.Statement {
	switch v.Kind {
	case ir.Null:
		return jen.Nil()
	case ir.Literal:
		return jen.Lit(v.Literal)
	case ir.Map:
		var items []jen.Code
		for _, f := range v.Fields {
			items = append(items, jen.Lit(f.Key).Op(":").Add(g.untyped(b, f.Value, f.Key)))
		}
		return jen.Map(jen.String()).Any().Add(block(items))
	case ir.List:
		var items []jen.Code
		for _, it := range v.Items {
			items = append(items, g.untyped(b, it, hint))
		}
		return jen.Index().Any().Add(block(items))
	case ir.Interpolation:
		s, _ := g.interpolation(b, v, hint)
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
		return b.eval(g.index[v.Expr], hint)
	}
	panic(fmt.Sprintf("codegen: value kind %v", v.Kind))
}

// boolExpr compiles includeWhen or readyWhen: Go when it can, else CEL.
func (g *generator) boolExpr(b *body, x *ir.Expr) *jen.Statement {
	if c, ok := b.compile(x); ok && c.kind == kBool {
		return canon(c)
	}
	n := g.index[x]
	g.cel[n] = true
	name := b.local("ok")
	b.add("",
		jen.List(jen.Id(name), jen.Err()).Op(":=").Id("e").Dot("r").Dot("programs").Dot("EvalBool").Call(
			jen.Id("e").Dot("r").Dot("exprs").Index(jen.Lit(n)), jen.Id("e").Dot("vars")),
		jen.If(jen.Err().Op("!=").Nil()).Block(b.returnErr(jen.Err())),
	)
	return jen.Id(name)
}

// childObject renders the method that builds child c's object.
func (g *generator) childObject(c *ir.Child, method string) jen.Code {
	b := g.newBody(jen.Nil())
	doc := fmt.Sprintf("%s renders the %s child (%s)", method, c.ID, c.Pos)
	v := g.vars[c.ID]
	if c.External || v.t == nil {
		obj := g.untyped(b, c.Template, c.ID)
		stmts := b.code(jen.Return(obj, jen.Nil()))
		what := "as the Blueprint writes it"
		if c.External {
			what = "the reference to the object it reads"
		}
		return jen.Comment(doc+": "+what+".").Line().
			Func().Params(jen.Id("e").Op("*").Id(g.evalType())).Id(method).Params().Params(jen.Map(jen.String()).Any(), jen.Error()).Block(stmts...)
	}
	sp := &splices{}
	obj, shape := g.typed(b, c.Template, v.t, sp, c.ID, false)
	shapeName := g.global(c.ID + "Shape")
	g.shapes = append(g.shapes,
		jen.Comment(fmt.Sprintf("%s is what the template of %s sets.", shapeName, c.ID)),
		jen.Var().Id(shapeName).Op("=").Add(shape),
		jen.Line(),
	)
	values := jen.Nil()
	if len(sp.values) > 0 {
		values = jen.Index().Any().Add(block(sp.values))
	}
	if obj == nil {
		obj = v.t.code().Values()
	}
	stmts := b.code(
		jen.Id("obj").Op(":=").Op("&").Add(obj),
		jen.Return(jen.Qual(pkgTyped, "Unstructured").Call(jen.Id("obj"), jen.Id(shapeName), values)),
	)
	return jen.Comment(fmt.Sprintf("%s as %s %s %s.", doc, article(c.GroupVersion().String()), c.GroupVersion(), c.Kind)).Line().
		Func().Params(jen.Id("e").Op("*").Id(g.evalType())).Id(method).Params().Params(jen.Map(jen.String()).Any(), jen.Error()).Block(stmts...)
}

func article(word string) string {
	if strings.ContainsRune("AEIOUaeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func (g *generator) renderer() string { return g.bp.Resource.Kind + "Renderer" }
func (g *generator) evalType() string {
	return strings.ToLower(g.bp.Resource.Kind[:1]) + g.bp.Resource.Kind[1:] + "Evaluation"
}
func (g *generator) sourcesVar() string {
	return strings.ToLower(g.bp.Resource.Kind[:1]) + g.bp.Resource.Kind[1:] + "Exprs"
}

// rendererCode renders the Renderer, its Evaluation and their helpers.
func (g *generator) rendererCode() []jen.Code {
	bp := g.bp
	var methods []jen.Code

	// Object, one method per child.
	objectMethods := map[string]string{}
	taken := map[string]bool{"SetLive": true, "Include": true, "Ready": true, "Object": true, "Status": true, "fail": true, "eval": true}
	for _, c := range bp.Children {
		name := localName(c.ID+"Object", taken)
		objectMethods[c.ID] = name
		methods = append(methods, g.childObject(c, name), jen.Line())
	}

	// Include and Ready.
	var includeCases, readyCases []jen.Code
	for _, c := range bp.Children {
		if c.IncludeWhen != nil {
			b := g.newBody(jen.False())
			v := g.boolExpr(b, c.IncludeWhen)
			includeCases = append(includeCases, jen.Case(jen.Lit(c.ID)).Block(b.code(jen.Return(v, jen.Nil()))...))
		}
		if c.ReadyWhen != nil {
			b := g.newBody(jen.False(), jen.True())
			v := g.boolExpr(b, c.ReadyWhen)
			readyCases = append(readyCases, jen.Case(jen.Lit(c.ID)).Block(b.code(jen.Return(v, jen.True(), jen.Nil()))...))
		}
	}

	// Status, one case per field.
	var statusCases []jen.Code
	if bp.Status != nil {
		for _, f := range bp.Status.Fields {
			b := g.newBody(jen.Nil())
			v := g.untyped(b, f.Value, f.Key)
			statusCases = append(statusCases, jen.Case(jen.Lit(f.Key)).Block(b.code(jen.Return(v, jen.Nil()))...))
		}
	}

	// Args: reconcile.args.
	argsBody := g.newBody(jen.Nil())
	var args jen.Code = jen.Map(jen.String()).Any().Values()
	if bp.Reconcile != nil && bp.Reconcile.Args != nil && bp.Reconcile.Args.Kind == ir.Map {
		args = g.untyped(argsBody, bp.Reconcile.Args, "args")
	}

	recv := func() *jen.Statement { return jen.Params(jen.Id("e").Op("*").Id(g.evalType())) }
	c := jen.Id("c")
	var code []jen.Code

	// The expression sources, checked against the embedded Blueprint.
	var sources []jen.Code
	for _, x := range g.exprs {
		sources = append(sources, jen.Line().Lit(x.Source))
	}
	if len(sources) > 0 {
		sources = append(sources, jen.Line())
	}
	code = append(code,
		jen.Comment(fmt.Sprintf("%s are the expressions of the %s Blueprint, in the order of ir.Blueprint.RenderExprs;", g.sourcesVar(), bp.Name)),
		jen.Comment("generated code refers to them by index."),
		jen.Var().Id(g.sourcesVar()).Op("=").Index().String().Values(sources...),
		jen.Line(),
	)

	var celIdx []int
	for n := range g.cel {
		celIdx = append(celIdx, n)
	}
	sort.Ints(celIdx)
	var celExprs []jen.Code
	for _, n := range celIdx {
		celExprs = append(celExprs, jen.Id("exprs").Index(jen.Lit(n)))
	}
	compiled := len(g.exprs) - len(celIdx)
	newRenderer := []jen.Code{
		jen.List(jen.Id("exprs"), jen.Err()).Op(":=").Qual(pkgTyped, "Exprs").Call(jen.Id("bp"), jen.Id(g.sourcesVar())),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
	}
	if len(celIdx) == 0 {
		newRenderer = append(newRenderer, jen.Return(jen.Op("&").Id(g.renderer()).Values(jen.Id("exprs").Op(":").Id("exprs")), jen.Nil()))
	} else {
		newRenderer = append(newRenderer,
			jen.List(jen.Id("programs"), jen.Err()).Op(":=").Qual(pkgTyped, "Programs").Call(jen.Id("bp"), jen.Index().Op("*").Qual("github.com/inrun/inrun/ir", "Expr").Add(block(celExprs))),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Return(jen.Op("&").Id(g.renderer()).Add(block([]jen.Code{jen.Id("exprs").Op(":").Id("exprs"), jen.Id("programs").Op(":").Id("programs")})), jen.Nil()),
		)
	}

	code = append(code,
		jen.Comment(fmt.Sprintf("%s is the %s Blueprint compiled to Go: it implements", g.renderer(), bp.Name)),
		jen.Comment(fmt.Sprintf("reconciler.Renderer for runtime-lib. Of its %d expressions, %d are Go;", len(g.exprs), compiled)),
		jen.Comment("the rest run as CEL programs, compiled once by New"+g.renderer()+"."),
		jen.Type().Id(g.renderer()).Struct(
			jen.Id("exprs").Index().Op("*").Qual("github.com/inrun/inrun/ir", "Expr"),
			jen.Id("programs").Op("*").Qual(pkgExpr, "Programs"),
		),
		jen.Line(),
		jen.Var().Id("_").Qual(pkgReconciler, "Renderer").Op("=").Parens(jen.Op("*").Id(g.renderer())).Parens(jen.Nil()),
		jen.Line(),
		jen.Comment(fmt.Sprintf("New%s returns the Renderer of bp, which must be the Blueprint this", g.renderer())),
		jen.Comment("code was generated from."),
		jen.Func().Id("New"+g.renderer()).Params(jen.Id("bp").Op("*").Qual("github.com/inrun/inrun/ir", "Blueprint")).Params(jen.Op("*").Id(g.renderer()), jen.Error()).Block(newRenderer...),
		jen.Line(),
	)

	// Begin.
	self := g.vars[expr.Self]
	evalFields := []jen.Code{jen.Id("r").Op(":").Id("r"), jen.Id("cr").Op(":").Id("cr")}
	if self.t != nil && g.goVars[expr.Self] {
		evalFields = append(evalFields, jen.Id("self").Op(":").Op("&").Add(self.t.code()).Values())
	}
	begin := []jen.Code{
		jen.Id("e").Op(":=").Op("&").Id(g.evalType()).Add(block(evalFields)),
	}
	if self.t != nil && g.goVars[expr.Self] {
		begin = append(begin,
			jen.If(jen.Err().Op(":=").Qual(pkgTyped, "Read").Call(jen.Lit(expr.Self), jen.Id("cr"), jen.Id("e").Dot("self")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), jen.Err())),
		)
	}
	if len(celIdx) > 0 {
		begin = append(begin,
			jen.List(jen.Id("vars"), jen.Err()).Op(":=").Id("r").Dot("programs").Dot("NewVars").Call(jen.Id("cr"), jen.Nil()),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Id("e").Dot("vars").Op("=").Id("vars"),
		)
	}
	begin = append(begin, jen.Return(jen.Id("e"), jen.Nil()))
	code = append(code,
		jen.Comment(fmt.Sprintf("Begin implements reconciler.Renderer: it reads cr as a %s once for the pass.", bp.Resource.Kind)),
		jen.Func().Params(jen.Id("r").Op("*").Id(g.renderer())).Id("Begin").Params(jen.Id("cr").Op("*").Qual(pkgUnstructured, "Unstructured")).Params(jen.Qual(pkgReconciler, "Evaluation"), jen.Error()).Block(begin...),
		jen.Line(),
	)

	// The evaluation's fields.
	fields := []jen.Code{
		jen.Id("r").Op("*").Id(g.renderer()),
		jen.Id("cr").Op("*").Qual(pkgUnstructured, "Unstructured"),
	}
	if self.t != nil && g.goVars[expr.Self] {
		fields = append(fields, jen.Id("self").Op("*").Add(self.t.code()))
	}
	if len(celIdx) > 0 {
		fields = append(fields, jen.Id("vars").Op("*").Qual(pkgExpr, "Vars"))
	}
	var liveFields []jen.Code
	var setLive []jen.Code
	celVars := map[string]bool{}
	for _, n := range celIdx {
		for _, r := range g.exprs[n].Refs {
			celVars[r] = true
		}
	}
	var celIDs []jen.Code
	for _, ch := range bp.Children {
		v := g.vars[ch.ID]
		if celVars[ch.ID] {
			celIDs = append(celIDs, jen.Lit(ch.ID))
		}
		if v.t == nil || !g.goVars[ch.ID] {
			continue
		}
		liveFields = append(liveFields, jen.Id(v.field).Op("*").Add(v.t.code()))
		setLive = append(setLive, jen.Case(jen.Lit(ch.ID)).Block(
			jen.Id("e").Dot(v.field).Op("=").Nil(),
			jen.If(jen.Id("obj").Op("!=").Nil()).Block(
				jen.Id("e").Dot(v.field).Op("=").Op("&").Add(v.t.code()).Values(),
				jen.If(jen.Err().Op(":=").Qual(pkgTyped, "Read").Call(jen.Id("id"), jen.Id("obj"), jen.Id("e").Dot(v.field)), jen.Err().Op("!=").Nil()).Block(
					jen.Return(jen.Err())),
			),
		))
	}
	if len(liveFields) > 0 {
		fields = append(fields, jen.Line().Comment("The live children Go reads; nil while a child has none."))
		fields = append(fields, liveFields...)
	}
	code = append(code,
		jen.Comment(fmt.Sprintf("%s is one pass's view of a %s and its live children.", g.evalType(), bp.Resource.Kind)),
		jen.Type().Id(g.evalType()).Struct(fields...),
		jen.Line(),
	)

	// SetLive.
	var setLiveBody []jen.Code
	if len(setLive) > 0 {
		setLiveBody = append(setLiveBody, jen.Switch(jen.Id("id")).Block(setLive...))
	}
	if len(celIDs) > 0 {
		setLiveBody = append(setLiveBody, jen.Switch(jen.Id("id")).Block(
			jen.Case(celIDs...).Block(jen.Return(jen.Id("e").Dot("vars").Dot("Set").Call(jen.Id("id"), jen.Id("obj")))),
		))
	}
	setLiveBody = append(setLiveBody, jen.Return(jen.Nil()))
	code = append(code,
		jen.Comment("SetLive implements reconciler.Evaluation."),
		jen.Func().Add(recv()).Id("SetLive").Params(jen.Id("id").String(), jen.Id("obj").Op("*").Qual(pkgUnstructured, "Unstructured")).Error().Block(setLiveBody...),
		jen.Line(),
	)

	// Include.
	includeBody := []jen.Code{}
	if len(includeCases) > 0 {
		includeBody = append(includeBody, jen.Switch(c.Clone().Dot("ID")).Block(includeCases...))
	}
	includeBody = append(includeBody, jen.Return(jen.True(), jen.Nil()))
	code = append(code,
		jen.Comment("Include implements reconciler.Evaluation."),
		jen.Func().Add(recv()).Id("Include").Params(jen.Id("c").Op("*").Qual("github.com/inrun/inrun/ir", "Child")).Params(jen.Bool(), jen.Error()).Block(includeBody...),
		jen.Line(),
	)

	// Ready.
	readyBody := []jen.Code{}
	if len(readyCases) > 0 {
		readyBody = append(readyBody, jen.Switch(c.Clone().Dot("ID")).Block(readyCases...))
	}
	readyBody = append(readyBody, jen.Return(jen.False(), jen.False(), jen.Nil()))
	code = append(code,
		jen.Comment("Ready implements reconciler.Evaluation."),
		jen.Func().Add(recv()).Id("Ready").Params(jen.Id("c").Op("*").Qual("github.com/inrun/inrun/ir", "Child")).Params(jen.Id("ready"), jen.Id("defined").Bool(), jen.Err().Error()).Block(readyBody...),
		jen.Line(),
	)

	// Object.
	var objectCases []jen.Code
	for _, ch := range bp.Children {
		objectCases = append(objectCases, jen.Case(jen.Lit(ch.ID)).Block(jen.Return(jen.Id("e").Dot(objectMethods[ch.ID]).Call())))
	}
	objectBody := []jen.Code{}
	if len(objectCases) > 0 {
		objectBody = append(objectBody, jen.Switch(c.Clone().Dot("ID")).Block(objectCases...))
	}
	objectBody = append(objectBody, jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: the Blueprint this operator was generated from has no child %q"), c.Clone().Dot("Pos"), c.Clone().Dot("ID"))))
	code = append(code,
		jen.Comment("Object implements reconciler.Evaluation."),
		jen.Func().Add(recv()).Id("Object").Params(jen.Id("c").Op("*").Qual("github.com/inrun/inrun/ir", "Child")).Params(jen.Map(jen.String()).Any(), jen.Error()).Block(objectBody...),
		jen.Line(),
	)

	// Status.
	statusBody := []jen.Code{}
	if len(statusCases) > 0 {
		statusBody = append(statusBody, jen.Switch(jen.Id("f").Dot("Key")).Block(statusCases...))
	}
	statusBody = append(statusBody, jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("the Blueprint this operator was generated from emits no status field %q"), jen.Id("f").Dot("Key"))))
	code = append(code,
		jen.Comment("Status implements reconciler.Evaluation."),
		jen.Func().Add(recv()).Id("Status").Params(jen.Id("f").Qual("github.com/inrun/inrun/ir", "Field")).Params(jen.Any(), jen.Error()).Block(statusBody...),
		jen.Line(),
	)

	code = append(code,
		jen.Comment("Args implements reconciler.Evaluation: it renders reconcile.args."),
		jen.Func().Add(recv()).Id("Args").Params(jen.Id("args").Op("*").Qual("github.com/inrun/inrun/ir", "Value")).Params(jen.Map(jen.String()).Any(), jen.Error()).Block(
			argsBody.code(jen.Return(args, jen.Nil()))...),
		jen.Line(),
	)

	code = append(code, methods...)

	// Helpers.
	code = append(code,
		jen.Comment("fail reports err as the interpreter does: with the position and source of expression n."),
		jen.Func().Add(recv()).Id("fail").Params(jen.Id("n").Int(), jen.Err().Error()).Error().Block(
			jen.Return(jen.Op("&").Qual(pkgExpr, "EvalError").Values(jen.Dict{jen.Id("Expr"): jen.Id("e").Dot("r").Dot("exprs").Index(jen.Id("n")), jen.Id("Err"): jen.Err()})),
		),
		jen.Line(),
	)
	if len(celIdx) > 0 {
		code = append(code,
			jen.Comment("eval runs expression n, one the Go compiler left to CEL."),
			jen.Func().Add(recv()).Id("eval").Params(jen.Id("n").Int()).Params(jen.Any(), jen.Error()).Block(
				jen.Return(jen.Id("e").Dot("r").Dot("programs").Dot("Eval").Call(jen.Id("e").Dot("r").Dot("exprs").Index(jen.Id("n")), jen.Id("e").Dot("vars"))),
			),
			jen.Line(),
		)
	}
	code = append(code, g.shapes...)
	return code
}

const (
	pkgReconciler   = "github.com/inrun/inrun/runtime-lib/reconciler"
	pkgUnstructured = "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)
