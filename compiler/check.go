package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// checkTemplates checks every template, emit.status and externalRef against
// the shape of the object it becomes part of.
func (c *compilation) checkTemplates() {
	c.childShapes = map[string]shape{}
	c.exprShapes = map[*ir.Expr]exprUse{}
	for _, child := range c.bp.Children {
		var s shape
		switch {
		case child.BuiltIn:
			t, ok := expr.NativeType(child.GroupVersionKind)
			if !ok {
				continue
			}
			s = newGoShape(t)
		case child.Kind != "" && child.GroupVersionKind == c.bp.Resource.GroupVersionKind:
			s = c.selfShape
		default:
			continue
		}
		c.childShapes[child.ID] = s
		if child.External {
			c.checkExternalRef(child)
			continue
		}
		c.checkValue(child.Template, s, "", child.Kind)
	}
	if c.bp.Status != nil && c.selfShape != nil {
		status, ok := c.selfShape.field("status")
		if !ok && c.selfShape.kind() == objectShape {
			c.errs.add(c.bp.Status.Pos, InvalidValue, "add status to the CRD's schema (x-kubernetes-preserve-unknown-fields: true accepts any field)",
				"emit.status is set but the CRD's schema has no status: the API server would drop every field")
			return
		}
		if ok {
			c.checkValue(c.bp.Status, status, "status", c.bp.Resource.Kind)
		}
	}
}

func (c *compilation) checkExternalRef(child *ir.Child) {
	for _, f := range child.Template.Fields {
		switch f.Key {
		case "apiVersion", "kind":
		case "metadata":
			for _, mf := range f.Value.Fields {
				if mf.Key != "name" && mf.Key != "namespace" {
					c.errs.add(mf.KeyPos, UnknownField, "an externalRef names an object by metadata.name and metadata.namespace", "unknown field externalRef.metadata.%s", mf.Key)
				}
			}
		default:
			c.errs.add(f.KeyPos, UnknownField, "an externalRef has apiVersion, kind and metadata only", "unknown field externalRef.%s", f.Key)
		}
	}
}

// checkValue reports fields s does not have and literals of the wrong type.
func (c *compilation) checkValue(v *ir.Value, s shape, path, kind string) {
	if v == nil || s == nil || s.kind() == anyShape {
		return
	}
	switch v.Kind {
	case ir.Null:
	case ir.Literal:
		if !literalFits(v.Literal, s.kind()) {
			c.errs.add(v.Pos, TemplateWrongType, "", "%s of %s must be %s, not %s", displayField(path), kind, shapeNames[s.kind()], describeLiteral(v.Literal))
		}
	case ir.Expression:
		c.exprShapes[v.Expr] = exprUse{shape: s, path: path}
	case ir.Interpolation:
		if k := s.kind(); k != stringShape && k != intOrStringShape {
			c.errs.add(v.Pos, TemplateWrongType, "use a single ${...} to keep the expression's type", "%s of %s must be %s, but text with ${...} makes a string", displayField(path), kind, shapeNames[k])
		}
	case ir.Map:
		switch s.kind() {
		case objectShape:
			for _, f := range v.Fields {
				fs, ok := s.field(f.Key)
				if !ok {
					hint := ""
					if near, found := closest(f.Key, s.fieldNames()); found {
						hint = "did you mean " + join(path, near) + "?"
					}
					c.errs.add(f.KeyPos, TemplateUnknownField, hint, "unknown field %s in %s", join(path, f.Key), kind)
					continue
				}
				c.checkValue(f.Value, fs, join(path, f.Key), kind)
			}
		case mapShape:
			for _, f := range v.Fields {
				c.checkValue(f.Value, s.elem(), join(path, f.Key), kind)
			}
		default:
			c.errs.add(v.Pos, TemplateWrongType, "", "%s of %s must be %s, not a map", displayField(path), kind, shapeNames[s.kind()])
		}
	case ir.List:
		if s.kind() != listShape {
			c.errs.add(v.Pos, TemplateWrongType, "", "%s of %s must be %s, not a list", displayField(path), kind, shapeNames[s.kind()])
			return
		}
		for i, it := range v.Items {
			c.checkValue(it, s.elem(), fmt.Sprintf("%s[%d]", path, i), kind)
		}
	}
}

func displayField(path string) string {
	if path == "" {
		return "the object"
	}
	return path
}

func literalFits(lit any, k shapeKind) bool {
	switch lit.(type) {
	case string:
		return k == stringShape || k == intOrStringShape
	case int64:
		return k == integerShape || k == numberShape || k == intOrStringShape
	case float64:
		return k == numberShape || k == intOrStringShape
	case bool:
		return k == booleanShape
	}
	return true
}

func describeLiteral(lit any) string {
	switch t := lit.(type) {
	case string:
		return fmt.Sprintf("the string %q", t)
	case int64:
		return fmt.Sprintf("the integer %d", t)
	case float64:
		return fmt.Sprintf("the number %g", t)
	case bool:
		return fmt.Sprintf("the boolean %t", t)
	}
	return fmt.Sprint(lit)
}

