package simpleschema

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/suggest"
)

// Kind is what a Type is.
type Kind int

const (
	// Named is a type the types: section declares.
	Named Kind = iota
	String
	Integer
	Boolean
	// Number is a floating-point number: float in kro's spelling, number in
	// OpenAPI's.
	Number
	// Object is any object, kept as written (x-kubernetes-preserve-unknown-fields).
	Object
	// List is []Elem.
	List
	// Map is map[string]Elem.
	Map
)

// Type is the type part of a field string.
type Type struct {
	Kind Kind
	// Elem is the item type of a List and the value type of a Map.
	Elem *Type
	// Name is a Named type's name.
	Name string
	// Offset is where the type (the name, for a List or Map of one) starts
	// in the field string.
	Offset int
}

// String spells t as a field string would.
func (t *Type) String() string {
	switch t.Kind {
	case List:
		return "[]" + t.Elem.String()
	case Map:
		return "map[string]" + t.Elem.String()
	case Named:
		return t.Name
	}
	return builtinNames[t.Kind]
}

// builtinNames are the types every schema knows, by kind; float and number
// are both Number.
var builtinNames = map[Kind]string{String: "string", Integer: "integer", Boolean: "boolean", Number: "float", Object: "object"}

var builtins = map[string]Kind{"string": String, "integer": Integer, "boolean": Boolean, "float": Number, "number": Number, "object": Object}

// BuiltinTypes lists the type names every schema knows, as hints name them.
var BuiltinTypes = []string{"string", "integer", "boolean", "float", "number", "object"}

// otherNames are what other languages call a built-in type.
var otherNames = map[string]string{
	"int": "integer", "int32": "integer", "int64": "integer", "long": "integer",
	"bool": "boolean", "str": "string", "text": "string",
	"double": "float", "float64": "float", "decimal": "float",
	"map": "map[string]T", "dict": "map[string]T", "any": "object", "interface{}": "object", "array": "[]T", "list": "[]T",
}

// maxDepth bounds nesting such as [][][]string, as kro does.
const maxDepth = 16

// Marker is one name=value after a field's "|".
type Marker struct {
	Name string
	// Value is the value with its quotes removed and its escapes resolved.
	Value string
	// Offset is where the name starts in the field string; ValueOffset where
	// the value does.
	Offset, ValueOffset int
}

// Markers are kro's, in the order its documentation lists them.
var Markers = []string{"required", "default", "description", "enum", "minimum", "maximum", "immutable", "pattern",
	"minLength", "maxLength", "uniqueItems", "minItems", "maxItems", "listType", "listMapKey", "validation"}

// Field is a parsed field string.
type Field struct {
	Type    *Type
	Markers []*Marker
}

