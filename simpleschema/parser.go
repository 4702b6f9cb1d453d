package simpleschema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
)

// Parser reads the short schemas of one file: the fields of spec, status
// and types. It reports every problem through its Reader, and remembers
// where each field and marker is written.
type Parser struct {
	r     *yamlpos.Reader
	types map[string]*declared
	// pos holds where each field (by path) and each marker (by path, "|"
	// and name) is written.
	pos map[string]diag.Pos
	// stack is the declared types being resolved, for cycles.
	stack []string

	// ExpressionHint is the hint given when a field holds ${...} instead
	// of a type. Default: a schema declares types.
	ExpressionHint string
}

// declared is a type of the types: section.
type declared struct {
	key, node *yaml.Node
	path      string
	resolving bool
	done      bool
	// schema is nil when the declaration has errors (reported).
	schema *apiextensionsv1.JSONSchemaProps
	// required: the alias carries required=true, which every field of
	// this type inherits, as in kro.
	required bool
}

// NewParser returns a Parser that reads through r.
func NewParser(r *yamlpos.Reader) *Parser {
	return &Parser{r: r, types: map[string]*declared{}, pos: map[string]diag.Pos{}}
}

// Pos returns where the field at path is written: Object's path, a dot,
// and the field's names (schema.spec.ingress.enabled).
func (p *Parser) Pos(path string) (diag.Pos, bool) {
	pos, ok := p.pos[path]
	return pos, ok
}

// MarkerPos returns where a marker of the field at path is written.
func (p *Parser) MarkerPos(path, marker string) (diag.Pos, bool) {
	pos, ok := p.pos[path+"|"+marker]
	return pos, ok
}

// Types declares the types of a types: map (by name, each a map of fields
// or a field string) for the fields read after it, and reads every one, so
// that a mistake in a type nothing uses is reported too. path names the map
// in messages.
func (p *Parser) Types(n *yaml.Node, path string) {
	m := p.r.Map(n, path)
	if m == nil {
		return
	}
	for _, name := range m.Order {
		key := m.KeyNode(name)
		switch {
		case isBuiltin(name):
			p.r.Errorf(key, diag.InvalidValue, "choose another name", "%s: %s is a built-in type", yamlpos.Join(path, name), name)
			continue
		case !isTypeName(name):
			p.r.Errorf(key, diag.InvalidValue, "start with a letter; use letters, digits, _ and -", "%s: %q cannot name a type", path, name)
			continue
		}
		p.types[name] = &declared{key: key, node: m.Get(name), path: yamlpos.Join(path, name)}
	}
	names := make([]string, 0, len(p.types))
	for name := range p.types {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p.resolve(name)
	}
}

