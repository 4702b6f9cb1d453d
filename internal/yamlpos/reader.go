package yamlpos

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/suggest"
)

// Reader reads the YAML of one file, adding every problem to Diags.
type Reader struct {
	// File names the file in positions.
	File string
	// What names the file in messages, as in "the Blueprint is empty".
	// Default: "the file".
	What string
	// Diags receives every problem found.
	Diags *diag.List

	// Tags are local YAML tags Value reads, and what each makes of its
	// node: nil for a scalar, the items of a list (!contains [a, b]).
	Tags map[string]func(items []any) any

	lines []string
	// keys maps a mapping's value node to its key node, for problems that
	// concern a field as a whole rather than its value.
	keys map[*yaml.Node]*yaml.Node
}

// NewReader returns a Reader of file that adds its problems to diags.
func NewReader(file string, diags *diag.List) *Reader {
	return &Reader{File: file, What: "the file", Diags: diags, keys: map[*yaml.Node]*yaml.Node{}}
}

// Parse decodes src, which must hold exactly one YAML document, and returns
// its root node. It returns nil, with the problem reported, when src is
// not YAML or is empty; emptyHint says what to start an empty file with.
func (r *Reader) Parse(src []byte, emptyHint string) *yaml.Node {
	r.lines = strings.Split(string(src), "\n")
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			r.Diags.Add(r.at(1, 1), diag.MissingField, emptyHint, "%s is empty", r.What)
			return nil
		}
		pos, hint := SyntaxErrorPos(r.File, src, err)
		r.Diags.Add(pos, diag.InvalidYAML, hint, "%s", SyntaxErrorMsg(err))
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		r.Diags.Add(r.at(extra.Line, extra.Column), diag.InvalidYAML, "put each document in a file of its own", "%s is one YAML document, not several", r.What)
	}
	// Decoding applies yaml's limit on alias expansion, which walking the
	// node tree would not.
	var probe any
	if err := doc.Decode(&probe); err != nil && strings.Contains(err.Error(), "excessive aliasing") {
		r.Diags.Add(r.at(1, 1), diag.InvalidYAML, "write the repeated parts out, or alias less", "invalid YAML: document contains excessive aliasing")
		return nil
	}
	if len(doc.Content) == 0 {
		r.Diags.Add(r.at(1, 1), diag.MissingField, emptyHint, "%s is empty", r.What)
		return nil
	}
	return doc.Content[0]
}

// Line returns line n (1-based) of the parsed source, or "".
func (r *Reader) Line(n int) string {
	if n < 1 || n > len(r.lines) {
		return ""
	}
	return r.lines[n-1]
}

func (r *Reader) at(line, col int) diag.Pos {
	if line < 1 {
		line, col = 1, 1
	}
	return diag.Pos{File: r.File, Line: line, Col: col}
}

// Pos returns the position of n; the file alone when n is nil.
func (r *Reader) Pos(n *yaml.Node) diag.Pos {
	if n == nil {
		return diag.Pos{File: r.File}
	}
	return diag.Pos{File: r.File, Line: n.Line, Col: n.Column}
}

// Errorf reports a problem at n.
func (r *Reader) Errorf(n *yaml.Node, code diag.Code, hint, format string, args ...any) {
	r.Diags.Add(r.Pos(n), code, hint, format, args...)
}

// Mark returns how many problems have been reported so far, for Label.
func (r *Reader) Mark() int { return len(*r.Diags) }

// Label prefixes "label: " to the message of every problem reported since
// mark: the entry they concern, such as `case "scale"`, when their paths
// are relative to it.
func (r *Reader) Label(mark int, label string) {
	for _, d := range (*r.Diags)[mark:] {
		d.Msg = label + ": " + d.Msg
	}
}

// Key returns the key node of a value read through Map, or v itself.
func (r *Reader) Key(v *yaml.Node) *yaml.Node {
	if k, ok := r.keys[v]; ok {
		return k
	}
	return v
}

// Map is a YAML mapping being read: its fields by key, in source order,
// and the path that names it in messages.
type Map struct {
	Node *yaml.Node
	Path string
	// Order lists the keys in source order.
	Order  []string
	keys   map[string]*yaml.Node
	values map[string]*yaml.Node
}