// exprSite is an expression with what it is used for.
type exprSite struct {
	x      *ir.Expr
	child  *ir.Child // nil outside children
	where  string
	isBool bool
	api    bool // in reconcile.api: sees args, finalizing and response
}

func (c *compilation) sites() []exprSite {
	var out []exprSite
	for _, child := range c.bp.Children {
		if child.IncludeWhen != nil {
			out = append(out, exprSite{x: child.IncludeWhen, child: child, where: "includeWhen", isBool: true})
		}
		if child.ReadyWhen != nil {
			out = append(out, exprSite{x: child.ReadyWhen, child: child, where: "readyWhen", isBool: true})
		}
		for _, x := range child.Template.Exprs() {
			out = append(out, exprSite{x: x, child: child, where: "template"})
		}
	}
	for _, x := range c.bp.Status.Exprs() {
		out = append(out, exprSite{x: x, where: "emit.status"})
	}
	if c.bp.Reconcile != nil {
		for _, x := range c.bp.Reconcile.Args.Exprs() {
			out = append(out, exprSite{x: x, where: "reconcile.args"})
		}
	}
	for _, x := range expr.APIExprs(c.bp) {
		out = append(out, exprSite{x: x, where: "reconcile.api", api: true})
	}
	return out
}

var (
	undefinedFieldRE = regexp.MustCompile(`^undefined field '([^']+)'`)
	undeclaredRE     = regexp.MustCompile(`^undeclared reference to '([^']+)'`)
)

// checkExpressions type-checks every expression and records what it reads.
func (c *compilation) checkExpressions() {
	sites := c.sites()
	if len(sites) == 0 {
		return
	}
	var usable []*ir.Child
	for _, ch := range c.bp.Children {
		if ch.ID != "" {
			usable = append(usable, ch)
		}
	}
	envBP := &ir.Blueprint{Resource: c.bp.Resource, Children: usable}
	env, err := expr.NewEnv(envBP)
	if err != nil {
		c.errs.add(ir.Pos{File: c.file}, ExprType, "", "cannot build the expression environment: %v", err)
		return
	}
	vars := []string{expr.Self}
	for _, ch := range usable {
		vars = append(vars, ch.ID)
	}
	var apiEnv *expr.Env
	for _, s := range sites {
		if !s.api {
			c.checkExpr(env, vars, s)
			continue
		}
		if apiEnv == nil {
			if apiEnv, err = env.ForAPI(); err != nil {
				c.errs.add(s.x.Pos, ExprType, "", "cannot build the environment of reconcile.api: %v", err)
				return
			}
		}
		c.checkExpr(apiEnv, append(vars, expr.Args, expr.Finalizing, expr.Response), s)
	}
}

func (c *compilation) checkExpr(env *expr.Env, vars []string, s exprSite) {
	x := s.x
	ast, iss := env.Compile(x.Source)
	if iss.Err() != nil {
		for _, e := range iss.Errors() {
			pos := x.Pos
			if l := e.Location.Line(); l > 1 {
				pos.Line += l - 1
				pos.Col = e.Location.Column() + 1
			} else {
				pos.Col += e.Location.Column()
			}
			code, hint, msg := ExprType, "", e.Message
			if strings.HasPrefix(msg, "Syntax error") {
				code = ExprSyntax
			}
			if m := undeclaredRE.FindStringSubmatch(msg); m != nil {
				code = UnknownReference
				msg = fmt.Sprintf("unknown reference %q", m[1])
				hint = didYouMean(m[1], vars)
				if hint == "" {
					hint = "known: " + strings.Join(vars, ", ")
				}
			}
			if m := undefinedFieldRE.FindStringSubmatch(msg); m != nil {
				msg, hint = c.undefinedField(env, x.Source, e.Location.Column(), e.Location.Line(), m[1])
				pos.Col++ // CEL points at the dot; point at the field
			}
			c.errs.add(pos, code, hint, "%s in ${%s}", msg, x.Source)
		}
		return
	}
	x.Type = ast.OutputType().String()
	refs := map[string]bool{}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Value == nil && slices.Contains(vars, ref.Name) {
			refs[ref.Name] = true
		}
	}
	x.Refs = make([]string, 0, len(refs))
	for r := range refs {
		x.Refs = append(x.Refs, r)
	}
	sort.Strings(x.Refs)

	out := ast.OutputType()
	if s.isBool && !typeFits(out, booleanShape) {
		c.errs.add(x.Pos, ExprResultType, "compare to get a bool, e.g. ${self.spec.replicas > 0}", "%s must be a bool, but ${%s} is %s", s.where, x.Source, out)
	}
	if use, ok := c.exprShapes[x]; ok && !typeFits(out, use.shape.kind()) {
		c.errs.add(x.Pos, ExprResultType, "", "%s must be %s, but ${%s} is %s", displayField(use.path), shapeNames[use.shape.kind()], x.Source, out)
	}
	if s.child != nil && s.where != "readyWhen" && refs[s.child.ID] {
		c.errs.add(x.Pos, Cycle, "a child cannot depend on its own live object; use readyWhen to read it", "child %q references itself in ${%s}", s.child.ID, x.Source)
	}
}