// DeclaredTypes lists the names Types declared, sorted.
func (p *Parser) DeclaredTypes() []string {
	out := make([]string, 0, len(p.types))
	for name := range p.types {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// resolve returns the schema of a declared type, a copy the caller may
// change. It returns nil when the type's declaration has errors or takes
// part in a cycle, both reported at the declaration.
func (p *Parser) resolve(name string) (*apiextensionsv1.JSONSchemaProps, bool) {
	d := p.types[name]
	switch {
	case d.done:
		if d.schema == nil {
			return nil, d.required
		}
		return d.schema.DeepCopy(), d.required
	case d.resolving:
		i := slices.Index(p.stack, name)
		cycle := append(slices.Clone(p.stack[i:]), name)
		first := p.types[cycle[0]]
		p.r.Errorf(first.key, diag.Cycle, "break the cycle: declare one of these types without the other, or as object", "types reference each other in a cycle: %s", strings.Join(cycle, " → "))
		for _, c := range cycle {
			p.types[c].done, p.types[c].schema = true, nil
		}
		return nil, false
	}
	d.resolving = true
	p.stack = append(p.stack, name)
	mark := p.r.Mark()
	var s *apiextensionsv1.JSONSchemaProps
	if n := yamlpos.Resolve(d.node); n != nil && n.Kind == yaml.MappingNode {
		s = p.Object(n, d.path)
	} else {
		alias := &apiextensionsv1.JSONSchemaProps{}
		s = p.field(d.node, d.path, name, alias)
		d.required = len(alias.Required) > 0
	}
	p.stack = p.stack[:len(p.stack)-1]
	d.resolving = false
	if d.done { // part of a cycle found below
		return nil, false
	}
	d.done = true
	if p.r.Mark() == mark {
		d.schema = s
	}
	return p.resolve(name)
}

// Object reads a map of fields into an object schema. path names it in
// messages and positions (schema.spec).
func (p *Parser) Object(n *yaml.Node, path string) *apiextensionsv1.JSONSchemaProps {
	p.pos[path] = p.r.Pos(p.r.Key(n))
	m := p.r.Map(n, path)
	if m == nil {
		return anything()
	}
	out := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	defaulted := false
	for _, name := range m.Order {
		fpath := yamlpos.Join(path, name)
		p.pos[fpath] = p.r.Pos(m.KeyNode(name))
		v := m.Get(name)
		var s *apiextensionsv1.JSONSchemaProps
		if v != nil && v.Kind == yaml.MappingNode {
			s = p.Object(v, fpath)
		} else {
			s = p.field(v, fpath, name, out)
		}
		defaulted = defaulted || s.Default != nil
		out.Properties[name] = *s
	}
	sort.Strings(out.Required)
	// An object whose fields have defaults is itself defaulted to {}, so
	// that they apply when it is left out, unless a field is required: {}
	// would then be invalid. kro does the same.
	if defaulted && len(out.Required) == 0 {
		out.Default = &apiextensionsv1.JSON{Raw: []byte("{}")}
	}
	return out
}

// anything is the schema of a field whose type could not be read: it takes
// a string or a number, and CEL reads it as dyn, so that one mistake is
// reported once, not again by every expression that reads the field.
func anything() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{XIntOrString: true}
}

func isBuiltin(name string) bool {
	_, ok := builtins[name]
	return ok
}

func ptr[T any](v T) *T { return &v }

// field reads a field string at n into a schema, adding name to
// parent.Required when it is required.
func (p *Parser) field(n *yaml.Node, path, name string, parent *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	n = yamlpos.Resolve(n)
	if n == nil || yamlpos.IsNull(n) {
		p.r.Errorf(p.r.Key(n), diag.MissingField, "write a type, such as string, or a map of fields", "%s has no type", path)
		return anything()
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		p.r.Errorf(n, diag.WrongType, "write a type, such as string | default=1, or a map of fields; quote types that start with [ ([]string)",
			"%s must be a type or a map of fields, not %s", path, yamlpos.Describe(n))
		return anything()
	}
	if strings.Contains(n.Value, "${") {
		hint := p.ExpressionHint
		if hint == "" {
			hint = "a schema declares types, such as string, not values"
		}
		p.r.Errorf(n, diag.InvalidValue, hint, "%s holds an expression, not a type", path)
		return anything()
	}
	f, errs := ParseField(n.Value)
	for _, e := range errs {
		p.r.Diags.Add(p.at(n, e.Offset), e.Code, e.Hint, "%s: %s", path, e.Msg)
	}
	if f.Type == nil {
		return anything()
	}
	s, required := p.typeSchema(f.Type, n, path)
	if s == nil {
		return anything()
	}
	a := &applier{p: p, n: n, path: path, s: s}
	for _, m := range f.Markers {
		p.pos[path+"|"+m.Name] = p.at(n, m.Offset)
		if a.apply(m) {
			required = true
		}
	}
	a.finish(f)
	if required {
		parent.Required = append(parent.Required, name)
	}
	return s
}

// typeSchema returns the schema of t, written at n, and whether a declared
// type makes the field required. It returns nil when t names nothing
// usable (reported).
func (p *Parser) typeSchema(t *Type, n *yaml.Node, path string) (*apiextensionsv1.JSONSchemaProps, bool) {
	switch t.Kind {
	case String, Integer, Boolean:
		return &apiextensionsv1.JSONSchemaProps{Type: builtinNames[t.Kind]}, false
	case Number:
		return &apiextensionsv1.JSONSchemaProps{Type: "number"}, false
	case Object:
		return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}, false
	case List, Map:
		elem, _ := p.typeSchema(t.Elem, n, path)
		if elem == nil {
			return nil, false
		}
		if t.Kind == List {
			return &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: elem}}, false
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: elem}}, false
	}
	if _, ok := p.types[t.Name]; !ok {
		p.r.Diags.Add(p.at(n, t.Offset), diag.UnknownType, UnknownTypeHint(t.Name, p.DeclaredTypes()), "%s: unknown type %s", path, t.Name)
		return nil, false
	}
	return p.resolve(t.Name)
}

