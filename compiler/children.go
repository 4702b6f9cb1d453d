package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

var idRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// celReserved are identifiers CEL reserves; a child id must not be one.
var celReserved = map[string]bool{
	"in": true, "as": true, "break": true, "const": true, "continue": true, "else": true,
	"for": true, "function": true, "if": true, "import": true, "let": true, "loop": true,
	"package": true, "namespace": true, "return": true, "var": true, "void": true,
	"true": true, "false": true, "null": true, "while": true,
}

// misspeltSection returns the value of a key of top that is no section but
// a near miss of section (onReconcle), or nil. The key is reported as
// unknown, with the section's name; its children are read as the
// section's, so that what refers to them is not reported again and their
// own mistakes are found in the same run.
func misspeltSection(top *yamlpos.Map, section string) *yaml.Node {
	for _, k := range top.Order {
		if slices.Contains(topLevelFields, k) {
			continue
		}
		if near, ok := closest(k, topLevelFields); ok && near == section {
			return top.Get(k)
		}
	}
	return nil
}

func (d *decoder) children(top *yamlpos.Map) {
	seen := map[string]ir.Pos{}
	for _, phase := range []ir.Phase{ir.OnCreate, ir.OnReconcile} {
		n := top.Get(string(phase))
		if n == nil {
			n = misspeltSection(top, string(phase))
		}
		if n == nil || n.ShortTag() == "!!null" {
			continue
		}
		if n.Kind != yaml.SequenceNode {
			d.add(d.Pos(n), diag.WrongType, "write a list of children, each starting with - id:", "%s must be a list, not %s", phase, describe(n))
			continue
		}
		for i, item := range n.Content {
			child := d.child(item, phase, i)
			if child == nil || child.ID == "" {
				continue
			}
			if first, dup := seen[child.ID]; dup {
				d.add(child.Pos, diag.DuplicateID, "give each child its own id", "duplicate id %q, first used at %s", child.ID, first)
				continue
			}
			seen[child.ID] = child.Pos
			d.bp.Children = append(d.bp.Children, child)
		}
	}
}

func (d *decoder) child(n *yaml.Node, phase ir.Phase, index int) *ir.Child {
	path := string(phase) + "[" + itoa(index) + "]"
	o := d.Map(n, path)
	if o == nil {
		return nil
	}
	d.Only(o, "id", "template", "externalRef", "includeWhen", "readyWhen", "forEach", "go")
	child := &ir.Child{Phase: phase, Pos: d.Pos(n)}
	id, idNode := d.String(o, "id", true)
	if id != "" {
		child.Pos = d.Pos(idNode)
		switch {
		case id == "self" || id == ir.Each:
			d.add(child.Pos, diag.InvalidID, "choose another id", "id %q is reserved for the custom resource", id)
		case !idRE.MatchString(id):
			d.add(child.Pos, diag.InvalidID, "use a lower-camel-case identifier such as "+suggestID(id), "id %q is not an identifier expressions can use", id)
		case celReserved[id]:
			d.add(child.Pos, diag.InvalidID, "choose another id", "id %q is a reserved word in CEL", id)
		default:
			child.ID = id
		}
	}
	path = string(phase) + "[" + orIndex(id, index) + "]"

	tmpl, ref := o.Get("template"), o.Get("externalRef")
	switch {
	case tmpl != nil && ref != nil:
		d.add(d.Pos(o.KeyNode("externalRef")), diag.InvalidValue, "keep one: a template to apply, or an externalRef to read", "a child has either template or externalRef, not both")
	case tmpl == nil && ref == nil:
		d.add(d.Pos(n), diag.MissingField, "add template: with the object to apply", "%s.template is required", path)
		return child
	case ref != nil:
		child.External = true
		tmpl = ref
	}
	if child.External && phase == ir.OnCreate {
		d.add(d.Pos(o.KeyNode("externalRef")), diag.InvalidValue, "move it to onReconcile", "an externalRef is read on every reconcile; it cannot be onCreate")
	}
	field := "template"
	if child.External {
		field = "externalRef"
	}
	child.Template = d.value(tmpl)
	child.Selector = child.External && child.Template.Lookup("metadata").Lookup("selector") != nil
	d.resolveKind(child, join(path, field))

	for _, f := range []struct {
		key string
		dst **ir.Expr
	}{{"includeWhen", &child.IncludeWhen}, {"readyWhen", &child.ReadyWhen}} {
		v := o.Get(f.key)
		if v == nil {
			continue
		}
		*f.dst = d.condition(v, path+"."+f.key)
	}
	if fe := o.Get("forEach"); fe != nil {
		child.ForEach = d.forEach(fe, path+".forEach")
		if child.External {
			d.add(d.Pos(o.KeyNode("forEach")), diag.InvalidValue, "an externalRef names one object to read", "%s: an externalRef cannot have forEach", path)
		}
	}
	if child.Selector && child.ReadyWhen != nil {
		d.add(child.ReadyWhen.Pos, diag.InvalidValue, "test the objects it reads in the includeWhen or readyWhen of what reads them",
			"%s: an externalRef by selector reads a list, which has no readiness", path)
	}
	if g := o.Get("go"); g != nil {
		if child.External {
			d.add(d.Pos(o.KeyNode("go")), diag.InvalidValue, "remove it: nothing is applied for an externalRef", "%s: an externalRef has no transform", path)
		}
		child.Transform = d.goRef(g, path+".go", "transform", components.Transform)
	}
	return child
}

