package compiler

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// exprSite is an expression with what it is used for.
type exprSite struct {
	x      *ir.Expr
	child  *ir.Child // nil outside children
	where  string
	isBool bool
	api    bool // in reconcile.api: sees args, finalizing and response
	// selfOnly marks an expression that sees self alone: migrate's.
	selfOnly bool
	// own marks a collection's own expressions, which see its iterators
	// and each.
	own bool
	// items marks an iterator's items: a list (or a map).
	items bool
	// text marks a condition's reason or message: a string.
	text bool
	// conditionStatus marks a condition's status: a bool, or a string
	// that says True, False or Unknown.
	conditionStatus bool
}

func (c *checker) sites() []exprSite {
	var out []exprSite
	for _, child := range c.bp.Children {
		own := len(child.ForEach) > 0
		for _, it := range child.ForEach {
			out = append(out, exprSite{x: it.Items, child: child, where: "forEach." + it.Name, items: true})
		}
		if child.IncludeWhen != nil {
			out = append(out, exprSite{x: child.IncludeWhen, child: child, where: "includeWhen", isBool: true, own: own})
		}
		if child.ReadyWhen != nil {
			out = append(out, exprSite{x: child.ReadyWhen, child: child, where: "readyWhen", isBool: true, own: own})
		}
		for _, x := range child.Template.Exprs() {
			out = append(out, exprSite{x: x, child: child, where: "template", own: own})
		}
	}
	for _, x := range c.bp.Status.Exprs() {
		out = append(out, exprSite{x: x, where: "emit.status"})
	}
	for _, cond := range c.bp.Conditions {
		where := "emit.conditions[" + cond.Type + "]"
		out = append(out, exprSite{x: cond.Status, where: where + ".status", conditionStatus: true})
		for _, f := range []struct {
			name string
			v    *ir.Value
		}{{"reason", cond.Reason}, {"message", cond.Message}} {
			for _, x := range f.v.Exprs() {
				// Interpolated text formats any value; a whole ${...} must
				// be a string.
				out = append(out, exprSite{x: x, where: where + "." + f.name, text: f.v.Kind == ir.Expression})
			}
		}
	}
	for _, x := range c.bp.ReadyWhen {
		out = append(out, exprSite{x: x, where: "emit.readyWhen", isBool: true})
	}
	if c.bp.Reconcile != nil {
		for _, x := range c.bp.Reconcile.Args.Exprs() {
			out = append(out, exprSite{x: x, where: "reconcile.args"})
		}
		if wf := c.bp.Reconcile.Workflow; wf != nil {
			for i, st := range wf.Steps {
				for _, x := range st.FailedWhen {
					out = append(out, exprSite{x: x, where: fmt.Sprintf("reconcile.workflow.steps[%d].failedWhen", i), isBool: true})
				}
			}
		}
	}
	for _, x := range c.bp.APIExprs() {
		out = append(out, exprSite{x: x, where: "reconcile.api", api: true})
	}
	for _, x := range c.bp.MigrateExprs() {
		out = append(out, exprSite{x: x, where: "migrate.selection.includeWhen", isBool: true, selfOnly: true})
	}
	return out
}

var (
	undefinedFieldRE = regexp.MustCompile(`^undefined field '([^']+)'`)
	undeclaredRE     = regexp.MustCompile(`^undeclared reference to '([^']+)'`)
)

// checkExpressions type-checks every expression and records what it reads.
func (c *checker) checkExpressions() {
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
	envBP := &ir.Blueprint{Resource: c.bp.Resource, Uses: c.bp.Uses, Children: usable}
	env, err := expr.NewEnv(envBP)
	if err != nil {
		c.errs.Add(ir.Pos{File: c.bp.File}, diag.ExprType, "", "cannot build the expression environment: %v", err)
		return
	}
	c.env = env
	vars := []string{expr.Self}
	for _, ch := range usable {
		vars = append(vars, ch.ID)
	}
	var apiEnv, selfEnv *expr.Env
	collections := map[*ir.Child]*expr.Env{}
	for _, s := range sites {
		if s.selfOnly {
			if selfEnv == nil {
				if selfEnv, err = expr.NewEnv(&ir.Blueprint{Resource: c.bp.Resource}); err != nil {
					c.errs.Add(s.x.Pos, diag.ExprType, "", "cannot build the expression environment: %v", err)
					return
				}
			}
			c.checkExpr(selfEnv, []string{expr.Self}, s)
			continue
		}
		if s.own {
			cenv, ok := collections[s.child]
			if !ok {
				cenv = c.collectionEnv(env, s.child, vars)
				collections[s.child] = cenv
			}
			if cenv == nil {
				continue // its items did not check
			}
			names := append(slices.Clone(vars), ir.Each)
			for _, it := range s.child.ForEach {
				names = append(names, it.Name)
			}
			c.checkExpr(cenv, names, s)
			continue
		}
		if !s.api {
			c.checkExpr(env, vars, s)
			continue
		}
		if apiEnv == nil {
			if apiEnv, err = env.ForAPI(); err != nil {
				c.errs.Add(s.x.Pos, diag.ExprType, "", "cannot build the environment of reconcile.api: %v", err)
				return
			}
		}
		c.checkExpr(apiEnv, append(vars, expr.APIVars...), s)
	}
}

