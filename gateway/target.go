package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/ir"
)

// Labels and annotations the gateway puts on the custom resources it makes.
const (
	// LabelTarget marks a custom resource the gateway made, with its
	// target: the gateway changes nothing without it.
	LabelTarget = "gateway.inrun.dev/target"
	// LabelCaller holds the name of the token that made it (see Caller).
	LabelCaller = "gateway.inrun.dev/caller"
)

// Target is one served Blueprint: its serve section, and the programs of
// its view, planned once.
type Target struct {
	BP    *ir.Blueprint
	Serve *ir.Serve
	view  *expr.Programs
	// patterns are the fields' compiled patterns, by name.
	patterns map[string]*regexp.Regexp
	// movedTo is the served target of the kind a kind move (migrate.to)
	// takes t's custom resources to, nil when none is served; movedFrom
	// the targets whose custom resources move to t's kind.
	movedTo   *Target
	movedFrom map[string]bool
	// served are the names of the targets the gateway serves, t's too;
	// nil for a target served alone.
	served map[string]bool
}

// NewTarget prepares bp, which must have a serve section, for serving.
func NewTarget(bp *ir.Blueprint) (*Target, error) {
	if bp.Serve == nil {
		return nil, fmt.Errorf("the Blueprint %s has no serve section", bp.Name)
	}
	t := &Target{BP: bp, Serve: bp.Serve, patterns: map[string]*regexp.Regexp{}}
	if bp.Serve.View != nil {
		p, err := expr.CompileView(bp)
		if err != nil {
			return nil, fmt.Errorf("the view of %s: %w", bp.Name, err)
		}
		t.view = p
	}
	for _, f := range bp.Serve.Fields {
		if f.Pattern != "" {
			rx, err := regexp.Compile(f.Pattern)
			if err != nil {
				return nil, fmt.Errorf("%s: field %s: %w", f.Pos, f.Name, err)
			}
			t.patterns[f.Name] = rx
		}
	}
	return t, nil
}

// otherTarget says what to do with an intent whose target field v names
// another target than t: send it there when the gateway serves that one,
// else correct or drop the field.
func (t *Target) otherTarget(v any) string {
	name, _ := v.(string)
	if t.served[name] {
		return fmt.Sprintf("target is %s, but this is target %s: send it to /v1/targets/%s/intents, or leave target out", describeJSON(v), t.Name(), name)
	}
	names := slices.Sorted(maps.Keys(t.served))
	if len(names) == 0 {
		names = []string{t.Name()}
	}
	msg := fmt.Sprintf("target is %s, but this is target %s, and no target of that name is served", describeJSON(v), t.Name())
	switch near, ok := suggest.Closest(name, names); {
	case ok && near == t.Name():
		return fmt.Sprintf("%s: did you mean %s? Write %q, or leave target out", msg, near, near)
	case ok:
		return fmt.Sprintf("%s: did you mean %s? Send it to /v1/targets/%s/intents, or leave target out", msg, near, near)
	}
	return fmt.Sprintf("%s (it serves %s): leave target out", msg, strings.Join(names, ", "))
}

// Name is the target's name, as callers write it.
func (t *Target) Name() string { return t.Serve.Target }

// Intent is a validated intent: every field it has, sent or defaulted,
// typed (string, int64, float64 or bool).
type Intent map[string]any