// Get returns the value node of key (aliases resolved), or nil. It is safe
// on a nil Map.
func (m *Map) Get(key string) *yaml.Node {
	if m == nil {
		return nil
	}
	return m.values[key]
}

// KeyNode returns the key node of key, or nil.
func (m *Map) KeyNode(key string) *yaml.Node {
	if m == nil {
		return nil
	}
	return m.keys[key]
}

// Has reports whether key is set.
func (m *Map) Has(key string) bool { return m.Get(key) != nil }

// Map reads n as a mapping. A null node is an empty mapping; any other
// kind of node is reported as WrongType and gives nil. A key set twice is
// reported once and its first value kept.
func (r *Reader) Map(n *yaml.Node, path string) *Map {
	n = Resolve(n)
	m := &Map{Node: n, Path: path, keys: map[string]*yaml.Node{}, values: map[string]*yaml.Node{}}
	if n == nil || n.Kind != yaml.MappingNode {
		if IsNull(n) {
			return m
		}
		r.Errorf(n, diag.WrongType, "", "%s must be a map, not %s", DisplayPath(path), Describe(n))
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, dup := m.keys[k.Value]; dup {
			r.Errorf(k, diag.InvalidValue, "remove one of them", "%s is set twice", Join(path, k.Value))
			continue
		}
		v := Resolve(n.Content[i+1])
		m.keys[k.Value] = k
		m.values[k.Value] = v
		m.Order = append(m.Order, k.Value)
		r.keys[v] = k
	}
	return m
}

// Only reports every field of m that is not in allowed, with the closest
// allowed name as a hint. It is safe on a nil Map.
func (r *Reader) Only(m *Map, allowed ...string) {
	r.OnlyWith(m, nil, allowed...)
}

// OnlyWith is Only with hints of its own for some unknown fields: what
// people used to another format write there, and what to write instead.
func (r *Reader) OnlyWith(m *Map, hints map[string]string, allowed ...string) {
	if m == nil {
		return
	}
	ok := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		ok[a] = true
	}
	for _, k := range m.Order {
		if ok[k] {
			continue
		}
		hint := "known fields: " + strings.Join(allowed, ", ")
		if h, ok := hints[k]; ok {
			hint = h
		} else if s, found := suggest.Closest(k, allowed); found {
			hint = "did you mean " + Join(m.Path, s) + "?"
		}
		r.Errorf(m.keys[k], diag.UnknownField, hint, "unknown field %s", Join(m.Path, k))
	}
}

// String reads the string field key of m. A missing (or null or empty)
// required field is reported at the mapping, or at the field when it is
// there but empty. It returns the value and its node, which is nil when
// the field is absent.
func (r *Reader) String(m *Map, key string, required bool) (string, *yaml.Node) {
	return r.str(m, key, required, "")
}

// Required reads the required string field key of m as String does, with
// hint on what to write when it is missing or empty.
func (r *Reader) Required(m *Map, key, hint string) (string, *yaml.Node) {
	return r.str(m, key, true, hint)
}

func (r *Reader) str(m *Map, key string, required bool, hint string) (string, *yaml.Node) {
	if m == nil {
		return "", nil
	}
	n := m.Get(key)
	if n == nil || IsNull(n) {
		if required {
			r.Errorf(m.Node, diag.MissingField, hint, "%s is required", Join(m.Path, key))
		}
		return "", n
	}
	s, ok := r.Str(n, Join(m.Path, key))
	if ok && required && s == "" {
		r.Errorf(n, diag.MissingField, hint, "%s must not be empty", Join(m.Path, key))
	}
	return s, n
}

// Str reads n as a string; anything else is reported as WrongType.
func (r *Reader) Str(n *yaml.Node, path string) (string, bool) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		r.Errorf(n, diag.WrongType, "", "%s must be a string, not %s", DisplayPath(path), Describe(n))
		return "", false
	}
	return n.Value, true
}

// Bool reads n as true or false.
func (r *Reader) Bool(n *yaml.Node, path string) (bool, bool) {
	n = Resolve(n)
	var b bool
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		r.Errorf(n, diag.WrongType, "write true or false", "%s must be a boolean, not %s", DisplayPath(path), Describe(n))
		return false, false
	}
	return b, true
}