// Marker returns the marker called name, or nil.
func (f *Field) Marker(name string) *Marker {
	for _, m := range f.Markers {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Error is a problem at a byte offset of a field string.
type Error struct {
	Offset int
	Code   diag.Code
	Msg    string
	Hint   string
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("%d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("%d: %s; %s", e.Offset, e.Msg, e.Hint)
}

// ParseField parses a field string: a type, then optionally "|" and
// space-separated markers. It reports every problem it finds; the Field
// holds what could be read (a nil Type when the type could not).
func ParseField(s string) (*Field, []*Error) {
	p := &fieldParser{src: s}
	typePart, markerPart, hasMarkers := strings.Cut(s, "|")
	f := &Field{Type: p.parseType(typePart, 0, 0)}
	if hasMarkers {
		f.Markers = p.parseMarkers(markerPart, len(typePart)+1)
	}
	return f, p.errs
}

type fieldParser struct {
	src  string
	errs []*Error
}

func (p *fieldParser) errorf(off int, code diag.Code, hint, format string, args ...any) {
	p.errs = append(p.errs, &Error{Offset: off, Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// parseType parses s, which starts at off in the field string.
func (p *fieldParser) parseType(s string, off, depth int) *Type {
	trimmed := strings.TrimLeftFunc(s, unicode.IsSpace)
	off += len(s) - len(trimmed)
	s = strings.TrimRightFunc(trimmed, unicode.IsSpace)
	switch {
	case s == "":
		if depth == 0 {
			p.errorf(off, diag.InvalidValue, "write one of "+strings.Join(BuiltinTypes, ", ")+", []T, map[string]T or a type of types:", "the field has no type")
		} else {
			p.errorf(off, diag.InvalidValue, "write the item type, as in []string or map[string]integer", "%q has no item type", p.src[:off])
		}
		return nil
	case depth > maxDepth:
		p.errorf(off, diag.InvalidValue, "", "the type nests more than %d levels deep", maxDepth)
		return nil
	}
	if k, ok := builtins[s]; ok {
		return &Type{Kind: k, Offset: off}
	}
	if elem, ok := strings.CutPrefix(s, "[]"); ok {
		e := p.parseType(elem, off+2, depth+1)
		if e == nil {
			return nil
		}
		return &Type{Kind: List, Elem: e, Offset: off}
	}
	if strings.HasPrefix(s, "map[") {
		value, ok := strings.CutPrefix(s, "map[string]")
		if !ok {
			p.errorf(off, diag.InvalidValue, "write map[string]T: the keys of a Kubernetes object are strings", "map keys must be strings in %q", s)
			return nil
		}
		e := p.parseType(value, off+len("map[string]"), depth+1)
		if e == nil {
			return nil
		}
		return &Type{Kind: Map, Elem: e, Offset: off}
	}
	if !isTypeName(s) {
		hint := "a type is one of " + strings.Join(BuiltinTypes, ", ") + ", []T, map[string]T or a name declared in types:"
		if strings.ContainsAny(s, " \t") {
			hint = "put the markers after a |, as in: string | default=x"
		}
		p.errorf(off, diag.InvalidValue, hint, "%q is not a type", s)
		return nil
	}
	return &Type{Kind: Named, Name: s, Offset: off}
}

// isTypeName reports whether s can name a declared type: letters, digits,
// _ and -, starting with a letter.
func isTypeName(s string) bool {
	for i, r := range s {
		switch {
		case unicode.IsLetter(r), r == '_':
		case i > 0 && (unicode.IsDigit(r) || r == '-'):
		default:
			return false
		}
	}
	return s != ""
}

// UnknownTypeHint says what a type name that names nothing probably meant,
// among the built-in types and declared.
func UnknownTypeHint(name string, declared []string) string {
	if other, ok := otherNames[strings.ToLower(name)]; ok {
		return "write " + other
	}
	if s, ok := suggest.Closest(name, append(slices.Clone(BuiltinTypes), declared...)); ok {
		return "did you mean " + s + "?"
	}
	known := strings.Join(BuiltinTypes, ", ")
	if len(declared) > 0 {
		known += "; declared: " + strings.Join(declared, ", ")
	}
	return "known types: " + known + ", []T, map[string]T"
}

// parseMarkers scans name=value markers separated by spaces, after kro's
// ParseMarkers: a value may be quoted ("a b", with \" and \\ escapes) or
// hold brackets ({"a": 1}, [1, 2]) whose spaces do not separate markers.
// s starts at off in the field string.
func (p *fieldParser) parseMarkers(s string, off int) []*Marker {
	var out []*Marker
	i := 0
	for i < len(s) {
		for i < len(s) && unicode.IsSpace(rune(s[i])) {
			i++
		}
		if i == len(s) {
			break
		}
		start := i
		for i < len(s) && s[i] != '=' && !unicode.IsSpace(rune(s[i])) {
			i++
		}
		name := s[start:i]
		if i == len(s) || s[i] != '=' {
			p.errorf(off+start, diag.InvalidValue, "write name=value, as in default=1; markers are separated by spaces", "marker %q has no value", name)
			continue
		}
		i++ // '='
		vstart := i
		value, end, ok := p.scanValue(s, i, off)
		i = end
		if name == "" {
			p.errorf(off+start, diag.InvalidValue, "write name=value, as in default=1", "a marker has no name")
			continue
		}
		if !slices.Contains(Markers, name) {
			hint := "known markers: " + strings.Join(Markers, ", ")
			if c, found := suggest.Closest(name, Markers); found {
				hint = "did you mean " + c + "?"
			}
			p.errorf(off+start, diag.UnknownField, hint, "unknown marker %s", name)
			continue
		}
		if !ok {
			continue
		}
		if name != "listMapKey" && slices.ContainsFunc(out, func(m *Marker) bool { return m.Name == name }) {
			p.errorf(off+start, diag.InvalidValue, "remove one of them", "marker %s is set twice", name)
			continue
		}
		out = append(out, &Marker{Name: name, Value: value, Offset: off + start, ValueOffset: off + vstart})
	}
	return out
}

// scanValue reads the value starting at s[i]: up to the next space outside
// quotes and brackets. It returns the value, unquoted when it is quoted as
// a whole, where it ends, and false when it is malformed (reported).
func (p *fieldParser) scanValue(s string, i, off int) (string, int, bool) {
	start, quoteAt := i, -1
	inQuotes, escaped := false, false
	depth := 0
scan:
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case inQuotes && c == '\\':
			escaped = true
		case c == '"':
			inQuotes = !inQuotes
			if inQuotes {
				quoteAt = i
			}
		case inQuotes:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth < 0 {
				p.errorf(off+i, diag.InvalidValue, "", "%q closes a bracket that was not opened", string(c))
				return "", skipToSpace(s, i), false
			}
		case depth == 0 && unicode.IsSpace(rune(c)):
			break scan
		}
	}
	raw := s[start:i]
	switch {
	case inQuotes:
		p.errorf(off+quoteAt, diag.InvalidValue, `close it with "`, "the quote opened here is not closed")
		return "", i, false
	case depth > 0:
		p.errorf(off+start, diag.InvalidValue, "close every { and [", "a bracket opened in this value is not closed")
		return "", i, false
	case raw == "":
		p.errorf(off+start, diag.InvalidValue, `write a value after =; "" is the empty string`, "the marker has no value")
		return "", i, false
	case len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"':
		return unescape(raw[1 : len(raw)-1]), i, true
	}
	return raw, i, true
}

// unescape resolves \" and \\ in a quoted value, and keeps any other
// backslash as written (\d in a pattern), as kro does.
func unescape(s string) string {
	var b strings.Builder
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			if r != '"' && r != '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		default:
			b.WriteRune(r)
		}
	}
	if escaped {
		b.WriteByte('\\')
	}
	return b.String()
}

func skipToSpace(s string, i int) int {
	for i < len(s) && !unicode.IsSpace(rune(s[i])) {
		i++
	}
	return i
}
