package codegen

import (
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// renderModel is what the Renderer's emitters read: the Blueprint, its
// expressions numbered as generated code refers to them, and its variables
// as Go reads them. It does not change once built.
type renderModel struct {
	bp    *ir.Blueprint
	tm    *typeModel
	exprs []*ir.Expr
	index map[*ir.Expr]int
	vars  map[string]*varInfo
}

// varInfo is a variable of the Blueprint's expressions as the generated
// evaluation holds it.
type varInfo struct {
	id    string
	field string
	// t is the struct type the variable is read as; nil when generated
	// code cannot read it (a kind with no Go type), so that only CEL does.
	t    *gtype
	self bool
	// list marks a collection: expressions read it as a list of its live
	// objects, which only CEL does.
	list bool
}

func newRenderModel(bp *ir.Blueprint, api *apiModel, tm *typeModel) *renderModel {
	m := &renderModel{
		bp: bp, tm: tm,
		exprs: bp.RenderExprs(),
		index: map[*ir.Expr]int{},
		vars:  map[string]*varInfo{},
	}
	for i, x := range m.exprs {
		m.index[x] = i
	}
	fields := map[string]bool{"r": true, "cr": true, "self": true, "vars": true}
	selfVar := &varInfo{id: expr.Self, field: "self", self: true}
	if bp.Resource.Schema != nil {
		selfVar.t = api.root
	}
	m.vars[expr.Self] = selfVar
	for _, c := range bp.Children {
		v := &varInfo{id: c.ID, field: localName(c.ID, fields), list: isList(c)}
		if t := m.childType(c); t != nil && !c.Selector {
			// A selector's objects are a list, which only CEL reads.
			v.t = t
		}
		m.vars[c.ID] = v
	}
	return m
}

// childType is the k8s.io/api type of a built-in child, or nil.
func (m *renderModel) childType(c *ir.Child) *gtype {
	if !c.BuiltIn {
		return nil
	}
	rt, ok := expr.NativeType(c.GroupVersionKind)
	if !ok {
		return nil
	}
	return m.tm.of(rt)
}

// collections are the Blueprint's children with forEach, in child order.
func (m *renderModel) collections() []*ir.Child {
	var out []*ir.Child
	for _, c := range m.bp.Children {
		if len(c.ForEach) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// typed reports whether child c is built as a typed object, with a Shape.
func (m *renderModel) typed(c *ir.Child) bool {
	return !c.External && m.vars[c.ID].t != nil
}

func (m *renderModel) renderer() string { return m.bp.Resource.Kind + "Renderer" }
func (m *renderModel) evalType() string {
	return strings.ToLower(m.bp.Resource.Kind[:1]) + m.bp.Resource.Kind[1:] + "Evaluation"
}
func (m *renderModel) sourcesVar() string {
	return strings.ToLower(m.bp.Resource.Kind[:1]) + m.bp.Resource.Kind[1:] + "Exprs"
}

// lowered is the Renderer's function bodies, each built once, in a body of
// its own, by lowerRenderer; the Renderer's declarations (emit_renderer.go)
// lay them out, and depend on what they use.
type lowered struct {
	uses
	// objectMethods name each child's Object method, by child id; objects
	// are those methods and shapes the Shapes of typed children, in child
	// order.
	objectMethods map[string]string
	objects       []jen.Code
	shapes        []jen.Code
	// include, ready, status and items are the cases of their methods'
	// switch; conditions and readyWhen those of Condition and ReadyWhen,
	// failedWhen those of FailedWhen.
	include, ready, status, items     []jen.Code
	conditions, readyWhen, failedWhen []jen.Code
	// args is the body of Args.
	args []jen.Code
}

// lowerRenderer builds every body of the Renderer of m.
func lowerRenderer(m *renderModel) *lowered {
	l := &lowered{uses: newUses(), objectMethods: map[string]string{}}
	l.lowerObjects(m)
	l.lowerConditions(m)
	l.lowerStatus(m)
	l.lowerEmitConditions(m)
	l.lowerArgs(m)
	l.lowerItems(m)
	return l
}

// lowerObjects builds each child's Object method, and names it.
func (l *lowered) lowerObjects(m *renderModel) {
	taken := map[string]bool{"SetLive": true, "SetLiveTyped": true, "ReadsTyped": true, "SetLiveItems": true, "Include": true, "Ready": true, "Object": true, "Status": true, "Condition": true, "ReadyWhen": true, "FailedWhen": true, "fail": true, "eval": true}
	globals := map[string]bool{}
	for _, c := range m.bp.Children {
		method := localName(c.ID+"Object", taken)
		l.objectMethods[c.ID] = method
		var shape string
		if m.typed(c) {
			shape = localName(c.ID+"Shape", globals)
		}
		cc := m.childObject(c, method, shape)
		l.merge(cc.uses)
		l.objects = append(l.objects, cc.method, jen.Line())
		l.shapes = append(l.shapes, cc.shape...)
	}
}

// lowerConditions builds the cases of Include and Ready.
func (l *lowered) lowerConditions(m *renderModel) {
	for _, c := range m.bp.Children {
		if c.IncludeWhen != nil {
			b := newBody(m, jen.False())
			v := b.boolExpr(c.IncludeWhen)
			l.include = append(l.include, jen.Case(jen.Lit(c.ID)).Block(b.code(jen.Return(v, jen.Nil()))...))
			l.merge(b.uses)
		}
		if c.ReadyWhen != nil {
			b := newBody(m, jen.False(), jen.True())
			v := b.boolExpr(c.ReadyWhen)
			l.ready = append(l.ready, jen.Case(jen.Lit(c.ID)).Block(b.code(jen.Return(v, jen.True(), jen.Nil()))...))
			l.merge(b.uses)
		}
	}
}

// lowerStatus builds the cases of Status, one per field.
func (l *lowered) lowerStatus(m *renderModel) {
	if m.bp.Status == nil {
		return
	}
	for _, f := range m.bp.Status.Fields {
		b := newBody(m, jen.Nil())
		v := b.untyped(f.Value, f.Key)
		l.status = append(l.status, jen.Case(jen.Lit(f.Key)).Block(b.code(jen.Return(v, jen.Nil()))...))
		l.merge(b.uses)
	}
}

// lowerEmitConditions builds the cases of Condition, one per custom
// condition, of ReadyWhen, one per expression, and of FailedWhen, one per
// expression of the workflow's steps.
func (l *lowered) lowerEmitConditions(m *renderModel) {
	for _, c := range m.bp.Conditions {
		b := newBody(m, jen.Nil(), jen.Lit(""), jen.Lit(""))
		status := b.untyped(&ir.Value{Kind: ir.Expression, Expr: c.Status}, "status")
		reason, message := b.text(c.Reason, "reason"), b.text(c.Message, "message")
		l.conditions = append(l.conditions, jen.Case(jen.Lit(c.Type)).Block(b.code(jen.Return(status, reason, message, jen.Nil()))...))
		l.merge(b.uses)
	}
	for _, x := range m.bp.ReadyWhen {
		b := newBody(m, jen.False())
		v := b.boolExpr(x)
		l.readyWhen = append(l.readyWhen, jen.Case(jen.Id("e").Dot("r").Dot("exprs").Index(jen.Lit(m.index[x]))).Block(b.code(jen.Return(v, jen.Nil()))...))
		l.merge(b.uses)
	}
	if m.bp.Reconcile == nil || m.bp.Reconcile.Workflow == nil {
		return
	}
	for _, st := range m.bp.Reconcile.Workflow.Steps {
		for _, x := range st.FailedWhen {
			b := newBody(m, jen.False())
			v := b.boolExpr(x)
			l.failedWhen = append(l.failedWhen, jen.Case(jen.Id("e").Dot("r").Dot("exprs").Index(jen.Lit(m.index[x]))).Block(b.code(jen.Return(v, jen.Nil()))...))
			l.merge(b.uses)
		}
	}
}

// lowerArgs builds the body of Args, which renders reconcile.args.
func (l *lowered) lowerArgs(m *renderModel) {
	b := newBody(m, jen.Nil())
	var args jen.Code = jen.Map(jen.String()).Any().Values()
	if rec := m.bp.Reconcile; rec != nil && rec.Args != nil && rec.Args.Kind == ir.Map {
		args = b.untyped(rec.Args, "args")
	}
	l.args = b.code(jen.Return(args, jen.Nil()))
	l.merge(b.uses)
}

// lowerItems builds the cases of Items, one per collection: its iterators'
// items evaluated by CEL, as JSON values, combined by typed.Items as the
// interpreter combines them. They are CEL programs however simple, so a
// Blueprint with a collection always has the CEL variables that the
// collection's items are bound in.
func (l *lowered) lowerItems(m *renderModel) {
	for _, c := range m.collections() {
		b := newBody(m, jen.Nil())
		// The method's parameter and the package it calls.
		b.names["c"], b.names["typed"] = true, true
		args := []jen.Code{jen.Id("c")}
		for _, it := range c.ForEach {
			args = append(args, b.eval(m.index[it.Items], it.Name))
		}
		l.items = append(l.items, jen.Case(jen.Lit(c.ID)).Block(b.code(jen.Return(jen.Qual(pkgTyped, "Items").Call(args...)))...))
		l.merge(b.uses)
	}
}
