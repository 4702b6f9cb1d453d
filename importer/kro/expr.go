package kro

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/ir"
)

// segment is one piece of a kro string: literal text, or the source of a
// ${...} expression.
type segment struct {
	text string
	expr bool
	// offset is the byte offset of the text, or of the expression's source
	// (after ${), in the string.
	offset int
}

// errNested is kro's refusal of ${ inside an expression outside a string
// literal.
var errNested = errors.New("${ inside an expression must be inside a string literal")

// scan splits s into text and expressions exactly as kro does
// (pkg/graph/parser.extractExpressions): braces are counted outside
// double-quoted strings, and a ${ that is never closed is text.
func scan(s string) ([]segment, error) {
	var out []segment
	text := func(from, to int) {
		if from < to {
			out = append(out, segment{text: s[from:to], offset: from})
		}
	}
	done := 0
	for start := 0; start < len(s); {
		i := strings.Index(s[start:], "${")
		if i < 0 {
			break
		}
		i += start
		depth, j, inString, escaped := 1, i+2, false, false
		for ; j < len(s); j++ {
			c := s[j]
			switch {
			case escaped:
				escaped = false
			case inString && c == '\\':
				escaped = true
			case c == '"':
				inString = !inString
			case inString:
			case c == '{':
				depth++
			case c == '}':
				depth--
			case strings.HasPrefix(s[j:], "${") && s[j-1] != '"':
				return nil, errNested
			}
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			// kro reads an unclosed ${ as text and looks further on.
			start = i + 1
			continue
		}
		text(done, i)
		out = append(out, segment{text: s[i+2 : j], expr: true, offset: i + 2})
		done, start = j+1, j+1
	}
	text(done, len(s))
	return out, nil
}

// joinSegments writes segments back as a Blueprint string: ${...} around
// expressions, and text escaped so that it stays text. A Blueprint reads $${
// as a literal ${, so a ${ that kro left as text is written $${, and a $
// right before an expression, which kro keeps, is written ${"$"}.
func joinSegments(segs []segment) string {
	var b strings.Builder
	for i, s := range segs {
		if s.expr {
			b.WriteString("${" + s.text + "}")
			continue
		}
		t := strings.ReplaceAll(s.text, "${", "$${")
		if i+1 < len(segs) && segs[i+1].expr && strings.HasSuffix(t, "$") {
			t = strings.TrimSuffix(t, "$") + `${"$"}`
		}
		b.WriteString(t)
	}
	return b.String()
}

// celEnv is a Blueprint's expression environment with every variable
// dynamic: enough to parse (with Inrun's macros) and to know which
// functions exist.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	env, err := expr.NewEnv(&ir.Blueprint{})
	if err != nil {
		return nil, err
	}
	return env.CEL(), nil
})

// functionNames are the functions a Blueprint's expressions may call,
// operators left out, sorted.
var functionNames = sync.OnceValue(func() []string {
	env, err := celEnv()
	if err != nil {
		return nil
	}
	var out []string
	for name := range env.Functions() {
		if !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, "@") && !strings.Contains(name, "@") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
})

// kroFunctions are kro's functions Inrun does not have, and what to write
// instead.
var kroFunctions = map[string]string{
	"hash.md5":              "Inrun has hash.sha256 and hash.fnv64a; a different hash gives a different value",
	"lists.setAtIndex":      "build the list with slice and +: l.slice(0, i) + [v] + l.slice(i + 1, size(l))",
	"lists.insertAtIndex":   "build the list with slice and +: l.slice(0, i) + [v] + l.slice(i, size(l))",
	"lists.removeAtIndex":   "build the list with slice and +: l.slice(0, i) + l.slice(i + 1, size(l))",
	"omit":                  `Inrun has no omit() sentinel: write the map that holds the field as one expression, with and without the field (m.omit(["key"]) removes a key)`,
	"runtime.newCondition":  "Inrun writes the Ready, Progressing and Degraded conditions itself; custom conditions are not supported",
	"runtime.condition":     "Inrun writes the Ready, Progressing and Degraded conditions itself; read them from the custom resource's status instead",
	"runtime.newConditions": "Inrun writes the Ready, Progressing and Degraded conditions itself; custom conditions are not supported",
}