// Int reads n as a 64-bit integer.
func (r *Reader) Int(n *yaml.Node, path string) (int64, bool) {
	n = Resolve(n)
	var i int64
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		r.Errorf(n, diag.WrongType, "", "%s must be an integer, not %s", DisplayPath(path), Describe(n))
		return 0, false
	}
	return i, true
}

// Duration reads n as a positive Go duration such as 30s.
// Anything but a string, such as the integer 30, is reported as WrongType
// with the same hint.
func (r *Reader) Duration(n *yaml.Node, path string) time.Duration {
	const hint = "write a Go duration such as 30s, 2m or 1m30s"
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		r.Errorf(n, diag.WrongType, hint, "%s must be a string, not %s", DisplayPath(path), Describe(n))
		return 0
	}
	s := n.Value
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		r.Errorf(n, diag.InvalidValue, hint, "%s %q is not a positive duration", DisplayPath(path), s)
		return 0
	}
	return d
}

// Date reads n as a calendar day, 2006-01-02, which YAML may have as a
// timestamp or a string; it returns midnight UTC of that day.
func (r *Reader) Date(n *yaml.Node, path string) (time.Time, bool) {
	const hint = "write a date as YYYY-MM-DD, such as 2027-06-30"
	n = Resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
		r.Errorf(n, diag.WrongType, hint, "%s must be a date, not %s", DisplayPath(path), Describe(n))
		return time.Time{}, false
	}
	t, err := time.Parse(time.DateOnly, n.Value)
	if err != nil {
		r.Errorf(n, diag.InvalidValue, hint, "%s %q is not a date", DisplayPath(path), n.Value)
		return time.Time{}, false
	}
	return t, true
}

// List returns the items of a sequence; nil and null are an empty list,
// anything else is reported as WrongType.
func (r *Reader) List(n *yaml.Node, path string) []*yaml.Node {
	n = Resolve(n)
	if n == nil || IsNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		r.Errorf(n, diag.WrongType, "", "%s must be a list, not %s", DisplayPath(path), Describe(n))
		return nil
	}
	return n.Content
}

// Object reads a mapping of any content (a Kubernetes object, a patch, a
// partial match) as JSON decoding would, with integers as int64 as
// Kubernetes' own decoding has them. It returns nil, reported, for
// anything else.
func (r *Reader) Object(n *yaml.Node, path string) map[string]any {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		r.Errorf(n, diag.WrongType, "", "%s must be a map, not %s", DisplayPath(path), Describe(n))
		return nil
	}
	v, ok := r.Value(n, path)
	if !ok {
		return nil
	}
	return v.(map[string]any)
}

// Value reads any node as JSON decoding would: nil, bool, int64, float64,
// string, []any or map[string]any. Problems (merge keys, keys set twice,
// integers out of range) are reported at their node.
func (r *Reader) Value(n *yaml.Node, path string) (any, bool) {
	n = Resolve(n)
	if n == nil {
		return nil, true
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return r.tagged(n, path)
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := Resolve(n.Content[i])
			switch {
			case k.Kind != yaml.ScalarNode || k.Value == "<<":
				r.Errorf(k, diag.InvalidValue, "write the fields out", "%s: keys must be plain strings (no merge keys or complex keys)", DisplayPath(path))
				ok = false
				continue
			case out[k.Value] != nil || hasKey(out, k.Value):
				r.Errorf(k, diag.InvalidValue, "remove one of them", "%s is set twice", Join(path, k.Value))
				ok = false
				continue
			}
			v, vok := r.Value(n.Content[i+1], Join(path, k.Value))
			ok = ok && vok
			out[k.Value] = v
		}
		return out, ok
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		ok := true
		for i, item := range n.Content {
			v, vok := r.Value(item, fmt.Sprintf("%s[%d]", path, i))
			ok = ok && vok
			out[i] = v
		}
		return out, ok
	case yaml.ScalarNode:
		return r.scalar(n, path)
	}
	r.Errorf(n, diag.InvalidYAML, "", "%s: unsupported YAML node", DisplayPath(path))
	return nil, false
}

