// Package match is the partial matching that simulate.yaml and e2e.yaml
// expectations use: only the fields an expectation names are compared.
package match

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// Absent, as the value of a key in want, matches only when have lacks the
// key. Test files write it as the YAML tag !absent.
var Absent = absent{}

type absent struct{}

// Contains, as a want value, matches a list in which each of its items
// matches some item, in any order, whatever else the list holds: one
// condition of several, say. Test files write it as the YAML tag !contains
// on a list.
type Contains []any

// Tags are the YAML tags test files may use in a partial match, and what
// each reads as.
func Tags() map[string]func(items []any) any {
	return map[string]func([]any) any{
		"!absent":   func([]any) any { return Absent },
		"!contains": func(items []any) any { return Contains(items) },
	}
}

// Partial reports whether have matches want: maps when every key of want
// matches (and every key marked Absent is missing), lists when they have
// the same length and every item matches, Contains when each of its items
// matches an item of the list, scalars when equal (numbers by value, so 2
// matches 2.0).
func Partial(have, want any) bool {
	return len(Mismatches(have, want)) == 0
}

// Mismatches lists, as path: expected ..., got ..., every place where have
// does not match want.
func Mismatches(have, want any) []string {
	var out []string
	walk("", have, want, &out)
	sort.Strings(out)
	return out
}

func walk(path string, have, want any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: expected a map, got %s", show(path), describe(have)))
			return
		}
		for k, wv := range w {
			hv, ok := h[k]
			switch {
			case wv == Absent && ok:
				*out = append(*out, fmt.Sprintf("%s: expected absent, got %s", show(join(path, k)), describe(hv)))
			case wv == Absent:
			case !ok:
				*out = append(*out, fmt.Sprintf("%s: missing, expected %s", show(join(path, k)), describe(wv)))
			default:
				walk(join(path, k), hv, wv, out)
			}
		}
	case Contains:
		h, ok := have.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: expected a list, got %s", show(path), describe(have)))
			return
		}
		for i, wi := range w {
			if !slices.ContainsFunc(h, func(hi any) bool { return Partial(hi, wi) }) {
				*out = append(*out, fmt.Sprintf("%s: no item matches %s (of %s)", show(fmt.Sprintf("%s[contains %d]", path, i)), describe(wi), describe(have)))
			}
		}
	case []any:
		h, ok := have.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: expected a list, got %s", show(path), describe(have)))
			return
		}
		if len(h) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: expected %d items, got %d", show(path), len(w), len(h)))
			return
		}
		for i := range w {
			walk(fmt.Sprintf("%s[%d]", path, i), h[i], w[i], out)
		}
	default:
		if !scalarEqual(have, want) {
			*out = append(*out, fmt.Sprintf("%s: expected %s, got %s", show(path), describe(want), describe(have)))
		}
	}
}

// Project returns the part of have that want names, for a readable diff.
func Project(have, want any) any {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return have
		}
		out := map[string]any{}
		for k, wv := range w {
			if hv, ok := h[k]; ok {
				out[k] = Project(hv, wv)
			}
		}
		return out
	case Contains:
		h, ok := have.([]any)
		if !ok {
			return have
		}
		var out []any
		for _, wi := range w {
			for _, hi := range h {
				if Partial(hi, wi) {
					out = append(out, Project(hi, wi))
					break
				}
			}
		}
		if len(out) < len(w) {
			// An item matched nothing: show every item there is, not
			// the few that matched (or an empty list).
			return have
		}
		return out
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return have
		}
		out := make([]any, len(h))
		for i := range h {
			out[i] = Project(h[i], w[i])
		}
		return out
	}
	return have
}

// Diff renders want against the matching part of have, - expected, + got.
// A key want expects absent, and have lacks, matched: it is left out of
// both sides.
func Diff(have, want any) string {
	return cmp.Diff(normalize(dropMatchedAbsent(have, want)), normalize(Project(have, want)))
}

// dropMatchedAbsent returns want without the keys marked Absent that have
// lacks, at any depth of maps.
func dropMatchedAbsent(have, want any) any {
	w, ok := want.(map[string]any)
	if !ok {
		return want
	}
	h, _ := have.(map[string]any)
	out := make(map[string]any, len(w))
	for k, wv := range w {
		hv, present := h[k]
		if wv == Absent && !present {
			continue
		}
		out[k] = dropMatchedAbsent(hv, wv)
	}
	return out
}

// normalize makes numbers comparable across int64 and float64, and the
// markers printable.
func normalize(v any) any {
	switch t := v.(type) {
	case absent:
		return "(absent)"
	case Contains:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalize(e)
		}
		return out
	}
	if f, ok := number(v); ok {
		return f
	}
	return v
}

func scalarEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return a == b
}

func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int:
		return float64(t), true
	case int32:
		return float64(t), true
	case int64:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func show(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("%q", t)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return "a map with " + strings.Join(keys, ", ")
	case []any:
		return fmt.Sprintf("a list of %d", len(t))
	case absent:
		return "nothing"
	}
	return fmt.Sprint(v)
}