// Validate decodes body strictly as an intent of t: a JSON object with no
// key twice and only t's fields (and target, which must be t's), each of
// its type, every required one present, enums and patterns respected. It
// fills defaults. Every problem is reported at once, by field.
func (t *Target) Validate(body []byte) (Intent, *Problem) {
	raw, p := decodeObject(body)
	if p != nil {
		return nil, p
	}
	var fields []FieldProblem
	add := func(field, format string, args ...any) {
		fields = append(fields, FieldProblem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	in := Intent{}
	names := make([]string, len(t.Serve.Fields))
	for i, f := range t.Serve.Fields {
		names[i] = f.Name
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if k == "target" {
			if s, ok := v.(string); !ok || s != t.Name() {
				add("target", "%s", t.otherTarget(v))
			}
			continue
		}
		f := t.Serve.Field(k)
		if f == nil {
			msg := fmt.Sprintf("unknown field %q: %s takes %s", k, t.Name(), strings.Join(names, ", "))
			if near, ok := suggest.Closest(k, names); ok {
				msg = fmt.Sprintf("unknown field %q; did you mean %s?", k, near)
			}
			fields = append(fields, FieldProblem{Field: k, Message: msg})
			continue
		}
		val, ok := typed(v, f.Type)
		if !ok {
			add(k, "%s must be %s, not %s", k, typeName(f.Type), describeJSON(v))
			continue
		}
		if msg := t.check(f, val); msg != "" {
			add(k, "%s", msg)
			continue
		}
		in[k] = val
	}
	for _, f := range t.Serve.Fields {
		if _, sent := raw[f.Name]; sent {
			continue
		}
		switch {
		case f.Required:
			add(f.Name, "%s is required%s", f.Name, describeField(f))
		case f.Default != nil:
			in[f.Name] = f.Default.Literal
		}
	}
	if len(fields) > 0 {
		sort.SliceStable(fields, func(i, j int) bool { return fields[i].Field < fields[j].Field })
		p := problem(http.StatusUnprocessableEntity, CodeInvalid, "correct the fields listed and send the intent again",
			"the intent for %s is not valid: %s", t.Name(), summarize(fields))
		p.Fields = fields
		return nil, p
	}
	return in, nil
}

// check returns what is wrong with a value of f besides its type, or "".
func (t *Target) check(f *ir.ServeField, v any) string {
	// A NUL is valid JSON and the API server stores it, but it ends a string
	// in C and in many a log and shell, where it hides what follows.
	if s, ok := v.(string); ok && strings.ContainsRune(s, 0) {
		return fmt.Sprintf("%s holds a NUL character (\\u0000); send the text without it", f.Name)
	}
	if len(f.Enum) > 0 && !slices.ContainsFunc(f.Enum, func(e *ir.Value) bool { return sameValue(e.Literal, v) }) {
		return fmt.Sprintf("%s %s is not one of %s", f.Name, jsonString(v), enumList(f.Enum))
	}
	if rx := t.patterns[f.Name]; rx != nil {
		if s, _ := v.(string); !rx.MatchString(s) {
			return fmt.Sprintf("%s %q does not match the pattern %s", f.Name, s, f.Pattern)
		}
	}
	if f.Name == t.Serve.Namespace.From {
		if _, ok := t.Serve.Namespace.Map[v.(string)]; !ok {
			return fmt.Sprintf("%s %q is not one of %s", f.Name, v, strings.Join(t.Serve.Environments(), ", "))
		}
	}
	return ""
}

// sameValue compares a literal with a decoded value: an enum's integer
// matches the same number sent.
func sameValue(lit, v any) bool {
	switch l := lit.(type) {
	case int64:
		switch x := v.(type) {
		case int64:
			return l == x
		case float64:
			return float64(l) == x
		}
	case float64:
		switch x := v.(type) {
		case int64:
			return l == float64(x)
		case float64:
			return l == x
		}
	}
	return lit == v
}

// decodeObject decodes a JSON object of scalars strictly: valid JSON, one
// object, no key twice. Numbers stay json.Number.
func decodeObject(body []byte) (map[string]any, *Problem) {
	const fix = `send one JSON object of fields, such as {"repository": "myorg/payments-api"}`
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, problem(http.StatusBadRequest, CodeMalformed, fix, "the body is empty")
		}
		return nil, problem(http.StatusBadRequest, CodeMalformed, fix, "the body is not JSON: %v", jsonErr(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, problem(http.StatusBadRequest, CodeMalformed, fix, "the body is %s, not a JSON object", describeToken(tok))
	}
	out := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, problem(http.StatusBadRequest, CodeMalformed, fix, "the body is not JSON: %v", jsonErr(err))
		}
		key := tok.(string)
		if _, dup := out[key]; dup {
			p := problem(http.StatusBadRequest, CodeMalformed, "send each field once", "field %q is in the body twice", key)
			p.Fields = []FieldProblem{{Field: key, Message: fmt.Sprintf("%s is sent twice; JSON readers disagree on which one counts", key)}}
			return nil, p
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, problem(http.StatusBadRequest, CodeMalformed, fix, "the body is not JSON: field %q: %v", key, jsonErr(err))
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, problem(http.StatusBadRequest, CodeMalformed, fix, "the body is not JSON: %v", jsonErr(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, problem(http.StatusBadRequest, CodeMalformed, fix, "the body holds more than one JSON value")
	}
	return out, nil
}

// jsonErr words a decoding error without Go's type names.
func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends early"
	}
	return err.Error()
}

// typed converts a decoded JSON value to a field's type, when it is one.
func typed(v any, t ir.FieldType) (any, bool) {
	switch t {
	case ir.FieldString:
		s, ok := v.(string)
		return s, ok
	case ir.FieldBoolean:
		b, ok := v.(bool)
		return b, ok
	case ir.FieldInteger:
		n, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			// 2.0 is an integer; 2.5 and 1e400 are not.
			f, ferr := n.Float64()
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return nil, false
			}
			return int64(f), true
		}
		return i, true
	case ir.FieldNumber:
		n, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return i, true
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, false
		}
		return f, true
	}
	return nil, false
}