// tagged reads a node with a local tag, such as !absent, through Tags.
func (r *Reader) tagged(n *yaml.Node, path string) (any, bool) {
	build, ok := r.Tags[n.Tag]
	if !ok {
		known := tagNames(r.Tags)
		r.Errorf(n, diag.InvalidValue, "known tags: "+known, "%s: unknown tag %s", DisplayPath(path), n.Tag)
		return nil, false
	}
	var items []any
	switch n.Kind {
	case yaml.SequenceNode:
		for i, item := range n.Content {
			v, ok := r.Value(item, fmt.Sprintf("%s[%d]", path, i))
			if !ok {
				return nil, false
			}
			items = append(items, v)
		}
	case yaml.ScalarNode:
		if n.Value != "" {
			r.Errorf(n, diag.InvalidValue, "write "+n.Tag+" alone", "%s: %s takes no value", DisplayPath(path), n.Tag)
			return nil, false
		}
	default:
		r.Errorf(n, diag.WrongType, "", "%s: %s goes on a list or alone, not on %s", DisplayPath(path), n.Tag, Describe(n))
		return nil, false
	}
	return build(items), true
}

// tagNames lists the tags of m, sorted, for hints.
func tagNames(m map[string]func([]any) any) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func (r *Reader) scalar(n *yaml.Node, path string) (any, bool) {
	switch n.ShortTag() {
	case "!!null":
		return nil, true
	case "!!bool":
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			return b, true
		}
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			r.Errorf(n, diag.InvalidValue, "quote it to keep it as text", "%s: %s is not a 64-bit integer", DisplayPath(path), n.Value)
			return nil, false
		}
		return i, true
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			r.Errorf(n, diag.InvalidValue, "quote it to keep it as text", "%s: %s is not a finite number", DisplayPath(path), n.Value)
			return nil, false
		}
		return f, true
	}
	return n.Value, true
}

