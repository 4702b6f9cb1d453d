package compiler

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/google/cel-go/common/types"

	"github.com/inrun/inrun/expr"
)

// Expression diagnostics, in Inrun's words rather than cel-go's: a call to a
// function that does not exist says so and names the closest one, a reference
// kro users write (schema) says what a Blueprint calls it, and no type name
// Inrun gives a CRD's schema internally (inrun.self.spec) shows.

var (
	noOverloadRE     = regexp.MustCompile(`^found no matching overload for '([^']+)' applied to`)
	stringOfObjectRE = regexp.MustCompile(`^found no matching overload for 'string' applied to '\((map|list)\(`)
	internalTypeRE   = regexp.MustCompile(`\binrun\.([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_@]*)*)`)
)

// functionAliases are names other languages and template engines give
// functions CEL has under another name, with what to write instead.
var functionAliases = map[string]string{
	"toUpper": "upperAscii", "toUpperCase": "upperAscii", "upperCase": "upperAscii", "upper": "upperAscii", "ToUpper": "upperAscii",
	"toLower": "lowerAscii", "toLowerCase": "lowerAscii", "lowerCase": "lowerAscii", "lower": "lowerAscii", "ToLower": "lowerAscii",
	"len": "size", "length": "size", "count": "size",
	"substr": "substring", "toString": "string", "str": "string", "parseInt": "int", "atoi": "int",
	"sha256": "hash.sha256", "b64enc": "base64.encode", "b64dec": "base64.decode",
	"toJson": "json.marshal", "toJSON": "json.marshal", "fromJson": "json.unmarshal", "fromJSON": "json.unmarshal",
	"keys": "m.map(k, k)", "default": "x.orValue(y) on an optional, or has(x) ? x : y",
}

// unknownFunction returns the message and hint for a call of name when no
// function of that name exists at all; ok is false when one does (the
// arguments are what is wrong).
func unknownFunction(env *expr.Env, name string) (msg, hint string, ok bool) {
	names := functionNames(env)
	for _, n := range names {
		if n == name {
			return "", "", false
		}
	}
	msg = fmt.Sprintf("unknown function %s", name)
	switch alias, known := functionAliases[name]; {
	case known:
		hint = "CEL calls it " + alias
	default:
		if near, found := closest(name, names); found {
			hint = "did you mean " + near + "?"
		} else {
			hint = "the functions are CEL's, the Kubernetes libraries' and Inrun's (see docs/blueprint.md)"
		}
	}
	return msg, hint, true
}

// libraryFunctions returns the functions of env's library lib (hash of
// hash.sha256), without the library's name; none when lib is no library.
func libraryFunctions(env *expr.Env, lib string) []string {
	var out []string
	for _, n := range functionNames(env) {
		if name, ok := strings.CutPrefix(n, lib+"."); ok {
			out = append(out, name)
		}
	}
	return out
}

// unknownLibraryFunction returns the message and hint for lib.name(...)
// where lib is a library of env's functions and name none of them. CEL
// reads lib as a variable and name as a function of its own, and says
// neither exists.
func unknownLibraryFunction(env *expr.Env, lib, name string) (msg, hint string) {
	fns := libraryFunctions(env, lib)
	hint = lib + " has " + joinAnd(fns)
	if near, ok := closest(name, fns); ok {
		hint = "did you mean " + lib + "." + near + "? " + hint
	}
	return fmt.Sprintf("unknown function %s.%s", lib, name), hint
}

// libraryCallAt returns the name of the function src calls at col as
// lib.name(...), when lib starts there and is the whole of its reference.
func libraryCallAt(src string, col int, lib string) (string, bool) {
	if col < 0 || col+len(lib) >= len(src) || src[col:col+len(lib)] != lib || src[col+len(lib)] != '.' ||
		col > 0 && (isIdentByte(src[col-1]) || src[col-1] == '.') {
		return "", false
	}
	rest := src[col+len(lib)+1:]
	n := 0
	for n < len(rest) && isIdentByte(rest[n]) {
		n++
	}
	if n == 0 || !strings.HasPrefix(strings.TrimLeft(rest[n:], " \t"), "(") {
		return "", false
	}
	return rest[:n], true
}

// inLibrary reports whether the function called at at in src is called as
// lib.name(...) with lib a library of env's functions: unknownLibraryFunction
// reports it, at lib.
func inLibrary(env *expr.Env, src string, at int) bool {
	if at < 2 || src[at-1] != '.' {
		return false
	}
	start := at - 1
	for start > 0 && isIdentByte(src[start-1]) {
		start--
	}
	lib := src[start : at-1]
	if _, ok := libraryCallAt(src, start, lib); !ok {
		return false
	}
	return len(libraryFunctions(env, lib)) > 0
}

// joinAnd joins words as a sentence lists them: a, b and c.
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// metaTimeRE matches the CEL types of a built-in kind's times.
var metaTimeRE = regexp.MustCompile(`\b(` + regexp.QuoteMeta(expr.TimeType.TypeName()) + `|` + regexp.QuoteMeta(expr.MicroTimeType.TypeName()) + `)\b`)

// metaTimeHint is what to write when an operation is given a metav1.Time.
const metaTimeHint = "a built-in kind's time is a metav1.Time, not a CEL timestamp: timestamp(x) is the timestamp, string(x) its RFC 3339 text"

// functionNames lists the functions of env, without CEL's operators.
func functionNames(env *expr.Env) []string {
	var out []string
	for name := range env.CEL().Functions() {
		if !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, "@") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// humanTypes rewrites the names the expression environment gives a CRD's
// schema types (inrun.self.spec.values) into the paths they type
// (self.spec.values).
func humanTypes(msg string) string {
	return internalTypeRE.ReplaceAllStringFunc(msg, func(m string) string {
		return "the type of " + strings.TrimPrefix(m, "inrun.")
	})
}

// resultType names an expression's type in a message: a CRD schema's
// object as an object, not by its internal name.
func resultType(t *types.Type) string {
	if t.Kind() == types.StructKind && internalTypeRE.MatchString(t.String()) {
		return "an object (" + humanTypes(t.String()) + ")"
	}
	return humanTypes(t.String())
}

// callAt returns where in src a call of name is that CEL reports at col
// (the name, or the parenthesis after it), or -1 when name is not called
// there.
func callAt(src string, col int, name string) int {
	for _, at := range []int{col, col - len(name)} {
		if at < 0 || at+len(name) > len(src) || src[at:at+len(name)] != name {
			continue
		}
		if rest := strings.TrimLeft(src[at+len(name):], " \t"); strings.HasPrefix(rest, "(") {
			return at
		}
	}
	return -1
}