// problem is something wrong in one expression, at a rune offset of its
// source.
type problem struct {
	offset int
	code   diag.Code
	msg    string
	hint   string
}

// edit replaces the runes [start, end) of an expression's source.
type edit struct {
	start, end int
	text       string
}

// rewriteExpr rewrites one kro expression into a Blueprint's: the schema
// variable becomes self, and a field compared with null becomes has(). vars
// are the names the expression may read besides schema (resource ids, each,
// forEach names): a call on one of them is a method, not a function of a
// namespace. It returns the new source and what it could not convert.
func rewriteExpr(src string, vars map[string]bool, builtins map[string]schema.GroupVersionKind) (string, []problem) {
	env, err := celEnv()
	if err != nil {
		return src, []problem{{code: diag.ExprSyntax, msg: err.Error()}}
	}
	ast, iss := env.Parse(src)
	if iss.Err() != nil {
		var out []problem
		for _, e := range iss.Errors() {
			out = append(out, problem{
				offset: runeOffset(src, e.Location.Line(), e.Location.Column()),
				code:   diag.ExprSyntax,
				msg:    fmt.Sprintf("${%s} does not parse: %s", src, e.Message),
				hint:   "fix it in the ResourceGraphDefinition and import it again",
			})
		}
		return src, out
	}
	w := &walker{src: []rune(src), info: ast.NativeRep().SourceInfo(), vars: vars, builtins: builtins}
	w.visit(ast.NativeRep().Expr(), nil)

	out := apply(w.src, w.edits)
	if _, iss := env.Parse(out); iss.Err() != nil {
		w.problems = append(w.problems, problem{
			code: diag.NotConvertible,
			msg:  fmt.Sprintf("${%s} could not be rewritten", src),
			hint: "write it with self for schema and has(x) for x != null, by hand",
		})
		return src, w.problems
	}
	return out, w.problems
}

// runeOffset turns a 1-based line and a 0-based column of src into a rune
// offset.
func runeOffset(src string, line, col int) int {
	off := 0
	for i, l := range strings.SplitAfter(src, "\n") {
		if i+1 == line {
			return off + col
		}
		off += len([]rune(l))
	}
	return 0
}

// apply makes edits, which do not overlap, on src. Of edits at the same
// place, insertions go first.
func apply(src []rune, edits []edit) string {
	slices.SortStableFunc(edits, func(a, b edit) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end-a.start, b.end-b.start))
	})
	var b strings.Builder
	at := 0
	for _, e := range edits {
		if e.start < at {
			continue
		}
		b.WriteString(string(src[at:e.start]))
		b.WriteString(e.text)
		at = e.end
	}
	b.WriteString(string(src[at:]))
	return b.String()
}

// walker collects the edits and problems of one expression.
type walker struct {
	src  []rune
	info *celast.SourceInfo
	vars map[string]bool
	// builtins are the resources of built-in kinds, by id: a Blueprint
	// reads no apiVersion nor kind of such an object (its Go type holds
	// them empty), so x.apiVersion is written as the literal it is.
	builtins map[string]schema.GroupVersionKind
	edits    []edit
	problems []problem
}

// rng returns the runes of src the node id spans, when the parser recorded
// them; nodes a macro made up span nothing.
func (w *walker) rng(id int64) (start, end int, ok bool) {
	r, ok := w.info.GetOffsetRange(id)
	if !ok || r.Start >= r.Stop || int(r.Stop) > len(w.src) {
		return 0, 0, false
	}
	return int(r.Start), int(r.Stop), true
}