// at returns the position of byte offset off in the string of scalar n:
// its column when n is written on one line as a plain or quoted scalar
// whose text is as the source spells it, else n's own position.
func (p *Parser) at(n *yaml.Node, off int) diag.Pos {
	pos := p.r.Pos(n)
	start := n.Column - 1
	switch n.Style {
	case 0:
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		start++
	default:
		return pos
	}
	line := p.r.Line(n.Line)
	if start < 0 || start+len(n.Value) > len(line) || line[start:start+len(n.Value)] != n.Value {
		return pos
	}
	pos.Col = start + off + 1
	return pos
}

// applier applies the markers of one field to its schema.
type applier struct {
	p    *Parser
	n    *yaml.Node
	path string
	s    *apiextensionsv1.JSONSchemaProps
}

func (a *applier) errorf(off int, hint, format string, args ...any) {
	a.p.r.Diags.Add(a.p.at(a.n, off), diag.InvalidValue, hint, "%s: "+format, append([]any{a.path}, args...)...)
}

// typeName names the field's type in messages.
func (a *applier) typeName() string {
	switch a.s.Type {
	case "array":
		return "a list"
	case "object":
		if a.s.AdditionalProperties != nil {
			return "a map"
		}
		return "an object"
	case "integer":
		return "an integer"
	case "number":
		return "a float"
	case "string", "boolean":
		return "a " + a.s.Type
	}
	return "untyped"
}

// only reports m when the field's type is none of types.
func (a *applier) only(m *Marker, what string, types ...string) bool {
	if slices.Contains(types, a.s.Type) {
		return true
	}
	a.errorf(m.Offset, "remove it", "%s applies to %s, and the field is %s", m.Name, what, a.typeName())
	return false
}