func suggestID(id string) string {
	var b strings.Builder
	up := false
	for _, r := range id {
		switch {
		case r == '-' || r == '_' || r == '.' || r == ' ':
			up = b.Len() > 0
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		case b.Len() == 0:
			b.WriteString(strings.ToLower(string(r)))
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || !idRE.MatchString(b.String()) {
		return "deployment"
	}
	return b.String()
}

func orIndex(id string, i int) string {
	if id != "" {
		return id
	}
	return itoa(i)
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// resolveKind reads apiVersion and kind from a child's template and finds
// out whether the kind is built in or the Blueprint's own CRD.
func (d *decoder) resolveKind(child *ir.Child, path string) {
	t := child.Template
	if t.Kind != ir.Map {
		d.add(t.Pos, diag.WrongType, "", "%s must be a map", path)
		return
	}
	av, kind := t.Lookup("apiVersion"), t.Lookup("kind")
	avs, ok1 := literalString(av)
	ks, ok2 := literalString(kind)
	if av == nil {
		d.add(t.Pos, diag.MissingField, "add apiVersion, e.g. apps/v1", "%s.apiVersion is required", path)
	} else if !ok1 {
		d.add(av.Pos, diag.InvalidValue, "write the apiVersion literally; RBAC and watches are derived from it", "%s.apiVersion must be a literal string", path)
	}
	if kind == nil {
		d.add(t.Pos, diag.MissingField, "add kind, e.g. Deployment", "%s.kind is required", path)
	} else if !ok2 {
		d.add(kind.Pos, diag.InvalidValue, "write the kind literally; RBAC and watches are derived from it", "%s.kind must be a literal string", path)
	}
	md := t.Lookup("metadata")
	switch {
	case child.Selector && md.Lookup("name") != nil:
		pos := md.Pos
		for _, f := range md.Fields {
			if f.Key == "selector" {
				pos = f.KeyPos
			}
		}
		d.add(pos, diag.InvalidValue, "keep one: metadata.name reads one object, metadata.selector every object whose labels match",
			"%s.metadata has both name and selector", path)
	case child.Selector:
	case md == nil || md.Lookup("name") == nil:
		hint := "add metadata.name, e.g. ${self.metadata.name}"
		if child.External {
			hint = "add metadata.name to read one object, or metadata.selector to read every object whose labels match"
		}
		d.add(t.Pos, diag.MissingField, hint, "%s.metadata.name is required", path)
	}
	if !ok1 || !ok2 {
		return
	}
	gv, err := schema.ParseGroupVersion(avs)
	if err != nil {
		d.add(av.Pos, diag.InvalidValue, "", "%s.apiVersion %q: %v", path, avs, err)
		return
	}
	child.GroupVersionKind = gv.WithKind(ks)
	k, ok := d.lookupKind(child.GroupVersionKind)
	if !ok {
		if release, removed := removedBuiltin(child.GroupVersionKind); removed {
			// client-go still knows it; no API server serves it.
			hint := "no version of " + ks + " is served any longer"
			if versions := builtinVersions(ks); len(versions) > 0 {
				hint = "use apiVersion " + strings.Join(versions, " or ")
			}
			d.add(av.Pos, diag.UnknownKind, hint, "%s: %s %s was removed in Kubernetes %s", path, avs, ks, release)
			return
		}
		if !d.brokenUse { // else a broken entry of uses may have been meant
			d.add(kind.Pos, diag.UnknownKind, d.kindHint(gv.Group, ks), "%s: kind %s %s is neither built in, the Blueprint's CRD, nor a kind it uses", path, avs, ks)
		}
		return
	}
	child.BuiltIn = k.builtIn
	child.Plural = k.plural
	child.Namespaced = k.namespaced
}

// builtinGroup reports whether group is an API group of built-in kinds,
// in a version served or not.
func builtinGroup(group string) bool {
	for gvk := range builtin.Scheme.AllKnownTypes() {
		if gvk.Group == group {
			return true
		}
	}
	return false
}

// knownKind is what the compiler knows of a kind a Blueprint writes.
type knownKind struct {
	plural     string
	namespaced bool
	builtIn    bool
}

// lookupKind finds a kind: the Blueprint's own, one it uses, or a built-in
// one.
func (d *decoder) lookupKind(gvk schema.GroupVersionKind) (knownKind, bool) {
	if r := d.bp.Resource; gvk == r.GroupVersionKind {
		return knownKind{plural: r.Plural, namespaced: r.Namespaced}, true
	}
	if u := d.bp.Use(gvk); u != nil {
		return knownKind{plural: u.Plural, namespaced: u.Namespaced}, true
	}
	if b, ok := lookupBuiltin(gvk); ok {
		return knownKind{plural: b.plural, namespaced: b.namespaced, builtIn: true}, true
	}
	return knownKind{}, false
}

// kindHint says what an unknown kind could have been.
func (d *decoder) kindHint(group, kind string) string {
	if versions := builtinVersions(kind); len(versions) > 0 {
		builtIn := "built-in " + kind + " is served as apiVersion " + strings.Join(versions, " or ")
		if builtinGroup(group) {
			return builtIn
		}
		// An operator's kind of the same name: ACK's IAM Role, say.
		return "a " + kind + " of group " + group + " is another operator's: name its CRD in uses (crd: its manifest); " + builtIn
	}
	if kind == d.bp.Resource.Kind && group != d.bp.Resource.Group {
		return "the Blueprint's own " + kind + " is " + ir.FormatKind(d.bp.Resource.GroupVersionKind) +
			"; a " + kind + " of group " + group + " is another operator's: name its CRD in uses (crd: its manifest)"
	}
	known := append(builtinKindNames(), d.bp.Resource.Kind)
	for _, u := range d.bp.Uses {
		if u.Group == group && u.Kind == kind {
			return "uses serves " + kind + " as apiVersion " + u.GroupVersion().String()
		}
		known = append(known, u.Kind)
	}
	if s, ok := closest(kind, known); ok {
		return "did you mean kind " + s + "?"
	}
	return "a kind must be built into Kubernetes, be the Blueprint's CRD (" + ir.FormatKind(d.bp.Resource.GroupVersionKind) +
		"), or be named in uses: another Blueprint (blueprint: its file) or an operator's CRD (crd: its manifest)"
}

func literalString(v *ir.Value) (string, bool) {
	if v == nil || v.Kind != ir.Literal {
		return "", false
	}
	s, ok := v.Literal.(string)
	return s, ok && s != ""
}

// condition reads includeWhen or readyWhen: one ${...}, or, as kro writes
// them, a list of them that must all hold. A list becomes one expression,
// (a) && (b), checked part by part first so that a mistake points at its
// own line.
func (d *decoder) condition(n *yaml.Node, path string) *ir.Expr {
	if n.Kind != yaml.SequenceNode {
		val := d.value(n)
		if val.Kind != ir.Expression {
			d.add(val.Pos, diag.WrongType, "write ${...} around a boolean expression", "%s must be one ${...} expression, or a list of them", path)
			return nil
		}
		return val.Expr
	}
	var parts []*ir.Expr
	for i, item := range n.Content {
		val := d.value(item)
		if val.Kind != ir.Expression {
			d.add(val.Pos, diag.WrongType, "write ${...} around a boolean expression", "%s[%d] must be one ${...} expression", path, i)
			continue
		}
		parts = append(parts, val.Expr)
	}
	switch len(parts) {
	case 0:
		if len(n.Content) == 0 {
			d.add(d.Pos(n), diag.MissingField, "give at least one ${...}, or leave the field out", "%s is an empty list", path)
		}
		return nil
	case 1:
		return parts[0]
	}
	srcs := make([]string, len(parts))
	for i, p := range parts {
		srcs[i] = "(" + p.Source + ")"
	}
	all := &ir.Expr{Source: strings.Join(srcs, " && "), Pos: parts[0].Pos}
	d.parts[all] = parts
	return all
}

// forEach reads a collection's iterators, as kro writes them: a list of
// single-entry maps, each binding a name to a ${...} list (or map, whose
// keys are its items).
func (d *decoder) forEach(n *yaml.Node, path string) []*ir.Iterator {
	items := d.List(n, path)
	if len(items) == 0 && n.Kind == yaml.SequenceNode {
		d.add(d.Pos(n), diag.MissingField, "bind a name to a list, such as - worker: ${self.spec.workers}", "%s is an empty list", path)
	}
	var out []*ir.Iterator
	seen := map[string]bool{}
	for i, item := range items {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		m := d.Map(item, ipath)
		if m == nil {
			continue
		}
		if len(m.Order) != 1 {
			d.add(d.Pos(item), diag.InvalidValue, "write one name and its list per item, such as - worker: ${self.spec.workers}", "%s binds %d names, not one", ipath, len(m.Order))
			continue
		}
		name := m.Order[0]
		key := m.KeyNode(name)
		switch {
		case !idRE.MatchString(name) || celReserved[name]:
			d.add(d.Pos(key), diag.InvalidID, "use a lower-camel-case identifier", "%s: %q cannot name an item in expressions", ipath, name)
			continue
		case name == "self" || name == ir.Each:
			d.add(d.Pos(key), diag.InvalidID, "choose another name", "%s: %q is reserved", ipath, name)
			continue
		case seen[name]:
			d.add(d.Pos(key), diag.InvalidID, "give each iterator its own name", "%s: %q is bound twice", ipath, name)
			continue
		}
		seen[name] = true
		val := d.value(m.Get(name))
		if val.Kind != ir.Expression {
			d.add(val.Pos, diag.WrongType, "write ${...} around a list, such as ${self.spec.workers}", "%s.%s must be one ${...} expression", ipath, name)
			continue
		}
		out = append(out, &ir.Iterator{Pos: d.Pos(key), Name: name, Items: val.Expr})
	}
	return out
}