// typeFits reports whether a CEL type can land in a field of kind k.
func typeFits(t *cel.Type, k shapeKind) bool {
	if k == anyShape {
		return true
	}
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.NullTypeKind, types.ErrorKind, types.TypeParamKind:
		return true
	case types.OpaqueKind:
		if t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
			return typeFits(t.Parameters()[0], k)
		}
		return true
	case types.BoolKind:
		return k == booleanShape
	case types.IntKind, types.UintKind:
		return k == integerShape || k == numberShape || k == intOrStringShape
	case types.DoubleKind:
		return k == numberShape || k == intOrStringShape
	case types.StringKind, types.TimestampKind, types.DurationKind, types.BytesKind:
		return k == stringShape || k == intOrStringShape
	case types.ListKind:
		return k == listShape
	case types.MapKind:
		return k == mapShape || k == objectShape
	case types.StructKind:
		return k == mapShape || k == objectShape || k == stringShape || k == intOrStringShape
	}
	return true
}

// undefinedField turns CEL's "undefined field" into a message that names
// the whole path and the field that was probably meant.
func (c *compilation) undefinedField(env *expr.Env, src string, col, line int, field string) (string, string) {
	msg := fmt.Sprintf("undefined field '%s'", field)
	if line > 1 || col > len(src) {
		return msg, ""
	}
	// Walk back from the '.' before the field over a plain select chain.
	start := col
	for start > 0 && (isIdentByte(src[start-1]) || src[start-1] == '.') {
		start--
	}
	chain := strings.Split(src[start:col], ".")
	if len(chain) == 0 || chain[0] == "" {
		return msg, ""
	}
	s := c.varShape(chain[0])
	if s == nil {
		return msg, ""
	}
	for _, seg := range chain[1:] {
		next, ok := s.field(seg)
		if !ok {
			return msg, ""
		}
		s = next
	}
	full := strings.Join(append(chain, field), ".")
	msg = "unknown field " + full
	if near, ok := closest(field, s.fieldNames()); ok {
		return msg, "did you mean " + strings.Join(append(chain, near), ".") + "?"
	}
	if names := s.fieldNames(); len(names) > 0 && len(names) <= 12 {
		return msg, "known fields: " + strings.Join(names, ", ")
	}
	return msg, ""
}

func (c *compilation) varShape(name string) shape {
	if name == expr.Self {
		return c.selfShape
	}
	return c.childShapes[name]
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// order fills DependsOn, reports reference cycles, and sorts Children so
// every child follows the children it references, keeping source order
// where references allow.
func (c *compilation) order() {
	ids := map[string]*ir.Child{}
	for _, ch := range c.bp.Children {
		ids[ch.ID] = ch
	}
	for _, ch := range c.bp.Children {
		deps := map[string]bool{}
		var xs []*ir.Expr
		if ch.IncludeWhen != nil {
			xs = append(xs, ch.IncludeWhen)
		}
		if ch.ReadyWhen != nil {
			xs = append(xs, ch.ReadyWhen)
		}
		xs = append(xs, ch.Template.Exprs()...)
		for _, x := range xs {
			for _, r := range x.Refs {
				if r != expr.Self && r != ch.ID && ids[r] != nil {
					deps[r] = true
				}
			}
		}
		ch.DependsOn = make([]string, 0, len(deps))
		for d := range deps {
			ch.DependsOn = append(ch.DependsOn, d)
		}
		sort.Strings(ch.DependsOn)
	}

	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var sorted []*ir.Child
	var stack []string
	reported := map[string]bool{}
	var visit func(ch *ir.Child)
	visit = func(ch *ir.Child) {
		switch state[ch.ID] {
		case done:
			return
		case visiting:
			i := slices.Index(stack, ch.ID)
			cycle := append(slices.Clone(stack[i:]), ch.ID)
			key := canonicalCycle(cycle[:len(cycle)-1])
			if !reported[key] {
				reported[key] = true
				first := ids[cycle[0]]
				c.errs.add(first.Pos, Cycle, "break the cycle: one of these children must not read the other", "children reference each other in a cycle: %s", strings.Join(cycle, " → "))
			}
			return
		}
		state[ch.ID] = visiting
		stack = append(stack, ch.ID)
		for _, d := range ch.DependsOn {
			visit(ids[d])
		}
		stack = stack[:len(stack)-1]
		state[ch.ID] = done
		sorted = append(sorted, ch)
	}
	for _, ch := range c.bp.Children {
		visit(ch)
	}
	c.bp.Children = sorted
}

// canonicalCycle names a cycle independently of where it was entered.
func canonicalCycle(ids []string) string {
	min := 0
	for i := range ids {
		if ids[i] < ids[min] {
			min = i
		}
	}
	return strings.Join(append(slices.Clone(ids[min:]), ids[:min]...), ",")
}
