package codegen

import (
	"fmt"
	"slices"
	"sort"

	"github.com/dave/jennifer/jen"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// rendererDecls lays out the Renderer of m from its lowered bodies: the
// expressions' sources, the Renderer and its constructor, the evaluation
// and its methods, each child's Object method, helpers, and the Shapes.
func rendererDecls(m *renderModel, l *lowered) []jen.Code {
	e := &rendererEmitter{m: m, l: l, celIdx: l.celIndexes()}
	var code []jen.Code
	for _, decls := range [][]jen.Code{
		e.sources(), e.rendererType(), e.begin(), e.evaluationType(), e.setLive(), e.setLiveItems(),
		e.include(), e.ready(), e.object(), e.status(), e.conditions(), e.failedWhen(), e.args(), e.collections(),
		l.objects, e.helpers(), l.shapes,
	} {
		code = append(code, decls...)
	}
	return code
}

// celIndexes are the indexes of the expressions left to CEL, sorted.
func (l *lowered) celIndexes() []int {
	out := make([]int, 0, len(l.cel))
	for n := range l.cel {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// rendererEmitter renders the Renderer's declarations, each in a method of
// its own; it only reads.
type rendererEmitter struct {
	m      *renderModel
	l      *lowered
	celIdx []int
}

func (e *rendererEmitter) recv() *jen.Statement {
	return jen.Params(jen.Id("e").Op("*").Id(e.m.evalType()))
}

// readsSelf reports whether Go reads the custom resource as its Go type.
func (e *rendererEmitter) readsSelf() bool {
	return e.m.vars[expr.Self].t != nil && e.l.reads[expr.Self]
}

// live are the children whose live objects Go reads, in child order.
func (e *rendererEmitter) live() []*varInfo {
	var out []*varInfo
	for _, c := range e.m.bp.Children {
		if v := e.m.vars[c.ID]; v.t != nil && !v.list && e.l.reads[c.ID] {
			out = append(out, v)
		}
	}
	return out
}

// sources declares the expressions' sources, checked against the embedded
// Blueprint by typed.Exprs.
func (e *rendererEmitter) sources() []jen.Code {
	var sources []jen.Code
	for _, x := range e.m.exprs {
		sources = append(sources, jen.Line().Lit(x.Source))
	}
	if len(sources) > 0 {
		sources = append(sources, jen.Line())
	}
	return []jen.Code{
		jen.Comment(fmt.Sprintf("%s are the expressions of the %s Blueprint, in the order of ir.Blueprint.RenderExprs;", e.m.sourcesVar(), e.m.bp.Name)),
		jen.Comment("generated code refers to them by index."),
		jen.Var().Id(e.m.sourcesVar()).Op("=").Index().String().Values(sources...),
		jen.Line(),
	}
}

// rendererType declares the Renderer and New<Kind>Renderer, which plans
// the programs of the expressions left to CEL.
func (e *rendererEmitter) rendererType() []jen.Code {
	renderer := e.m.renderer()
	var celExprs []jen.Code
	for _, n := range e.celIdx {
		celExprs = append(celExprs, jen.Id("exprs").Index(jen.Lit(n)))
	}
	newRenderer := []jen.Code{
		jen.List(jen.Id("exprs"), jen.Err()).Op(":=").Qual(pkgTyped, "Exprs").Call(jen.Id("bp"), jen.Id(e.m.sourcesVar())),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
	}
	if len(e.celIdx) == 0 {
		newRenderer = append(newRenderer, jen.Return(jen.Op("&").Id(renderer).Values(jen.Id("exprs").Op(":").Id("exprs")), jen.Nil()))
	} else {
		newRenderer = append(newRenderer,
			jen.List(jen.Id("programs"), jen.Err()).Op(":=").Qual(pkgTyped, "Programs").Call(jen.Id("bp"), jen.Index().Op("*").Qual(pkgIR, "Expr").Add(block(celExprs))),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Return(jen.Op("&").Id(renderer).Add(block([]jen.Code{jen.Id("exprs").Op(":").Id("exprs"), jen.Id("programs").Op(":").Id("programs")})), jen.Nil()),
		)
	}
	compiled := len(e.m.exprs) - len(e.celIdx)
	return []jen.Code{
		jen.Comment(fmt.Sprintf("%s is the %s Blueprint compiled to Go: it implements", renderer, e.m.bp.Name)),
		jen.Comment(fmt.Sprintf("reconciler.Renderer for runtime-lib. Of its %d expressions, %d are Go;", len(e.m.exprs), compiled)),
		jen.Comment("the rest run as CEL programs, compiled once by New" + renderer + "."),
		jen.Type().Id(renderer).Struct(
			jen.Id("exprs").Index().Op("*").Qual(pkgIR, "Expr"),
			jen.Id("programs").Op("*").Qual(pkgExpr, "Programs"),
		),
		jen.Line(),
		jen.Var().Id("_").Qual(pkgReconciler, "Renderer").Op("=").Parens(jen.Op("*").Id(renderer)).Parens(jen.Nil()),
		jen.Line(),
		jen.Comment(fmt.Sprintf("New%s returns the Renderer of bp, which must be the Blueprint this", renderer)),
		jen.Comment("code was generated from."),
		jen.Func().Id("New"+renderer).Params(jen.Id("bp").Op("*").Qual(pkgIR, "Blueprint")).Params(jen.Op("*").Id(renderer), jen.Error()).Block(newRenderer...),
		jen.Line(),
	}
}

// begin declares Begin, which reads the custom resource once per pass.
func (e *rendererEmitter) begin() []jen.Code {
	self := e.m.vars[expr.Self]
	evalFields := []jen.Code{jen.Id("r").Op(":").Id("r"), jen.Id("cr").Op(":").Id("cr")}
	if e.readsSelf() {
		evalFields = append(evalFields, jen.Id("self").Op(":").Op("&").Add(self.t.code()).Values())
	}
	body := []jen.Code{
		jen.Id("e").Op(":=").Op("&").Id(e.m.evalType()).Add(block(evalFields)),
	}
	if e.readsSelf() {
		body = append(body,
			jen.If(jen.Err().Op(":=").Qual(pkgTyped, "Read").Call(jen.Lit(expr.Self), jen.Id("cr"), jen.Id("e").Dot("self")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), jen.Err())),
		)
	}
	if len(e.celIdx) > 0 {
		body = append(body,
			jen.List(jen.Id("vars"), jen.Err()).Op(":=").Id("r").Dot("programs").Dot("NewVars").Call(jen.Id("cr"), jen.Nil()),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Id("e").Dot("vars").Op("=").Id("vars"),
		)
	}
	body = append(body, jen.Return(jen.Id("e"), jen.Nil()))
	return []jen.Code{
		jen.Comment(fmt.Sprintf("Begin implements reconciler.Renderer: it reads cr as a %s once for the pass.", e.m.bp.Resource.Kind)),
		jen.Func().Params(jen.Id("r").Op("*").Id(e.m.renderer())).Id("Begin").Params(jen.Id("cr").Op("*").Qual(pkgUnstructured, "Unstructured")).Params(jen.Qual(pkgReconciler, "Evaluation"), jen.Error()).Block(body...),
		jen.Line(),
	}
}

// evaluationType declares the evaluation: the custom resource, the CEL
// variables when CEL runs, and the live children Go reads.
func (e *rendererEmitter) evaluationType() []jen.Code {
	fields := []jen.Code{
		jen.Id("r").Op("*").Id(e.m.renderer()),
		jen.Id("cr").Op("*").Qual(pkgUnstructured, "Unstructured"),
	}
	if e.readsSelf() {
		fields = append(fields, jen.Id("self").Op("*").Add(e.m.vars[expr.Self].t.code()))
	}
	if len(e.celIdx) > 0 {
		fields = append(fields, jen.Id("vars").Op("*").Qual(pkgExpr, "Vars"))
	}
	if live := e.live(); len(live) > 0 {
		fields = append(fields, jen.Line().Comment("The live children Go reads; nil while a child has none."))
		for _, v := range live {
			fields = append(fields, jen.Id(v.field).Op("*").Add(v.t.code()))
		}
	}
	return []jen.Code{
		jen.Comment(fmt.Sprintf("%s is one pass's view of a %s and its live children.", e.m.evalType(), e.m.bp.Resource.Kind)),
		jen.Type().Id(e.m.evalType()).Struct(fields...),
		jen.Line(),
	}
}

// setLive declares SetLive and SetLiveTyped: each live child Go reads is
// read as its Go type (from the typed object the runtime listed, when it
// has one), and those CEL reads are handed to its variables.
func (e *rendererEmitter) setLive() []jen.Code {
	var cases []jen.Code
	for _, v := range e.live() {
		cases = append(cases, jen.Case(jen.Lit(v.id)).Block(
			jen.Id("e").Dot(v.field).Op("=").Nil(),
			jen.If(jen.Id("obj").Op("!=").Nil()).Block(
				jen.Id("e").Dot(v.field).Op("=").Op("&").Add(v.t.code()).Values(),
				jen.If(jen.Err().Op(":=").Qual(pkgTyped, "ReadTyped").Call(jen.Id("id"), jen.Id("obj"), jen.Id("native"), jen.Id("e").Dot(v.field)), jen.Err().Op("!=").Nil()).Block(
					jen.Return(jen.Err())),
			),
		))
	}
	var celIDs []jen.Code
	for _, c := range e.celChildren(false) {
		celIDs = append(celIDs, jen.Lit(c.ID))
	}
	var body []jen.Code
	if len(cases) > 0 {
		body = append(body, jen.Switch(jen.Id("id")).Block(cases...))
	}
	if len(celIDs) > 0 {
		body = append(body, jen.Switch(jen.Id("id")).Block(
			jen.Case(celIDs...).Block(jen.Return(jen.Id("e").Dot("vars").Dot("SetTyped").Call(jen.Id("id"), jen.Id("obj"), jen.Id("native")))),
		))
	}
	body = append(body, jen.Return(jen.Nil()))
	return append([]jen.Code{
		jen.Comment("SetLive implements reconciler.Evaluation."),
		jen.Func().Add(e.recv()).Id("SetLive").Params(jen.Id("id").String(), jen.Id("obj").Op("*").Qual(pkgUnstructured, "Unstructured")).Error().Block(
			jen.Return(jen.Id("e").Dot("SetLiveTyped").Call(jen.Id("id"), jen.Id("obj"), jen.Nil()))),
		jen.Line(),
		jen.Comment("SetLiveTyped implements reconciler.TypedEvaluation: native is obj as the runtime listed it typed, or nil."),
		jen.Func().Add(e.recv()).Id("SetLiveTyped").Params(jen.Id("id").String(), jen.Id("obj").Op("*").Qual(pkgUnstructured, "Unstructured"), jen.Id("native").Qual(pkgRuntime, "Object")).Error().Block(body...),
		jen.Line(),
	}, e.readsTyped()...)
}

// readsTyped declares ReadsTyped: SetLiveTyped reads a child from native
// alone when native is the Go type its field holds and CEL, where CEL
// reads it too, takes it typed. The runtime then spares the child's whole
// unstructured view.
func (e *rendererEmitter) readsTyped() []jen.Code {
	var ids []string
	types := map[string]jen.Code{}
	for _, v := range e.live() {
		ids = append(ids, v.id)
		types[v.id] = v.t.code()
	}
	cel := map[string]bool{}
	for _, c := range e.celChildren(false) {
		if types[c.ID] == nil {
			ids = append(ids, c.ID)
		}
		cel[c.ID] = true
	}
	var cases []jen.Code
	for _, id := range ids {
		takes := jen.Id("e").Dot("vars").Dot("TakesTyped").Call(jen.Id("id"), jen.Id("native"))
		var body []jen.Code
		switch t := types[id]; {
		case t != nil && cel[id]:
			body = []jen.Code{
				jen.If(jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("native").Assert(jen.Op("*").Add(t)), jen.Op("!").Id("ok")).Block(jen.Return(jen.False())),
				jen.Return(takes),
			}
		case t != nil:
			body = []jen.Code{
				jen.List(jen.Id("_"), jen.Id("ok")).Op(":=").Id("native").Assert(jen.Op("*").Add(t)),
				jen.Return(jen.Id("ok")),
			}
		default:
			body = []jen.Code{jen.Return(takes)}
		}
		cases = append(cases, jen.Case(jen.Lit(id)).Block(body...))
	}
	var body []jen.Code
	if len(cases) > 0 {
		body = append(body, jen.Switch(jen.Id("id")).Block(cases...))
	}
	body = append(body, jen.Return(jen.True()))
	return []jen.Code{
		jen.Comment("ReadsTyped implements reconciler.TypedReader: whether SetLiveTyped reads the child id from native alone."),
		jen.Func().Add(e.recv()).Id("ReadsTyped").Params(jen.Id("id").String(), jen.Id("native").Qual(pkgRuntime, "Object")).Bool().Block(body...),
		jen.Line(),
	}
}

// celChildren are the children that expressions left to CEL read, in child
// order: those read as lists (collections, externalRefs by selector) when
// lists is set, the others when not.
func (e *rendererEmitter) celChildren(lists bool) []*ir.Child {
	read := map[string]bool{}
	for _, n := range e.celIdx {
		for _, r := range e.m.exprs[n].Refs {
			read[r] = true
		}
	}
	var out []*ir.Child
	for _, c := range e.m.bp.Children {
		if read[c.ID] && isList(c) == lists {
			out = append(out, c)
		}
	}
	return out
}

// setLiveItems declares SetLiveItems, which presents the children read as
// lists to CEL, their only reader: for a Blueprint with externalRefs by
// selector and no collection (collections declares it otherwise, with the
// rest of reconciler.Collections).
func (e *rendererEmitter) setLiveItems() []jen.Code {
	if len(e.m.collections()) > 0 || !slices.ContainsFunc(e.m.bp.Children, func(c *ir.Child) bool { return c.Selector }) {
		return nil
	}
	cases := e.setItemsCases()
	return []jen.Code{
		jen.Var().Id("_").Qual(pkgReconciler, "Lists").Op("=").Parens(jen.Op("*").Id(e.m.evalType())).Parens(jen.Nil()),
		jen.Line(),
		jen.Comment("SetLiveItems implements reconciler.Lists: the objects an externalRef by selector reads."),
		jen.Func().Add(e.recv()).Id("SetLiveItems").Params(jen.Id("id").String(), jen.Id("objs").Index().Op("*").Qual(pkgUnstructured, "Unstructured")).Error().Block(
			switchOn(jen.Id("id"), cases, jen.Return(jen.Nil()))...),
		jen.Line(),
	}
}

// switchOn is a switch on subject over cases, when there are any, then
// final.
func switchOn(subject jen.Code, cases []jen.Code, final jen.Code) []jen.Code {
	var body []jen.Code
	if len(cases) > 0 {
		body = append(body, jen.Switch(subject).Block(cases...))
	}
	return append(body, final)
}

func (e *rendererEmitter) include() []jen.Code {
	return []jen.Code{
		jen.Comment("Include implements reconciler.Evaluation."),
		jen.Func().Add(e.recv()).Id("Include").Params(jen.Id("c").Op("*").Qual(pkgIR, "Child")).Params(jen.Bool(), jen.Error()).Block(
			switchOn(jen.Id("c").Dot("ID"), e.l.include, jen.Return(jen.True(), jen.Nil()))...),
		jen.Line(),
	}
}

func (e *rendererEmitter) ready() []jen.Code {
	return []jen.Code{
		jen.Comment("Ready implements reconciler.Evaluation."),
		jen.Func().Add(e.recv()).Id("Ready").Params(jen.Id("c").Op("*").Qual(pkgIR, "Child")).Params(jen.Id("ready"), jen.Id("defined").Bool(), jen.Err().Error()).Block(
			switchOn(jen.Id("c").Dot("ID"), e.l.ready, jen.Return(jen.False(), jen.False(), jen.Nil()))...),
		jen.Line(),
	}
}

// object declares Object, which calls the child's own method.
func (e *rendererEmitter) object() []jen.Code {
	var cases []jen.Code
	for _, c := range e.m.bp.Children {
		cases = append(cases, jen.Case(jen.Lit(c.ID)).Block(jen.Return(jen.Id("e").Dot(e.l.objectMethods[c.ID]).Call())))
	}
	c := jen.Id("c")
	return []jen.Code{
		jen.Comment("Object implements reconciler.Evaluation."),
		jen.Func().Add(e.recv()).Id("Object").Params(jen.Id("c").Op("*").Qual(pkgIR, "Child")).Params(jen.Map(jen.String()).Any(), jen.Error()).Block(
			switchOn(c.Clone().Dot("ID"), cases,
				jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: the Blueprint this operator was generated from has no child %q"), c.Clone().Dot("Pos"), c.Clone().Dot("ID"))))...),
		jen.Line(),
	}
}

func (e *rendererEmitter) status() []jen.Code {
	return []jen.Code{
		jen.Comment("Status implements reconciler.Evaluation."),
		jen.Func().Add(e.recv()).Id("Status").Params(jen.Id("f").Qual(pkgIR, "Field")).Params(jen.Any(), jen.Error()).Block(
			switchOn(jen.Id("f").Dot("Key"), e.l.status,
				jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("the Blueprint this operator was generated from emits no status field %q"), jen.Id("f").Dot("Key"))))...),
		jen.Line(),
	}
}

// conditions declares Condition and ReadyWhen, which evaluate
// emit.conditions and emit.readyWhen; none when the Blueprint has neither.
func (e *rendererEmitter) conditions() []jen.Code {
	if len(e.m.bp.Conditions) == 0 && len(e.m.bp.ReadyWhen) == 0 {
		return nil
	}
	c, x := jen.Id("c"), jen.Id("x")
	return []jen.Code{
		jen.Var().Id("_").Qual(pkgReconciler, "Conditions").Op("=").Parens(jen.Op("*").Id(e.m.evalType())).Parens(jen.Nil()),
		jen.Line(),
		jen.Comment("Condition implements reconciler.Conditions: it evaluates one of emit.conditions."),
		jen.Func().Add(e.recv()).Id("Condition").Params(c.Clone().Op("*").Qual(pkgIR, "Condition")).Params(jen.Id("status").Any(), jen.List(jen.Id("reason"), jen.Id("message")).String(), jen.Err().Error()).Block(
			switchOn(c.Clone().Dot("Type"), e.l.conditions,
				jen.Return(jen.Nil(), jen.Lit(""), jen.Lit(""), jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: the Blueprint this operator was generated from has no condition %s"), c.Clone().Dot("Pos"), c.Clone().Dot("Type"))))...),
		jen.Line(),
		jen.Comment("ReadyWhen implements reconciler.Conditions: it evaluates one of emit.readyWhen."),
		jen.Func().Add(e.recv()).Id("ReadyWhen").Params(x.Clone().Op("*").Qual(pkgIR, "Expr")).Params(jen.Bool(), jen.Error()).Block(
			switchOn(x.Clone(), e.l.readyWhen,
				jen.Return(jen.False(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: ${%s} is not one of the emit.readyWhen this operator was generated from"), x.Clone().Dot("Pos"), x.Clone().Dot("Source"))))...),
		jen.Line(),
	}
}

// failedWhen declares FailedWhen, which evaluates the failedWhen of
// reconcile.workflow's steps; none when no step has one.
func (e *rendererEmitter) failedWhen() []jen.Code {
	if len(e.l.failedWhen) == 0 {
		return nil
	}
	x := jen.Id("x")
	return []jen.Code{
		jen.Var().Id("_").Qual(pkgReconciler, "StepConditions").Op("=").Parens(jen.Op("*").Id(e.m.evalType())).Parens(jen.Nil()),
		jen.Line(),
		jen.Comment("FailedWhen implements reconciler.StepConditions: it evaluates one of a workflow step's failedWhen."),
		jen.Func().Add(e.recv()).Id("FailedWhen").Params(x.Clone().Op("*").Qual(pkgIR, "Expr")).Params(jen.Bool(), jen.Error()).Block(
			switchOn(x.Clone(), e.l.failedWhen,
				jen.Return(jen.False(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: ${%s} is not one of the failedWhen this operator was generated from"), x.Clone().Dot("Pos"), x.Clone().Dot("Source"))))...),
		jen.Line(),
	}
}

func (e *rendererEmitter) args() []jen.Code {
	return []jen.Code{
		jen.Comment("Args implements reconciler.Evaluation: it renders reconcile.args."),
		jen.Func().Add(e.recv()).Id("Args").Params(jen.Id("args").Op("*").Qual(pkgIR, "Value")).Params(jen.Map(jen.String()).Any(), jen.Error()).Block(e.l.args...),
		jen.Line(),
	}
}

// collections declares the methods of reconciler.Collections, for a
// Blueprint with forEach: a collection's own expressions are its Include,
// Ready and Object cases, run with one item's iterators bound in the CEL
// variables (and, for readyWhen, its live object as each), where the
// programs of those left to CEL read them. Go reads no iterator and no
// collection: expressions that do run as CEL.
func (e *rendererEmitter) collections() []jen.Code {
	colls := e.m.collections()
	if len(colls) == 0 {
		return nil
	}
	c, item := jen.Id("c"), jen.Id("item")
	child := jen.Id("c").Op("*").Qual(pkgIR, "Child")
	itemParam := jen.Id("item").Map(jen.String()).Any()
	bind := jen.Defer().Qual(pkgTyped, "Bind").Call(jen.Id("e").Dot("vars"), item.Clone()).Call()

	var ready []jen.Code
	for _, coll := range colls {
		if coll.ReadyWhen == nil {
			continue
		}
		ready = append(ready, jen.Case(jen.Lit(coll.ID)).Block(
			bind.Clone(),
			jen.If(jen.Err().Op(":=").Id("e").Dot("vars").Dot("SetItem").Call(jen.Qual(pkgIR, "Each"), c.Clone().Dot("ID"), jen.Id("live")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.False(), jen.True(), jen.Err())),
			jen.Defer().Id("e").Dot("vars").Dot("Unset").Call(jen.Qual(pkgIR, "Each")),
			jen.Return(jen.Id("e").Dot("Ready").Call(c.Clone())),
		))
	}
	setItems := e.setItemsCases()
	return []jen.Code{
		jen.Var().Id("_").Qual(pkgReconciler, "Collections").Op("=").Parens(jen.Op("*").Id(e.m.evalType())).Parens(jen.Nil()),
		jen.Line(),
		jen.Comment("Items implements reconciler.Collections: the bindings of a collection's items."),
		jen.Func().Add(e.recv()).Id("Items").Params(child.Clone()).Params(jen.Index().Map(jen.String()).Any(), jen.Error()).Block(
			switchOn(c.Clone().Dot("ID"), e.l.items,
				jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("%s: the Blueprint this operator was generated from has no collection %q"), c.Clone().Dot("Pos"), c.Clone().Dot("ID"))))...),
		jen.Line(),
		jen.Comment("IncludeItem implements reconciler.Collections: Include with the item bound."),
		jen.Func().Add(e.recv()).Id("IncludeItem").Params(child.Clone(), itemParam.Clone()).Params(jen.Bool(), jen.Error()).Block(
			bind.Clone(),
			jen.Return(jen.Id("e").Dot("Include").Call(c.Clone())),
		),
		jen.Line(),
		jen.Comment("ObjectItem implements reconciler.Collections: Object with the item bound."),
		jen.Func().Add(e.recv()).Id("ObjectItem").Params(child.Clone(), itemParam.Clone()).Params(jen.Map(jen.String()).Any(), jen.Error()).Block(
			bind.Clone(),
			jen.Return(jen.Id("e").Dot("Object").Call(c.Clone())),
		),
		jen.Line(),
		jen.Comment("ReadyItem implements reconciler.Collections: Ready with the item bound and"),
		jen.Comment("its live object as each."),
		jen.Func().Add(e.recv()).Id("ReadyItem").Params(child.Clone(), itemParam.Clone(), jen.Id("live").Op("*").Qual(pkgUnstructured, "Unstructured")).Params(jen.Id("ready"), jen.Id("defined").Bool(), jen.Err().Error()).Block(
			switchOn(c.Clone().Dot("ID"), ready, jen.Return(jen.False(), jen.False(), jen.Nil()))...),
		jen.Line(),
		jen.Comment("SetLiveItems implements reconciler.Collections: the collections and"),
		jen.Comment("selections CEL reads are handed to its variables as lists."),
		jen.Func().Add(e.recv()).Id("SetLiveItems").Params(jen.Id("id").String(), jen.Id("objs").Index().Op("*").Qual(pkgUnstructured, "Unstructured")).Error().Block(
			switchOn(jen.Id("id"), setItems, jen.Return(jen.Nil()))...),
		jen.Line(),
	}
}

// setItemsCases is SetLiveItems' case for the children CEL reads as lists.
func (e *rendererEmitter) setItemsCases() []jen.Code {
	var lits []jen.Code
	for _, c := range e.celChildren(true) {
		lits = append(lits, jen.Lit(c.ID))
	}
	if len(lits) == 0 {
		return nil
	}
	return []jen.Code{jen.Case(lits...).Block(
		jen.Return(jen.Id("e").Dot("vars").Dot("SetItems").Call(jen.Id("id"), jen.Id("objs"))))}
}

// isList reports whether expressions read child c as a list of its live
// objects: a collection, or an externalRef by label selector.
func isList(c *ir.Child) bool { return len(c.ForEach) > 0 || c.Selector }

// helpers declares fail, and eval when CEL runs.
func (e *rendererEmitter) helpers() []jen.Code {
	code := []jen.Code{
		jen.Comment("fail reports err as the interpreter does: with the position and source of expression n."),
		jen.Func().Add(e.recv()).Id("fail").Params(jen.Id("n").Int(), jen.Err().Error()).Error().Block(
			jen.Return(jen.Op("&").Qual(pkgExpr, "EvalError").Values(jen.Dict{jen.Id("Expr"): jen.Id("e").Dot("r").Dot("exprs").Index(jen.Id("n")), jen.Id("Err"): jen.Err()})),
		),
		jen.Line(),
	}
	if len(e.celIdx) > 0 {
		code = append(code,
			jen.Comment("eval runs expression n, one the Go compiler left to CEL."),
			jen.Func().Add(e.recv()).Id("eval").Params(jen.Id("n").Int()).Params(jen.Any(), jen.Error()).Block(
				jen.Return(jen.Id("e").Dot("r").Dot("programs").Dot("Eval").Call(jen.Id("e").Dot("r").Dot("exprs").Index(jen.Id("n")), jen.Id("e").Dot("vars"))),
			),
			jen.Line(),
		)
	}
	return code
}