func (a *applier) boolean(m *Marker) (bool, bool) {
	switch m.Value {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	a.errorf(m.ValueOffset, "write true or false", "%s=%s is not a boolean", m.Name, m.Value)
	return false, false
}

func (a *applier) count(m *Marker) *int64 {
	v, err := strconv.ParseInt(m.Value, 10, 64)
	if err != nil || v < 0 {
		a.errorf(m.ValueOffset, "write a whole number, 0 or more", "%s=%s is not a count", m.Name, m.Value)
		return nil
	}
	return &v
}

func (a *applier) number(m *Marker) *float64 {
	v, err := strconv.ParseFloat(m.Value, 64)
	if err != nil {
		a.errorf(m.ValueOffset, "write a number, such as 0 or 1.5", "%s=%s is not a number", m.Name, m.Value)
		return nil
	}
	return &v
}

// apply applies m, and reports whether it makes the field required.
func (a *applier) apply(m *Marker) bool {
	s := a.s
	switch m.Name {
	case "required":
		v, _ := a.boolean(m)
		return v
	case "description":
		s.Description = m.Value
	case "default":
		if raw := a.value(m, m.Value, s, "default"); raw != nil {
			s.Default = &apiextensionsv1.JSON{Raw: raw}
		}
	case "enum":
		if !a.only(m, "strings, integers and floats", "string", "integer", "number") {
			return false
		}
		for _, v := range strings.Split(m.Value, ",") {
			v = strings.TrimSpace(v)
			if v == "" {
				a.errorf(m.ValueOffset, `write the values separated by commas, as in enum="a,b"`, "enum has an empty value")
				return false
			}
			raw := a.value(m, v, s, "enum value")
			if raw == nil {
				return false
			}
			s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: raw})
		}
	case "minimum", "maximum":
		if !a.only(m, "integers and floats", "integer", "number") {
			return false
		}
		if v := a.number(m); v != nil {
			if m.Name == "minimum" {
				s.Minimum = v
			} else {
				s.Maximum = v
			}
		}
	case "minLength", "maxLength":
		if !a.only(m, "strings", "string") {
			return false
		}
		if v := a.count(m); v != nil {
			if m.Name == "minLength" {
				s.MinLength = v
			} else {
				s.MaxLength = v
			}
		}
	case "pattern":
		if !a.only(m, "strings", "string") {
			return false
		}
		if _, err := regexp.Compile(m.Value); err != nil {
			a.errorf(m.ValueOffset, "", "pattern is not a regular expression: %v", err)
			return false
		}
		s.Pattern = m.Value
	case "minItems", "maxItems":
		if !a.only(m, "lists", "array") {
			return false
		}
		if v := a.count(m); v != nil {
			if m.Name == "minItems" {
				s.MinItems = v
			} else {
				s.MaxItems = v
			}
		}
	case "uniqueItems":
		if !a.only(m, "lists", "array") {
			return false
		}
		// The API server refuses uniqueItems: true in a CRD; a list of
		// type set means the same, as kro writes it.
		if v, ok := a.boolean(m); ok && v {
			a.listType(m, "set")
		}
	case "listType":
		if !a.only(m, "lists", "array") {
			return false
		}
		switch m.Value {
		case "atomic", "set", "map":
			a.listType(m, m.Value)
		default:
			a.errorf(m.ValueOffset, "write atomic, set or map", "listType=%s is not a list type", m.Value)
		}
	case "listMapKey":
		if !a.only(m, "lists", "array") {
			return false
		}
		if slices.Contains(s.XListMapKeys, m.Value) {
			a.errorf(m.Offset, "remove one of them", "listMapKey=%s is set twice", m.Value)
			return false
		}
		s.XListMapKeys = append(s.XListMapKeys, m.Value)
	case "immutable":
		if v, _ := a.boolean(m); v {
			s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: "self == oldSelf", Message: "field is immutable"})
		}
	case "validation":
		if strings.TrimSpace(m.Value) == "" {
			a.errorf(m.ValueOffset, `write a CEL rule over the field, as in validation="self > 0"`, "validation is empty")
			return false
		}
		s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: m.Value})
	}
	return false
}

// listType sets x-kubernetes-list-type, which uniqueItems=true and
// listType= must agree on.
func (a *applier) listType(m *Marker, t string) {
	if a.s.XListType != nil && *a.s.XListType != t {
		a.errorf(m.Offset, "keep one of them", "%s makes the list type %s, but it is already %s", m.Name+"="+m.Value, t, *a.s.XListType)
		return
	}
	a.s.XListType = ptr(t)
}

// finish checks what the markers say together.
func (a *applier) finish(f *Field) {
	s := a.s
	if k := f.Marker("listMapKey"); k != nil && (s.XListType == nil || *s.XListType != "map") {
		a.errorf(k.Offset, "add listType=map", "listMapKey needs listType=map")
	}
	a.checkListType(f)
	for _, pair := range []struct {
		lo, hi string
		bad    bool
	}{
		{"minimum", "maximum", s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum},
		{"minLength", "maxLength", s.MinLength != nil && s.MaxLength != nil && *s.MinLength > *s.MaxLength},
		{"minItems", "maxItems", s.MinItems != nil && s.MaxItems != nil && *s.MinItems > *s.MaxItems},
	} {
		if pair.bad {
			a.errorf(f.Marker(pair.lo).Offset, "", "%s is greater than %s", pair.lo, pair.hi)
		}
	}
	d := f.Marker("default")
	if d == nil || s.Default == nil {
		return
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e apiextensionsv1.JSON) bool { return string(e.Raw) == string(s.Default.Raw) }) {
		a.errorf(d.ValueOffset, "make it one of the enum values", "default %s is not one of enum", d.Value)
	}
	var v any
	_ = json.Unmarshal(s.Default.Raw, &v)
	switch t := v.(type) {
	case float64:
		if (s.Minimum != nil && t < *s.Minimum) || (s.Maximum != nil && t > *s.Maximum) {
			a.errorf(d.ValueOffset, "", "default %s is outside minimum and maximum", d.Value)
		}
	case string:
		if n := int64(len([]rune(t))); (s.MinLength != nil && n < *s.MinLength) || (s.MaxLength != nil && n > *s.MaxLength) {
			a.errorf(d.ValueOffset, "", "default %q is shorter than minLength or longer than maxLength", t)
		}
		if s.Pattern != "" {
			if rx, err := regexp.Compile(s.Pattern); err == nil && !rx.MatchString(t) {
				a.errorf(d.ValueOffset, "", "default %q does not match pattern", t)
			}
		}
	}
}