func typeName(t ir.FieldType) string {
	switch t {
	case ir.FieldInteger:
		return "an integer"
	case ir.FieldNumber:
		return "a number"
	case ir.FieldBoolean:
		return "true or false"
	}
	return "a string"
}

// describeJSON names a decoded value for messages.
func describeJSON(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("%t", x)
	case json.Number:
		return "the number " + x.String()
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprint(v)
}

func describeToken(tok json.Token) string {
	switch x := tok.(type) {
	case json.Delim:
		if x == '[' {
			return "a list"
		}
	case string:
		return "a string"
	case nil:
		return "null"
	}
	return describeJSON(tok)
}

// jsonString renders v as JSON, for messages.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func enumList(enum []*ir.Value) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = jsonString(e.Literal)
	}
	return strings.Join(parts, ", ")
}

// describeField says what a missing required field is, for its message.
func describeField(f *ir.ServeField) string {
	var parts []string
	if f.Description != "" {
		parts = append(parts, strings.TrimSuffix(f.Description, "."))
	}
	parts = append(parts, typeName(f.Type))
	if f.Pattern != "" {
		parts = append(parts, "matching "+f.Pattern)
	}
	return ": " + strings.Join(parts, "; ")
}

func summarize(fields []FieldProblem) string {
	msgs := make([]string, len(fields))
	for i, f := range fields {
		msgs[i] = f.Message
	}
	return strings.Join(msgs, "; ")
}

// Environment returns the intent's value of the namespace field; "" when
// the target's namespace is fixed.
func (t *Target) Environment(in Intent) string {
	if t.Serve.Namespace.From == "" {
		return ""
	}
	s, _ := in[t.Serve.Namespace.From].(string)
	return s
}

// Namespace returns where the intent's custom resource goes: "" for a
// cluster-scoped kind.
func (t *Target) Namespace(env string) string {
	if !t.BP.Resource.Namespaced {
		return ""
	}
	if t.Serve.Namespace.From != "" {
		return t.Serve.Namespace.Map[env]
	}
	return t.Serve.Namespace.Name
}

// EnvironmentOf returns the environment a namespace is, and whether it is
// one.
func (t *Target) EnvironmentOf(ns string) (string, bool) {
	if t.Serve.Namespace.From == "" {
		return "", ns == t.Namespace("")
	}
	for env, n := range t.Serve.Namespace.Map {
		if n == ns {
			return env, true
		}
	}
	return "", false
}

// NameFrom returns the name an intent gives its custom resource, when the
// target names custom resources after a field; "" otherwise.
func (t *Target) NameFrom(in Intent) (string, *Problem) {
	from := t.Serve.Name.From
	if from == "" {
		return "", nil
	}
	v, _ := in[from].(string)
	name := MakeName(v)
	switch {
	case name == "":
		return "", invalidField(from, fmt.Sprintf("%s %q has no letter or digit to name the intent after", from, v))
	case len(name) > 63:
		return "", invalidField(from, fmt.Sprintf("%s %q makes a name of %d characters; at most 63 fit", from, v, len(name)))
	}
	return name, nil
}

func invalidField(field, msg string) *Problem {
	p := problem(http.StatusUnprocessableEntity, CodeInvalid, "correct the field and send the intent again", "the intent is not valid: %s", msg)
	p.Fields = []FieldProblem{{Field: field, Message: msg}}
	return p
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// MakeName makes a custom resource's name of a field's value: lower case,
// every run of characters other than letters and digits one "-", none at
// either end. myorg/payments-api becomes myorg-payments-api.
func MakeName(v string) string {
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(v), "-"), "-")
}