// collectionEnv is the environment of a collection's own expressions: its
// iterators are typed as the items their expressions give (checked first,
// as sites before the collection's own). It reports an iterator named as a
// child, and returns nil when an iterator's items did not check.
func (c *checker) collectionEnv(env *expr.Env, child *ir.Child, vars []string) *expr.Env {
	itemTypes := map[string]*cel.Type{}
	for _, it := range child.ForEach {
		if slices.Contains(vars, it.Name) {
			c.errs.Add(it.Pos, diag.InvalidID, "choose a name that is not a child's id", "forEach name %q is the id of a child", it.Name)
		}
		if it.Items.Checked == nil {
			return nil
		}
		t := it.Items.Checked.OutputType()
		switch t.Kind() {
		case types.ListKind, types.MapKind:
			itemTypes[it.Name] = t.Parameters()[0]
		}
	}
	cenv, err := env.ForCollection(child, itemTypes)
	if err != nil {
		c.errs.Add(child.Pos, diag.ExprType, "", "cannot build the environment of collection %q: %v", child.ID, err)
		return nil
	}
	return cenv
}

func (c *checker) checkExpr(env *expr.Env, vars []string, s exprSite) {
	if parts := c.parts[s.x]; len(parts) > 0 {
		// A list, joined: its parts are checked where they are written,
		// and the whole only when every part holds.
		before := len(*c.errs)
		for _, p := range parts {
			part := s
			part.x = p
			c.checkExpr(env, vars, part)
		}
		if len(*c.errs) > before {
			return
		}
	}
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
			code, hint, msg := diag.ExprType, "", e.Message
			if strings.HasPrefix(msg, "Syntax error") {
				code = diag.ExprSyntax
			}
			if m := undeclaredRE.FindStringSubmatch(msg); m != nil {
				code = diag.UnknownReference
				msg = fmt.Sprintf("unknown reference %q", m[1])
				hint = didYouMean(m[1], vars)
				name, isLib := "", false
				if e.Location.Line() <= 1 && len(libraryFunctions(env, m[1])) > 0 {
					name, isLib = libraryCallAt(x.Source, e.Location.Column(), m[1])
				}
				switch {
				case isLib:
					msg, hint = unknownLibraryFunction(env, m[1], name)
				case e.Location.Line() <= 1 && callAt(x.Source, e.Location.Column(), m[1]) >= 0:
					at := callAt(x.Source, e.Location.Column(), m[1])
					if inLibrary(env, x.Source, at) {
						continue // reported at its library's name
					}
					if fm, fh, ok := unknownFunction(env, m[1]); ok {
						msg, hint = fm, fh
						pos.Col = x.Pos.Col + at
					}
				case m[1] == "schema":
					hint = "a Blueprint calls the custom resource self: write self.spec... where kro writes schema.spec..."
				case hint == "":
					hint = "known: " + strings.Join(vars, ", ")
				}
			}
			if m := noOverloadRE.FindStringSubmatch(msg); m != nil && (m[1] == "_==_" || m[1] == "_!=_") {
				if fn, path, ok := nullComparedAt(env, x.Source, e.Location); ok {
					c.nullComparison(x, pos, fn, path)
					continue
				}
			}
			if m := noOverloadRE.FindStringSubmatch(msg); m != nil && !strings.HasPrefix(m[1], "_") {
				if fm, fh, ok := unknownFunction(env, m[1]); ok {
					// CEL points at the call's parenthesis; point at the name.
					i := strings.LastIndex(x.Source[:min(len(x.Source), max(0, e.Location.Column()))], m[1])
					if i >= 0 && e.Location.Line() <= 1 && inLibrary(env, x.Source, i) {
						continue // reported at its library's name
					}
					code, msg, hint = diag.UnknownReference, fm, fh
					if i >= 0 && e.Location.Line() <= 1 {
						pos.Col = x.Pos.Col + i
					}
				}
			}
			if noOverloadRE.MatchString(msg) && hint == "" {
				switch {
				case metaTimeRE.MatchString(msg):
					hint = metaTimeHint
				case stringOfObjectRE.MatchString(msg):
					hint = "json.marshal(x) is a map's or a list's JSON text"
				}
			}
			if strings.HasPrefix(msg, "type 'list(") && strings.HasSuffix(msg, "does not support field selection") {
				hint = "it is a list: read its items with map, filter, exists or all, such as x.map(o, o.metadata.name), or one with [0]"
			}
			msg = humanTypes(msg)
			if m := undefinedFieldRE.FindStringSubmatch(msg); m != nil {
				msg, hint = c.undefinedField(env, x.Source, e.Location.Column(), e.Location.Line(), m[1])
				pos.Col++ // CEL points at the dot; point at the field
			}
			c.errs.Add(pos, code, hint, "%s in ${%s}", msg, x.Source)
		}
		return
	}
	x.Checked = expr.OrderMapIteration(env.CEL(), ast)
	if callsRandomString(ast) && !writtenOnce(s) {
		where := s.where
		switch {
		case s.child != nil && s.child.Phase == ir.OnCreate && s.where == "template":
			where = fmt.Sprintf("the metadata of onCreate %q, which every reconcile renders to find its object", s.child.ID)
		case s.child != nil:
			where = fmt.Sprintf("%s %q's %s", s.child.Phase, s.child.ID, s.where)
		}
		c.errs.Add(x.Pos, diag.ExprType, "for a value that stays the same, use random.seededString(n, self.metadata.uid)",
			"random.string gives a new value on every call: use it in an onCreate template's fields outside metadata (created once, never written again), not in %s, in ${%s}", where, x.Source)
	}
	x.Type = ast.OutputType().String()
	c.checkNullComparisons(x, ast)
	refs := map[string]bool{}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Value == nil && slices.Contains(vars, ref.Name) {
			refs[ref.Name] = true
		}
	}
	if s.own {
		// Iterators are no objects; each is the collection's own item.
		for _, it := range s.child.ForEach {
			delete(refs, it.Name)
		}
	}
	x.Refs = make([]string, 0, len(refs))
	for r := range refs {
		x.Refs = append(x.Refs, r)
	}
	sort.Strings(x.Refs)

	out := ast.OutputType()
	if s.items {
		switch out.Kind() {
		case types.ListKind, types.MapKind, types.DynKind:
		default:
			c.errs.Add(x.Pos, diag.ExprResultType, "give a list (one object per item) or a map (one per key)", "forEach items must be a list or a map, but ${%s} is %s", x.Source, resultType(out))
		}
	}
	if s.text && !typeFits(out, stringShape) {
		c.errs.Add(x.Pos, diag.ExprResultType, "give a string, e.g. ${string(deployment.status.readyReplicas)}", "%s must be a string, but ${%s} is %s", s.where, x.Source, resultType(out))
	}
	if s.conditionStatus && !boolOrString(out) {
		c.errs.Add(x.Pos, diag.ExprResultType, "compare to get a bool, e.g. ${deployment.status.readyReplicas > 0}", "%s must be a bool (or a string saying True, False or Unknown), but ${%s} is %s", s.where, x.Source, resultType(out))
	}
	if s.isBool && !typeFits(out, booleanShape) {
		c.errs.Add(x.Pos, diag.ExprResultType, "compare to get a bool, e.g. ${self.spec.replicas > 0}", "%s must be a bool, but ${%s} is %s", s.where, x.Source, resultType(out))
	}
	if use, ok := c.exprShapes[x]; ok && !typeFits(out, use.shape.kind()) {
		c.errs.Add(x.Pos, diag.ExprResultType, "", "%s must be %s, but ${%s} is %s", displayField(use.path), shapeNames[use.shape.kind()], x.Source, resultType(out))
	} else if ok {
		c.checkLiteralKeys(x, ast.NativeRep().SourceInfo(), ast.NativeRep().Expr(), use.shape, use.path, use.kind)
	}
	if s.child != nil && s.where != "readyWhen" && refs[s.child.ID] {
		c.errs.Add(x.Pos, diag.Cycle, "a child cannot depend on its own live object; use readyWhen to read it", "child %q references itself in ${%s}", s.child.ID, x.Source)
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

// boolOrString reports whether t can be a condition's status.
func boolOrString(t *cel.Type) bool {
	switch t.Kind() {
	case types.BoolKind, types.StringKind, types.DynKind, types.AnyKind, types.ErrorKind, types.TypeParamKind:
		return true
	case types.OpaqueKind:
		return t.TypeName() == "optional_type" && len(t.Parameters()) == 1 && boolOrString(t.Parameters()[0])
	}
	return false
}

// undefinedField turns CEL's "undefined field" into a message that names
// the whole path and the field that was probably meant.
func (c *checker) undefinedField(env *expr.Env, src string, col, line int, field string) (string, string) {
	msg := fmt.Sprintf("undefined field '%s'", field)
	if line > 1 || col > len(src) {
		return msg, ""
	}
	// Walk back from the '.' before the field over a select chain, with
	// indexes: ingress.status.loadBalancer.ingress[0].
	start := col
	for start > 0 {
		switch ch := src[start-1]; {
		case isIdentByte(ch) || ch == '.':
			start--
			continue
		case ch == ']':
			if open := strings.LastIndexByte(src[:start-1], '['); open > 0 {
				start = open
				continue
			}
		}
		break
	}
	chain := strings.Split(src[start:col], ".")
	if len(chain) == 0 || chain[0] == "" {
		return msg, ""
	}
	s := c.varShape(chain[0])
	if s == nil {
		return undefinedFieldOfType(env, chain, field, msg)
	}
	for i, seg := range chain {
		name, _, _ := strings.Cut(seg, "[")
		if i > 0 {
			next, ok := s.field(name)
			if !ok {
				return msg, ""
			}
			s = next
		}
		for range strings.Count(seg, "[") {
			if s.kind() != listShape && s.kind() != mapShape {
				return msg, ""
			}
			s = s.elem()
		}
	}
	full := strings.Join(append(chain, field), ".")
	msg = "unknown field " + full
	if ch := c.bp.Child(chain[0]); len(chain) == 1 && ch != nil && ch.BuiltIn && (field == "apiVersion" || field == "kind") {
		// The Go types of built-in kinds hold them inline (TypeMeta), and
		// the objects the API server returns leave them empty.
		text := ch.GroupVersionKind.GroupVersion().String()
		if field == "kind" {
			text = ch.Kind
		}
		return msg, fmt.Sprintf("the %s of a built-in kind is not a field expressions read; write it as text: %q", field, text)
	}
	if near, ok := closest(field, s.fieldNames()); ok {
		return msg, "did you mean " + strings.Join(append(chain, near), ".") + "?"
	}
	if c.inferredStatus && len(chain) == 2 && chain[0] == expr.Self && chain[1] == "status" {
		return msg, "declare " + field + " in schema.status to read it: the types of the other status fields are inferred from emit.status, after expressions are checked"
	}
	if ss, ok := s.(structuralShape); ok && ss.s != nil && ss.s.XPreserveUnknownFields {
		// kro types such a field dyn; the API server's CEL, which
		// Blueprints follow, does not expose it.
		return msg, fmt.Sprintf("%s keeps fields its schema does not declare (x-kubernetes-preserve-unknown-fields, SimpleSchema's object), and expressions read only declared ones, as the API server's CEL does: declare %s in the schema (for SimpleSchema, as a field of a declared type) to read it",
			strings.Join(chain, "."), field)
	}
	if names := s.fieldNames(); len(names) > 0 && len(names) <= 12 {
		return msg, "known fields: " + strings.Join(names, ", ")
	}
	return msg, ""
}

// undefinedFieldOfType is undefinedField for a variable that is no child
// and not self, such as a forEach iterator over the custom resource's list
// of objects: its fields are its CEL type's.
func undefinedFieldOfType(env *expr.Env, chain []string, field, msg string) (string, string) {
	var t *cel.Type
	for _, v := range env.CEL().Variables() {
		if v.Name() == chain[0] {
			t = v.Type()
		}
	}
	fieldsOf := func(t *cel.Type) map[string]*cel.Type {
		if t == nil {
			return nil
		}
		fields, _ := env.ObjectFields(t.TypeName())
		return fields
	}
	for _, seg := range chain[1:] {
		if strings.Contains(seg, "[") {
			return msg, ""
		}
		t = fieldsOf(t)[seg]
	}
	fields := fieldsOf(t)
	if len(fields) == 0 {
		return msg, ""
	}
	names := slices.Sorted(maps.Keys(fields))
	msg = "unknown field " + strings.Join(append(chain, field), ".")
	if near, ok := closest(field, names); ok {
		return msg, "did you mean " + strings.Join(append(chain, near), ".") + "?"
	}
	if len(names) <= 12 {
		return msg, "known fields: " + strings.Join(names, ", ")
	}
	return msg, ""
}

func (c *checker) varShape(name string) shape {
	if name == expr.Self {
		return c.selfShape
	}
	return c.childShapes[name]
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// callsRandomString reports whether ast calls random.string.
func callsRandomString(ast *cel.Ast) bool {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if slices.Contains(ref.OverloadIDs, expr.RandomStringOverload) {
			return true
		}
	}
	return false
}

// writtenOnce reports whether the value s computes is written once and
// never again: a field of an onCreate template, but its metadata, which
// every reconcile renders to find the object.
func writtenOnce(s exprSite) bool {
	if s.child == nil || s.child.Phase != ir.OnCreate || s.where != "template" {
		return false
	}
	return !slices.Contains(s.child.Template.Lookup("metadata").Exprs(), s.x)
}