// checkListType checks what the API server requires of the items of a set
// or a map list.
func (a *applier) checkListType(f *Field) {
	s := a.s
	if s.XListType == nil || s.Items == nil || s.Items.Schema == nil {
		return
	}
	m := f.Marker("listType")
	if m == nil {
		m = f.Marker("uniqueItems")
	}
	items := s.Items.Schema
	scalar := func(t string) bool { return t == "string" || t == "integer" || t == "number" || t == "boolean" }
	switch *s.XListType {
	case "set":
		if !scalar(items.Type) {
			a.errorf(m.Offset, "use listType=map with listMapKey, or listType=atomic", "%s=%s needs items that are strings, numbers or booleans", m.Name, m.Value)
		}
	case "map":
		if items.Type != "object" || len(items.Properties) == 0 {
			a.errorf(m.Offset, "use listType=set or atomic", "listType=map needs items that are objects with fields")
			return
		}
		keys := 0
		for _, k := range f.Markers {
			if k.Name != "listMapKey" {
				continue
			}
			keys++
			p, ok := items.Properties[k.Value]
			switch {
			case !ok:
				a.errorf(k.ValueOffset, "name a field of the items", "listMapKey=%s is not a field of the items", k.Value)
			case !scalar(p.Type):
				a.errorf(k.ValueOffset, "name a field that is a string, a number or a boolean", "listMapKey=%s is not a scalar field", k.Value)
			case p.Default == nil && !slices.Contains(items.Required, k.Value):
				a.errorf(k.ValueOffset, "mark it required=true, or give it a default, in the items' type", "listMapKey=%s is neither required nor defaulted", k.Value)
			}
		}
		if keys == 0 {
			a.errorf(m.Offset, "add listMapKey=<field of the items>", "listType=map needs listMapKey")
		}
	}
}

// value returns the JSON of text as a value of the schema s (a default or
// an enum value), or nil when it is not one (reported at m's value).
func (a *applier) value(m *Marker, text string, s *apiextensionsv1.JSONSchemaProps, what string) []byte {
	bad := func(hint string) []byte {
		a.errorf(m.ValueOffset, hint, "%s %s is not %s", what, text, a.typeName())
		return nil
	}
	switch s.Type {
	case "string":
		raw, _ := json.Marshal(text)
		return raw
	case "integer":
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return bad("write a whole number")
		}
		return []byte(text)
	case "number":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return bad("write a number, such as 1.5")
		}
		raw, _ := json.Marshal(f)
		return raw
	case "boolean":
		if text != "true" && text != "false" {
			return bad("write true or false")
		}
		return []byte(text)
	case "array", "object":
		var v any
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			return bad(fmt.Sprintf("write it as JSON, such as %s", map[string]string{"array": `["a", "b"]`, "object": `{"key": "value"}`}[s.Type]))
		}
		v = jsonable(v)
		_, isList := v.([]any)
		_, isMap := v.(map[string]any)
		if (s.Type == "array" && !isList) || (s.Type == "object" && !isMap) {
			return bad(fmt.Sprintf("write it as JSON, such as %s", map[string]string{"array": `["a", "b"]`, "object": `{"key": "value"}`}[s.Type]))
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return bad("write it as JSON")
		}
		return raw
	}
	return nil // untyped: its type was reported
}

// jsonable turns what YAML decodes (maps with any keys) into what JSON
// encodes.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
	}
	return v
}