// ValidName reports whether name can name a custom resource the gateway
// makes: a DNS label.
func ValidName(name string) bool {
	return len(name) > 0 && len(name) <= 63 && nameRE.MatchString(name)
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// Map turns a validated intent into the custom resource it becomes, named
// name: apiVersion, kind, metadata (the namespace its environment picks,
// LabelTarget and LabelCaller) and each field's value at its path.
func (t *Target) Map(in Intent, name, caller string) *unstructured.Unstructured {
	r := t.BP.Resource
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion(r.GroupVersionKind.GroupVersion().String())
	obj.SetKind(r.Kind)
	obj.SetName(name)
	if ns := t.Namespace(t.Environment(in)); ns != "" {
		obj.SetNamespace(ns)
	}
	obj.SetLabels(map[string]string{LabelTarget: t.Name(), LabelCaller: labelValue(caller)})
	for _, f := range t.Serve.Fields {
		v, ok := in[f.Name]
		if !ok || f.Path == "" {
			continue
		}
		_ = unstructured.SetNestedField(obj.Object, v, strings.Split(f.Path, ".")...)
	}
	return obj
}

// IntentOf reads back the intent a custom resource holds: each field at its
// path (or, for a custom resource inrun migrate has not moved yet, at the
// first of the field's migrate.from paths that holds a value), the
// namespace field from the namespace, and a field the name is made from,
// without a path, as the name. Map writes only the path: a caller's next
// write moves the value, and server-side apply drops the old path the
// gateway wrote.
func (t *Target) IntentOf(obj *unstructured.Unstructured) Intent {
	in := Intent{}
	for _, f := range t.Serve.Fields {
		switch {
		case f.Path != "":
			paths := []string{f.Path}
			if f.Migrate != nil {
				paths = append(paths, f.Migrate.From...)
			}
			for _, p := range paths {
				if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(p, ".")...); ok && v != nil {
					in[f.Name] = v
					break
				}
			}
		case f.Name == t.Serve.Namespace.From:
			if env, ok := t.EnvironmentOf(obj.GetNamespace()); ok {
				in[f.Name] = env
			}
		case f.Name == t.Serve.Name.From:
			in[f.Name] = obj.GetName()
		}
	}
	return in
}

// Ours reports whether the gateway made obj for this target.
func (t *Target) Ours(obj *unstructured.Unstructured) bool {
	made := obj.GetLabels()[LabelTarget]
	if made == t.Name() {
		return true
	}
	// A custom resource a kind move brought here from another target's
	// kind is served here: it keeps the labels the gateway gave it.
	_, moved := obj.GetAnnotations()[ir.AnnotationMovedFrom]
	return moved && t.movedFrom[made]
}

// listSelector selects the custom resources made by caller through t, or
// through a target whose custom resources a kind move brought to t's kind.
func (t *Target) listSelector(caller string) labels.Selector {
	names := []string{t.Name()}
	for n := range t.movedFrom {
		names = append(names, n)
	}
	sort.Strings(names)
	byTarget, err1 := labels.NewRequirement(LabelTarget, selection.In, names)
	byCaller, err2 := labels.NewRequirement(LabelCaller, selection.Equals, []string{labelValue(caller)})
	if err1 != nil || err2 != nil {
		return labels.Nothing() // label values the gateway made itself: not reached
	}
	return labels.NewSelector().Add(*byTarget, *byCaller)
}

// linkMoves links the targets whose custom resources a kind move takes to
// another served target's kind.
func linkMoves(targets map[string]*Target) {
	for _, from := range targets {
		m := from.BP.Migrate
		if m == nil {
			continue
		}
		for _, to := range targets {
			if to.BP.Resource.GroupVersionKind.GroupKind() == m.To.GroupKind() {
				from.movedTo = to
				if to.movedFrom == nil {
					to.movedFrom = map[string]bool{}
				}
				to.movedFrom[from.Name()] = true
			}
		}
	}
}

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue makes s a label value.
func labelValue(s string) string {
	s = strings.Trim(labelUnsafe.ReplaceAllString(s, "-"), "-._")
	if len(s) > 63 {
		s = strings.Trim(s[:63], "-._")
	}
	return s
}