// visit walks e; scope holds the comprehension variables in scope there.
func (w *walker) visit(e celast.Expr, scope []string) {
	switch e.Kind() {
	case celast.IdentKind:
		if e.AsIdent() == "schema" && !slices.Contains(scope, "schema") {
			if s, end, ok := w.rng(e.ID()); ok && string(w.src[s:end]) == "schema" {
				w.edits = append(w.edits, edit{start: s, end: end, text: "self"})
			}
		}
	case celast.SelectKind:
		if w.typeMeta(e, e.AsSelect().Operand(), e.AsSelect().FieldName(), false, scope) {
			return
		}
		w.visit(e.AsSelect().Operand(), scope)
	case celast.CallKind:
		call := e.AsCall()
		// x.?kind, an optional select.
		if args := call.Args(); call.FunctionName() == "_?._" && len(args) == 2 && args[1].Kind() == celast.LiteralKind {
			if f, ok := args[1].AsLiteral().Value().(string); ok && w.typeMeta(e, args[0], f, true, scope) {
				return
			}
		}
		if call.IsMemberFunction() {
			w.visit(call.Target(), scope)
		}
		for _, a := range call.Args() {
			w.visit(a, scope)
		}
		w.nullCompare(e)
		w.function(e, scope)
	case celast.ListKind:
		for _, it := range e.AsList().Elements() {
			w.visit(it, scope)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			w.visit(en.AsMapEntry().Key(), scope)
			w.visit(en.AsMapEntry().Value(), scope)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			w.visit(f.AsStructField().Value(), scope)
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		w.visit(c.IterRange(), scope)
		w.visit(c.AccuInit(), scope)
		inner := append(slices.Clip(scope), c.IterVar(), c.AccuVar())
		if c.HasIterVar2() {
			inner = append(inner, c.IterVar2())
		}
		w.visit(c.LoopCondition(), inner)
		w.visit(c.LoopStep(), inner)
		w.visit(c.Result(), inner)
	}
}

// typeMeta rewrites e, a select of field of operand, into the literal it
// is when operand is a resource of a built-in kind and field its
// apiVersion or kind (optional: a select x.?kind, an optional of it).
func (w *walker) typeMeta(e, operand celast.Expr, field string, optional bool, scope []string) bool {
	if operand.Kind() != celast.IdentKind || (field != "apiVersion" && field != "kind") {
		return false
	}
	id := operand.AsIdent()
	gvk, ok := w.builtins[id]
	if !ok || slices.Contains(scope, id) {
		return false
	}
	start, end, ok := w.rng(operand.ID())
	if !ok {
		return false
	}
	// The parser's ranges stop before the field name: find it after the
	// operand, past the dot (and the ? of an optional select).
	rest := string(w.src[end:])
	trimmed := strings.TrimLeft(rest, " \t\n")
	if !strings.HasPrefix(trimmed, ".") {
		return false
	}
	trimmed = strings.TrimLeft(trimmed[1:], " \t\n")
	if optional {
		if !strings.HasPrefix(trimmed, "?") {
			return false
		}
		trimmed = strings.TrimLeft(trimmed[1:], " \t\n")
	}
	if !strings.HasPrefix(trimmed, field) {
		return false
	}
	end += utf8.RuneCountInString(rest) - utf8.RuneCountInString(trimmed) + utf8.RuneCountInString(field)
	value := gvk.GroupVersion().String()
	if field == "kind" {
		value = gvk.Kind
	}
	text := strconv.Quote(value)
	if optional {
		text = "optional.of(" + text + ")"
	}
	w.edits = append(w.edits, edit{start: start, end: end, text: text})
	return true
}

// nullCompare rewrites x != null into has(x), and x == null into !has(x),
// where x is a field: a Blueprint's fields are never null (an absent field
// of a built-in kind reads as its zero value), so the comparison kro users
// write to wait for a field is has() in a Blueprint.
func (w *walker) nullCompare(e celast.Expr) {
	call := e.AsCall()
	fn := call.FunctionName()
	if (fn != "_==_" && fn != "_!=_") || len(call.Args()) != 2 {
		return
	}
	x, null := call.Args()[0], call.Args()[1]
	nullFirst := isNull(x)
	if nullFirst {
		x, null = null, x
	}
	if !isNull(null) || x.Kind() != celast.SelectKind || x.AsSelect().IsTestOnly() {
		return
	}
	xStart, xEnd, ok := w.span(x)
	nStart, nEnd, ok2 := w.rng(null.ID())
	if !ok || !ok2 {
		return
	}
	open := "has("
	if fn == "_==_" {
		open = "!has("
	}
	if nullFirst {
		w.edits = append(w.edits, edit{start: nStart, end: xStart, text: open}, edit{start: xEnd, end: xEnd, text: ")"})
	} else {
		w.edits = append(w.edits, edit{start: xStart, end: xStart, text: open}, edit{start: xEnd, end: nEnd, text: ")"})
	}
}

func isNull(e celast.Expr) bool {
	return e.Kind() == celast.LiteralKind && e.AsLiteral() == types.NullValue
}

// first returns the first rune any node of e spans.
func (w *walker) first(e celast.Expr) (int, bool) {
	first := len(w.src)
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(e celast.Expr) {
		if s, _, ok := w.rng(e.ID()); ok && s < first {
			first = s
		}
	}))
	return first, first < len(w.src)
}

