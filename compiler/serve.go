package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	yaml "go.yaml.in/yaml/v3"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// This file reads and checks the serve section: what callers of the intent
// gateway send (fields, each mapped to a path of the custom resource), where
// the custom resource goes (its name and namespace), who may send it
// (tokens) and what they read back (view). The decoder half reads it; the
// checker half type-checks the view and records which intent fields each
// child reads, so that the gateway names fields, not paths, when one fails.

// serveFields are the fields of the serve section, in the order docs list
// them.
var serveFields = []string{"target", "description", "fields", "name", "namespace", "view", "tokens"}

// serveFieldFields are the fields of one intent field.
var serveFieldFields = []string{"path", "type", "required", "default", "enum", "pattern", "description", "migrate"}

// reservedIntentFields are keys an intent body uses for itself.
var reservedIntentFields = map[string]string{
	"target": "an intent's target is the target it is sent to",
}

var (
	targetRE = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	scopeRE  = regexp.MustCompile(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	prefixRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*)$`)
)

// maxGeneratePrefix leaves room in a 63-character name for the random
// suffix the gateway adds.
const maxGeneratePrefix = 40

// serve reads the serve section.
func (d *decoder) serve(top *yamlpos.Map) {
	n := top.Get("serve")
	if n == nil {
		return
	}
	o := d.Map(n, "serve")
	if o == nil {
		return
	}
	d.Only(o, serveFields...)
	s := &ir.Serve{Pos: d.Pos(top.KeyNode("serve"))}
	d.bp.Serve = s

	s.Target = d.bp.Name
	if t, tn := d.String(o, "target", false); tn != nil {
		s.Target = t
		if !targetRE.MatchString(t) || len(t) > 63 {
			d.add(d.Pos(tn), diag.InvalidValue, "use lower-case letters, digits and '-', starting with a letter, as in app or web-app", "serve.target %q is not a valid target name", t)
		}
	}
	s.Description, _ = d.String(o, "description", false)

	d.serveFields(o, s)
	d.serveName(o, s)
	d.serveNamespace(o, s)
	if v := o.Get("view"); v != nil {
		if v.Kind != yaml.MappingNode {
			d.add(d.Pos(v), diag.WrongType, "write the fields callers read back, e.g. url: ${self.status.url}", "serve.view must be a map, not %s", describe(v))
		} else {
			s.View = d.value(v)
		}
	}
	d.serveTokens(o, s)
}

// serveFields reads serve.fields, checking each path against the CRD's
// schema when there is one.
func (d *decoder) serveFields(o *yamlpos.Map, s *ir.Serve) {
	fn := o.Get("fields")
	fm := d.Map(fn, "serve.fields")
	if fm == nil {
		return
	}
	if len(fm.Order) == 0 {
		at := o.Node
		if fn != nil {
			at = fn
		}
		d.add(d.Pos(at), diag.MissingField, "list what callers send, e.g. fields: {repository: {path: spec.repository, required: true}}", "serve.fields is required: a target takes at least one field")
		return
	}
	paths := map[string]string{}
	for _, name := range fm.Order {
		kn := fm.KeyNode(name)
		path := "serve.fields." + name
		switch {
		case reservedIntentFields[name] != "":
			d.add(d.Pos(kn), diag.InvalidID, "choose another name", "field %q is reserved: %s", name, reservedIntentFields[name])
		case !idRE.MatchString(name):
			d.add(d.Pos(kn), diag.InvalidID, "use a lower-camel-case identifier, such as repository or minReplicas: views read it as intent.<name>", "field name %q is not an identifier", name)
		case celReserved[name]:
			d.add(d.Pos(kn), diag.InvalidID, "choose another name", "field name %q is a reserved word in CEL", name)
		}
		f := &ir.ServeField{Pos: d.Pos(kn), Name: name}
		m := d.Map(fm.Get(name), path)
		if m == nil {
			continue
		}
		d.Only(m, serveFieldFields...)
		var crdType string
		if p, pn := d.String(m, "path", false); p != "" {
			f.Path = p
			crdType = d.servePath(pn, path, f)
			if first, dup := paths[p]; dup {
				d.add(d.Pos(pn), diag.InvalidValue, "map each field to its own path", "%s.path %s is also the path of field %s", path, p, first)
			}
			paths[p] = name
		}
		if t, tn := d.String(m, "type", false); tn != nil {
			f.Type = ir.FieldType(t)
			if !slices.Contains(ir.FieldTypes, f.Type) {
				d.add(d.Pos(tn), diag.InvalidValue, fieldTypeHint(t), "%s.type %q is not a field type", path, t)
				f.Type = ""
			} else if crdType != "" && !typeAgrees(f.Type, crdType) {
				d.add(d.Pos(tn), diag.InvalidValue, "make it "+crdType+", or map the field to another path", "%s.type is %s, but %s is %s in the CRD", path, t, f.Path, article(crdType))
			}
		} else if crdType != "" {
			f.Type = ir.FieldType(crdType)
		} else if f.Path != "" && d.self != nil {
			d.add(f.Pos, diag.MissingField, "add type: string, integer, number or boolean", "%s.type is required: the CRD's %s is not a string, integer, number or boolean", path, f.Path)
		} else {
			// Without a path or a schema, strings are what names and
			// namespaces are made of.
			f.Type = ir.FieldString
			if f.Path != "" {
				d.add(f.Pos, diag.MissingField, "add type: string, integer, number or boolean", "%s.type is required: the CRD has no schema to take it from", path)
			}
		}
		if r := m.Get("required"); r != nil {
			f.Required, _ = d.Bool(r, path+".required")
		}
		f.Description, _ = d.String(m, "description", false)
		if p, pn := d.String(m, "pattern", false); pn != nil {
			if _, err := regexp.Compile(p); err != nil {
				d.add(d.Pos(pn), diag.InvalidValue, "write an RE2 regular expression, such as ^[a-z0-9-]+$", "%s.pattern does not compile: %v", path, err)
			} else if f.Type != "" && f.Type != ir.FieldString {
				d.add(d.Pos(pn), diag.InvalidValue, "remove it, or make the field a string", "%s.pattern applies to strings, and the field is %s", path, article(string(f.Type)))
			} else {
				f.Pattern = p
			}
		}
		if en := m.Get("enum"); en != nil {
			items := d.List(en, path+".enum")
			if items != nil && len(items) == 0 || en.Kind == yaml.SequenceNode && len(en.Content) == 0 {
				d.add(d.Pos(en), diag.InvalidValue, "list the values allowed, or remove enum", "%s.enum is empty: no value would be allowed", path)
			}
			for i, it := range items {
				v := d.value(it)
				if d.fieldLiteral(f, v, fmt.Sprintf("%s.enum[%d]", path, i), false) {
					f.Enum = append(f.Enum, v)
				}
			}
		}
		if dn := m.Get("default"); dn != nil {
			v := d.value(dn)
			if d.fieldLiteral(f, v, path+".default", true) {
				f.Default = v
			}
			if f.Required {
				d.add(d.Pos(dn), diag.InvalidValue, "remove default, or required: a required field is always sent", "%s is required and has a default", path)
			}
		}
		if mn := m.Get("migrate"); mn != nil {
			d.serveMigrate(mn, path, f, crdType)
		}
		if f.Description == "" && f.Path != "" && d.self != nil {
			if ps := schemaAt(d.self, f.Path); ps != nil {
				f.Description = ps.Description
			}
		}
		s.Fields = append(s.Fields, f)
	}
	d.requiredPaths(fm, s)
	d.migrateConflicts(s)
}

// fieldLiteral checks a default or enum value of f: a literal of its type,
// in its enum and matching its pattern (for a default).
func (d *decoder) fieldLiteral(f *ir.ServeField, v *ir.Value, path string, isDefault bool) bool {
	if v.Kind != ir.Literal {
		d.add(v.Pos, diag.WrongType, "write a plain value; a field's values come from callers, not expressions", "%s must be %s literal, not %s", path, article(string(f.Type)), v.Kind)
		return false
	}
	if f.Type != "" && !literalOfType(v.Literal, f.Type) {
		d.add(v.Pos, diag.WrongType, "", "%s must be %s, not %s", path, article(string(f.Type)), describeLiteral(v.Literal))
		return false
	}
	if !isDefault {
		return true
	}
	if len(f.Enum) > 0 && !slices.ContainsFunc(f.Enum, func(e *ir.Value) bool { return e.Literal == v.Literal }) {
		d.add(v.Pos, diag.InvalidValue, "make it one of "+formatEnum(f.Enum), "%s %v is not one of the field's enum", path, v.Literal)
		return false
	}
	if s, ok := v.Literal.(string); ok && f.Pattern != "" && !regexp.MustCompile(f.Pattern).MatchString(s) {
		d.add(v.Pos, diag.InvalidValue, "make it match, or change the pattern", "%s %q does not match the field's pattern %s", path, s, f.Pattern)
		return false
	}
	return true
}

// servePath checks a field's path against the CRD's schema and returns the
// type the schema gives it ("" when unknown or not a scalar).
func (d *decoder) servePath(pn *yaml.Node, where string, f *ir.ServeField) string {
	p := f.Path
	segs := strings.Split(p, ".")
	if segs[0] != "spec" || len(segs) < 2 || slices.Contains(segs, "") {
		d.add(d.Pos(pn), diag.InvalidValue, "write a dotted path under spec, such as spec.repository", "%s.path %q is not a path under spec: callers set the custom resource's spec, the runtime writes its status", where, p)
		f.Path = ""
		return ""
	}
	if d.self == nil {
		return ""
	}
	s := d.self
	for i, seg := range segs {
		if s.XPreserveUnknownFields && s.Properties[seg].Type == "" {
			return ""
		}
		next, ok := s.Properties[seg]
		if !ok {
			if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				next = *s.AdditionalProperties.Structural
			} else {
				prefix := strings.Join(segs[:i], ".")
				names := make([]string, 0, len(s.Properties))
				for k := range s.Properties {
					names = append(names, k)
				}
				sort.Strings(names)
				hint := ""
				if near, ok := closest(seg, names); ok {
					hint = "did you mean " + join(prefix, near) + "?"
				} else if len(names) > 0 && len(names) <= 12 {
					hint = "known fields of " + prefix + ": " + strings.Join(names, ", ")
				}
				d.add(d.Pos(pn), diag.UnknownField, hint, "%s.path: the CRD has no field %s", where, p)
				f.Path = ""
				return ""
			}
		}
		if i < len(segs)-1 && next.Type != "object" && !next.XPreserveUnknownFields {
			d.add(d.Pos(pn), diag.InvalidValue, "map the field to a string, integer, number or boolean", "%s.path: %s is %s in the CRD, not an object", where, strings.Join(segs[:i+1], "."), article(next.Type))
			f.Path = ""
			return ""
		}
		s = &next
	}
	switch s.Type {
	case "string", "integer", "number", "boolean":
		return s.Type
	case "object", "array":
		d.add(d.Pos(pn), diag.InvalidValue, "map the field to a string, integer, number or boolean under it", "%s.path: %s is %s in the CRD; a field holds one value", where, p, article(s.Type))
	}
	if s.XIntOrString {
		return ""
	}
	return ""
}

// requiredPaths reports what the CRD requires under spec that no field
// sets and no default fills: every intent would be refused.
func (d *decoder) requiredPaths(fm *yamlpos.Map, s *ir.Serve) {
	if d.self == nil {
		return
	}
	spec, ok := d.self.Properties["spec"]
	if !ok {
		return
	}
	set := map[string]bool{}
	for _, f := range s.Fields {
		if f.Path != "" {
			segs := strings.Split(f.Path, ".")
			if len(segs) > 1 {
				set[segs[1]] = true
			}
		}
	}
	for _, r := range requiredOf(&spec) {
		if p, ok := spec.Properties[r]; set[r] || ok && p.Default.Object != nil {
			continue
		}
		d.add(d.Pos(fm.Node), diag.MissingField, "add a field with path: spec."+r+", or a default for it in the CRD",
			"the CRD requires spec.%s, which no serve field sets: every intent would be refused", r)
	}
}

// serveName reads serve.name: from a field, or generated.
func (d *decoder) serveName(o *yamlpos.Map, s *ir.Serve) {
	n := o.Get("name")
	if n == nil {
		s.Name.Generate = s.Target + "-"
		return
	}
	m := d.Map(n, "serve.name")
	if m == nil {
		return
	}
	d.Only(m, "from", "generate")
	from, fromNode := d.String(m, "from", false)
	gen, genNode := d.String(m, "generate", false)
	switch {
	case from != "" && gen != "":
		d.add(d.Pos(genNode), diag.InvalidValue, "keep one: from names the custom resource after a field, generate makes a name", "serve.name has both from and generate")
	case from != "":
		s.Name.From = from
		if f := d.serveFieldRef(s, from, fromNode, "serve.name.from"); f != nil && f.Type != ir.FieldString {
			d.add(d.Pos(fromNode), diag.InvalidValue, "name the custom resource after a string field", "serve.name.from: field %s is %s, not a string", from, article(string(f.Type)))
		}
	case genNode != nil:
		if !prefixRE.MatchString(gen) || len(gen) > maxGeneratePrefix {
			d.add(d.Pos(genNode), diag.InvalidValue, fmt.Sprintf("use lower-case letters, digits and '-', at most %d, such as app-", maxGeneratePrefix), "serve.name.generate %q is not a name prefix", gen)
		}
		s.Name.Generate = gen
	default:
		d.add(d.Pos(n), diag.MissingField, "add from: <a field>, or generate: <a prefix>", "serve.name says neither from nor generate")
	}
}

// serveNamespace reads serve.namespace: a fixed namespace, or a field's
// value mapped to one.
func (d *decoder) serveNamespace(o *yamlpos.Map, s *ir.Serve) {
	n := o.Get("namespace")
	if d.bp.Resource.Kind != "" && !d.bp.Resource.Namespaced {
		if n != nil {
			d.add(d.Pos(o.KeyNode("namespace")), diag.InvalidValue, "remove it", "serve.namespace is set, but %s is cluster-scoped", d.bp.Resource.Kind)
		}
		return
	}
	if n == nil {
		s.Namespace.Name = "default"
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		s.Namespace.Name = n.Value
		d.namespaceName(n, n.Value, "serve.namespace")
		return
	}
	m := d.Map(n, "serve.namespace")
	if m == nil {
		return
	}
	d.Only(m, "from", "map")
	from, fromNode := d.Required(m, "from", "name the field that picks the namespace, e.g. from: environment; or write one namespace: namespace: apps")
	mn := m.Get("map")
	if mn == nil {
		d.add(d.Pos(n), diag.MissingField, "map each value of the field to a namespace, e.g. map: {staging: apps-staging, prod: apps-prod}", "serve.namespace.map is required with from")
		return
	}
	mm := d.Map(mn, "serve.namespace.map")
	if mm == nil {
		return
	}
	s.Namespace.From = from
	s.Namespace.Map = map[string]string{}
	taken := map[string]string{}
	for _, k := range mm.Order {
		ns, vn := d.String(mm, k, true)
		if ns == "" {
			continue
		}
		if !d.namespaceName(vn, ns, "serve.namespace.map."+k) {
			continue
		}
		if other, dup := taken[ns]; dup {
			d.add(d.Pos(vn), diag.InvalidValue, "give each value its own namespace: the gateway tells an intent's "+from+" by its namespace", "serve.namespace.map: %s and %s both map to namespace %s", other, k, ns)
			continue
		}
		taken[ns] = k
		s.Namespace.Map[k] = ns
	}
	if len(mm.Order) == 0 {
		d.add(d.Pos(mn), diag.InvalidValue, "map each value of the field to a namespace", "serve.namespace.map is empty")
	}
	f := d.serveFieldRef(s, from, fromNode, "serve.namespace.from")
	if f == nil {
		return
	}
	if f.Type != ir.FieldString {
		d.add(d.Pos(fromNode), diag.InvalidValue, "pick the namespace with a string field", "serve.namespace.from: field %s is %s, not a string", from, article(string(f.Type)))
		return
	}
	for _, e := range f.Enum {
		if v, _ := e.Literal.(string); s.Namespace.Map[v] == "" && mm.Get(v) == nil {
			d.add(e.Pos, diag.InvalidValue, "add it to serve.namespace.map, or remove it from the enum", "%s is in the enum of field %s, but serve.namespace.map has no namespace for it", v, from)
		}
	}
	if f.Default != nil {
		if v, _ := f.Default.Literal.(string); mm.Get(v) == nil {
			d.add(f.Default.Pos, diag.InvalidValue, "add it to serve.namespace.map, or change the default", "the default %q of field %s has no namespace in serve.namespace.map", v, from)
		}
	}
}

// namespaceName checks a namespace name.
func (d *decoder) namespaceName(n *yaml.Node, ns, path string) bool {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		d.add(d.Pos(n), diag.InvalidValue, "a namespace is a DNS label: lower-case letters, digits and '-'", "%s %q is not a namespace name", path, ns)
		return false
	}
	return true
}

// serveFieldRef returns the field a part of serve names, reporting one
// that does not exist.
func (d *decoder) serveFieldRef(s *ir.Serve, name string, n *yaml.Node, path string) *ir.ServeField {
	if f := s.Field(name); f != nil {
		return f
	}
	names := make([]string, 0, len(s.Fields))
	for _, f := range s.Fields {
		names = append(names, f.Name)
	}
	hint := didYouMean(name, names)
	if hint == "" {
		hint = "add it under serve.fields"
	}
	d.add(d.Pos(n), diag.UnknownReference, hint, "%s: no field %q", path, name)
	return nil
}

// serveTokens reads serve.tokens: the grants of token scopes.
func (d *decoder) serveTokens(o *yamlpos.Map, s *ir.Serve) {
	tn := o.Get("tokens")
	items := d.List(tn, "serve.tokens")
	if len(items) == 0 {
		at := o.Node
		if tn != nil {
			at = tn
		}
		d.add(d.Pos(at), diag.MissingField, "grant a token scope what it may do, e.g. tokens: [{scope: deploy, verbs: [create, get, list, delete]}]", "serve.tokens is required: without a grant no token may use the target")
		return
	}
	verbNames := make([]string, len(ir.Verbs))
	for i, v := range ir.Verbs {
		verbNames[i] = string(v)
	}
	for i, it := range items {
		path := fmt.Sprintf("serve.tokens[%d]", i)
		m := d.Map(it, path)
		if m == nil {
			continue
		}
		d.Only(m, "scope", "verbs", "environments")
		g := &ir.ServeGrant{Pos: d.Pos(it)}
		scope, sn := d.Required(m, "scope", "name the scope a token carries to be granted this, e.g. scope: deploy")
		if scope != "" && !scopeRE.MatchString(scope) {
			d.add(d.Pos(sn), diag.InvalidValue, "use lower-case letters, digits and '-', as in deploy or read-only", "%s.scope %q is not a scope name", path, scope)
		}
		g.Scope = scope
		vn := m.Get("verbs")
		verbs := d.List(vn, path+".verbs")
		if len(verbs) == 0 {
			at := m.Node
			if vn != nil {
				at = vn
			}
			d.add(d.Pos(at), diag.MissingField, "list some of "+strings.Join(verbNames, ", "), "%s.verbs is required", path)
		}
		for j, v := range verbs {
			verb, ok := d.Str(v, fmt.Sprintf("%s.verbs[%d]", path, j))
			if !ok {
				continue
			}
			if !slices.Contains(verbNames, verb) {
				hint := didYouMean(verb, verbNames)
				if hint == "" {
					hint = "use " + strings.Join(verbNames, ", ")
				}
				d.add(d.Pos(v), diag.InvalidValue, hint, "%s.verbs[%d] %q is not a verb", path, j, verb)
				continue
			}
			g.Verbs = append(g.Verbs, ir.Verb(verb))
		}
		if en := m.Get("environments"); en != nil {
			if s.Namespace.From == "" {
				d.add(d.Pos(m.KeyNode("environments")), diag.InvalidValue, "remove it: every intent of this target goes in one namespace", "%s.environments needs serve.namespace.from: the target has no field that picks a namespace", path)
			}
			for j, e := range d.List(en, path+".environments") {
				env, ok := d.Str(e, fmt.Sprintf("%s.environments[%d]", path, j))
				if !ok {
					continue
				}
				if s.Namespace.From != "" && s.Namespace.Map != nil {
					if _, known := s.Namespace.Map[env]; !known {
						d.add(d.Pos(e), diag.InvalidValue, didYouMeanOr(env, s.Environments(), "use one of "+strings.Join(s.Environments(), ", ")), "%s.environments[%d] %q is not a value of field %s in serve.namespace.map", path, j, env, s.Namespace.From)
						continue
					}
				}
				g.Environments = append(g.Environments, env)
			}
		}
		s.Tokens = append(s.Tokens, g)
	}
}

func didYouMeanOr(s string, candidates []string, otherwise string) string {
	if h := didYouMean(s, candidates); h != "" {
		return h
	}
	return otherwise
}

// checkServe type-checks serve.view and records which intent fields each
// child reads. It runs after checkExpressions, whose checked ASTs it reads.
func (c *checker) checkServe() {
	s := c.bp.Serve
	if s == nil {
		return
	}
	if s.View != nil {
		if env, err := expr.NewViewEnv(c.bp); err != nil {
			c.errs.Add(s.View.Pos, diag.ExprType, "", "cannot build the environment of serve.view: %v", err)
		} else {
			for _, x := range s.View.Exprs() {
				c.checkExpr(env, []string{expr.Self, expr.Intent}, exprSite{x: x, where: "serve.view"})
			}
		}
	}
	s.Reads = map[string][]string{}
	read := func(id string, xs []*ir.Expr) {
		fields := map[string]bool{}
		for _, x := range xs {
			if x == nil || x.Checked == nil {
				continue
			}
			paths := map[string]bool{}
			selfPaths(x.Checked.NativeRep().Expr(), paths)
			for p := range paths {
				for _, f := range s.Fields {
					if f.Path != "" && (p == "" || p == f.Path || strings.HasPrefix(f.Path, p+".") || strings.HasPrefix(p, f.Path+".")) {
						fields[f.Name] = true
					}
				}
			}
		}
		if len(fields) > 0 {
			names := make([]string, 0, len(fields))
			for f := range fields {
				names = append(names, f)
			}
			sort.Strings(names)
			s.Reads[id] = names
		}
	}
	for _, ch := range c.bp.Children {
		xs := append([]*ir.Expr{ch.IncludeWhen, ch.ReadyWhen}, ch.Template.Exprs()...)
		for _, it := range ch.ForEach {
			xs = append(xs, it.Items)
		}
		read(ch.ID, xs)
	}
	if c.bp.Reconcile != nil {
		read(ir.RemoteReads, append(c.bp.Reconcile.Args.Exprs(), c.bp.APIExprs()...))
	}
	if len(s.Reads) == 0 {
		s.Reads = nil
	}
}

// selfPaths adds to out every path of self that e reads, dotted and
// without "self." ("" when it reads self whole), longest only: reading
// self.spec.image adds spec.image, not spec.
func selfPaths(e celast.Expr, out map[string]bool) {
	for _, p := range expr.ReadPaths(e, expr.Self) {
		out[strings.Join(p, ".")] = true
	}
}

// schemaAt returns the schema at a dotted path of s, or nil.
func schemaAt(s *structuralschema.Structural, path string) *structuralschema.Structural {
	for _, seg := range strings.Split(path, ".") {
		next, ok := s.Properties[seg]
		if !ok {
			return nil
		}
		s = &next
	}
	return s
}

// typeAgrees reports whether a field of type t can be written where the
// CRD has a crd-typed value: an integer fits a number.
func typeAgrees(t ir.FieldType, crd string) bool {
	return string(t) == crd || t == ir.FieldInteger && crd == "number"
}

func literalOfType(lit any, t ir.FieldType) bool {
	switch lit.(type) {
	case string:
		return t == ir.FieldString
	case bool:
		return t == ir.FieldBoolean
	case int64:
		return t == ir.FieldInteger || t == ir.FieldNumber
	case float64:
		return t == ir.FieldNumber
	}
	return false
}

func fieldTypeHint(t string) string {
	names := make([]string, len(ir.FieldTypes))
	for i, ft := range ir.FieldTypes {
		names[i] = string(ft)
	}
	switch t {
	case "int", "int64", "int32":
		return "did you mean integer?"
	case "bool":
		return "did you mean boolean?"
	case "float", "double":
		return "did you mean number?"
	case "str", "text":
		return "did you mean string?"
	}
	return didYouMeanOr(t, names, "use "+strings.Join(names, ", "))
}

func formatEnum(enum []*ir.Value) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = fmt.Sprint(e.Literal)
	}
	return strings.Join(parts, ", ")
}

// article puts "a" or "an" before a type name.
func article(t string) string {
	switch {
	case t == "":
		return "untyped"
	case strings.IndexByte("aeiou", t[0]) >= 0:
		return "an " + t
	}
	return "a " + t
}

// requiredOf returns the properties s requires.
func requiredOf(s *structuralschema.Structural) []string {
	if s.ValueValidation == nil {
		return nil
	}
	return s.ValueValidation.Required
}