// Resolve follows aliases to the node they name.
func Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// IsNull reports whether n is YAML null (~, null or nothing).
func IsNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Join appends key to a dotted path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Keys calls fn with every mapping key under n, nested maps and lists
// too, and its path from n (a.b[0].c): where each key of a value read with
// Object is, for a message about one of them.
func Keys(n *yaml.Node, fn func(path string, key *yaml.Node)) {
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n = Resolve(n); n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := Join(path, n.Content[i].Value)
				fn(k, n.Content[i])
				walk(n.Content[i+1], k)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				walk(item, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	if n != nil {
		walk(n, "")
	}
}

// DisplayPath names a path in messages; the empty path is the file's top.
func DisplayPath(path string) string {
	if path == "" {
		return "the document"
	}
	return path
}

// Describe names the kind of a YAML value for messages: "a map", "a list",
// `the string "x"`, "the integer 3", "null".
func Describe(n *yaml.Node) string {
	n = Resolve(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
	}
	return "a " + n.ShortTag() + " value"
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlParserProblemRE matches the problems yaml's parser (not its scanner)
// reports, from go.yaml.in/yaml/v3's parserc.go: it prints their line
// 0-based, the scanner 1-based.
var tagInFlowRE = regexp.MustCompile(`![A-Za-z0-9_-]*[,}\]]`)

// flowPrefixRE matches a key whose value opens and closes a flow
// collection and goes on: ports: []integer, or tags: [a]b.
var flowPrefixRE = regexp.MustCompile(`^\s*(?:- )?[^:#]+:\s+(\[[^\]]*\]|\{[^}]*\})\S`)

var yamlParserProblemRE = regexp.MustCompile(`^(did not find expected (key|node content|'-' indicator|',' or '[\]}]'|<document start>)|found (undefined tag handle|duplicate %(YAML|TAG) directive|incompatible YAML document))$`)

// SyntaxErrorPos returns where a go-yaml syntax error in src is, as a
// line of file, or the file alone when the error names no line, and a hint
// for the mistakes found by the parser. The parser names the line where
// the mapping or list it could not go on with starts, not the line that
// broke it (usually one indented wrongly, further down): that line is the
// first whose inclusion makes a prefix of src fail alike, found by
// bisection.
func SyntaxErrorPos(file string, src []byte, err error) (pos diag.Pos, hint string) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return diag.Pos{File: file}, ""
	}
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return diag.Pos{File: file}, ""
	}
	line, _ := strconv.Atoi(m[1])
	problem := err.Error()[len(m[0]):]
	if lines := strings.Split(string(src), "\n"); problem == "did not find expected whitespace or line break" && line >= 1 && line <= len(lines) {
		// A tag the scanner read into a flow indicator: {a: !absent}.
		if loc := tagInFlowRE.FindStringIndex(lines[line-1]); loc != nil {
			return diag.Pos{File: file, Line: line, Col: loc[0] + 1}, "put a space after the tag ({a: !absent }), or write the field on a line of its own"
		}
	}
	if lines := strings.Split(string(src), "\n"); problem == "mapping values are not allowed in this context" && line >= 1 && line <= len(lines) {
		// key: a ? b : c, a value holding ": ": the second one is the
		// place, and quoting the value the fix.
		text := lines[line-1]
		if first := strings.Index(text, ": "); first >= 0 {
			if second := strings.Index(text[first+2:], ": "); second >= 0 {
				return diag.Pos{File: file, Line: line, Col: first + 2 + second + 1}, "quote the whole value (key: '${a ? \"x\" : \"y\"}'): unquoted, a \": \" in it starts a mapping"
			}
		}
	}
	if lines := strings.Split(string(src), "\n"); problem == "found character that cannot start any token" && line >= 1 && line <= len(lines) {
		if i := strings.IndexByte(lines[line-1], '\t'); i >= 0 && strings.TrimLeft(lines[line-1][:i], " ") == "" {
			return diag.Pos{File: file, Line: line, Col: i + 1}, "replace the tab with spaces: YAML indents with spaces only"
		}
	}
	if !yamlParserProblemRE.MatchString(problem) {
		return diag.Pos{File: file, Line: line, Col: 1}, ""
	}
	line++ // the parser counts from 0
	if strings.HasPrefix(problem, "did not find expected ','") {
		// An unclosed flow collection: where it opens is the place.
		if lines := strings.Split(string(src), "\n"); line <= len(lines) {
			text := lines[line-1]
			if i := strings.Index(text, "${"); i >= 0 && strings.ContainsAny(text[:i], "{[") {
				x := text[i:]
				if end := strings.IndexByte(x, '}'); end >= 0 {
					x = x[:end+1]
				}
				return diag.Pos{File: file, Line: line, Col: i + 1}, fmt.Sprintf("quote the expression inside the {...} or [...] ('%s'): unquoted, its braces read as YAML's", x)
			}
		}
		return diag.Pos{File: file, Line: line, Col: 1}, "close the flow collection ({...} or [...]) that opens on this line"
	}
	lines := strings.SplitAfter(string(src), "\n")
	failsAlike := func(n int) bool {
		dec := yaml.NewDecoder(strings.NewReader(strings.Join(lines[:n], "")))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if err == nil {
				continue
			}
			return strings.HasSuffix(err.Error(), problem)
		}
	}
	if line < 1 || line > len(lines) || !failsAlike(len(lines)) {
		return diag.Pos{File: file, Line: line, Col: 1}, ""
	}
	// The smallest prefix, of line lines or more, that fails alike.
	bad := line + sort.Search(len(lines)-line+1, func(i int) bool { return failsAlike(line + i) })
	text := lines[bad-1]
	col := len(text) - len(strings.TrimLeft(text, " ")) + 1
	hint = fmt.Sprintf("check the indentation of line %d against the lines above it", bad)
	if bad != line {
		hint = fmt.Sprintf("check the indentation of line %d against the block that starts at line %d", bad, line)
	}
	if m := flowPrefixRE.FindStringSubmatchIndex(text); m != nil {
		// key: []integer: a value that starts like a list or a mapping
		// and goes on after it closes is read as one, then as garbage.
		return diag.Pos{File: file, Line: bad, Col: m[2] + 1}, fmt.Sprintf("quote the value (%s\"%s\"): unquoted, a value starting with [ or { is a list or a mapping", text[col-1:m[2]], strings.TrimSpace(text[m[2]:]))
	}
	return diag.Pos{File: file, Line: bad, Col: col}, hint
}

// SyntaxErrorMsg is a go-yaml syntax error's message without its
// position: "invalid YAML: mapping values are not allowed in this context".
func SyntaxErrorMsg(err error) string {
	return "invalid YAML: " + strings.TrimPrefix(yamlLineRE.ReplaceAllString(err.Error(), ""), "yaml: ")
}