// span returns the runes a select chain such as a.b[0].c spans: from its
// first rune to the end of its last field name (the parser records a
// selection at its dot).
func (w *walker) span(x celast.Expr) (start, end int, ok bool) {
	start, ok = w.first(x)
	_, dot, ok2 := w.rng(x.ID())
	if !ok || !ok2 {
		return 0, 0, false
	}
	end = dot
	for end < len(w.src) && (w.src[end] == ' ' || w.src[end] == '\t' || w.src[end] == '\n') {
		end++
	}
	name := []rune(x.AsSelect().FieldName())
	if end+len(name) > len(w.src) || string(w.src[end:end+len(name)]) != string(name) {
		return 0, 0, false
	}
	return start, end + len(name), true
}

// function reports a call of a function Blueprints do not have.
func (w *walker) function(e celast.Expr, scope []string) {
	call := e.AsCall()
	fn := call.FunctionName()
	// Operators, and the functions macros expand into (cel.@mapInsert of
	// transformMap) are no calls the user wrote.
	if strings.HasPrefix(fn, "_") || strings.Contains(fn, "@") || fn == "!_" || fn == "-_" {
		return
	}
	name := fn
	if call.IsMemberFunction() {
		if q, root, ok := qualified(call.Target()); ok && root != "schema" && !w.vars[root] && !slices.Contains(scope, root) {
			name = q + "." + fn
		}
	}
	names := functionNames()
	has := func(n string) bool { _, ok := slices.BinarySearch(names, n); return ok }
	// A method on a name that is no variable, such as x.size() with x
	// misspelt, is for the compiler to report; kro's own functions are
	// known by their full names.
	_, isKro := kroFunctions[name]
	if name == "omit" {
		// kro's omit() sentinel, not a Blueprint's m.omit(keys)
		isKro = !call.IsMemberFunction() && len(call.Args()) == 0
	}
	if !isKro && (has(name) || has(fn)) {
		return
	}
	// The parser records a call at its parenthesis: point at the name.
	offset := 0
	if paren, _, ok := w.rng(e.ID()); ok {
		offset = paren
		if i := strings.LastIndex(string(w.src[:paren]), fn); i >= 0 {
			offset = len([]rune(string(w.src[:paren])[:i]))
		}
	}
	if name != fn {
		if s, ok := w.first(call.Target()); ok {
			offset = s
		}
	}
	hint := kroFunctions[name]
	msg := fmt.Sprintf("function %s is not one a Blueprint has", name)
	switch {
	case isKro:
		msg = fmt.Sprintf("kro's %s() has no equivalent in a Blueprint", name)
	default:
		if near, ok := suggest.Closest(name, names); ok {
			hint = "did you mean " + near + "?"
		} else {
			hint = "a Blueprint's functions are CEL's, the Kubernetes libraries' and Inrun's (docs/blueprint.md, Expressions)"
		}
	}
	w.problems = append(w.problems, problem{offset: offset, code: diag.NotConvertible, msg: msg, hint: hint})
}

// qualified returns the dotted name a chain of identifiers and selections
// spells (base64, a.b.c) and its first identifier.
func qualified(e celast.Expr) (name, root string, ok bool) {
	switch e.Kind() {
	case celast.IdentKind:
		return e.AsIdent(), e.AsIdent(), true
	case celast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			return "", "", false
		}
		n, r, ok := qualified(s.Operand())
		return n + "." + s.FieldName(), r, ok
	}
	return "", "", false
}
