package typed

import (
	"fmt"
	"sort"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// Items combines the values of collection c's iterators, one per iterator
// in c.ForEach order, into the bindings of its items as the interpreter
// makes them: every combination, a list's elements in order and a map's
// keys sorted.
func Items(c *ir.Child, values ...any) ([]map[string]any, error) {
	if len(values) != len(c.ForEach) {
		return nil, fmt.Errorf("%s: collection %q has %d iterators, given %d values", c.Pos, c.ID, len(c.ForEach), len(values))
	}
	out := []map[string]any{{}}
	for i, it := range c.ForEach {
		items, err := itemsOf(it, values[i])
		if err != nil {
			return nil, err
		}
		var next []map[string]any
		for _, partial := range out {
			for _, item := range items {
				m := make(map[string]any, len(partial)+1)
				for k, v := range partial {
					m[k] = v
				}
				m[it.Name] = item
				next = append(next, m)
			}
		}
		out = next
	}
	return out, nil
}

// itemsOf returns the items of an iterator's value: a list's elements, or
// a map's keys, sorted.
func itemsOf(it *ir.Iterator, v any) ([]any, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case []any:
		return t, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = k
		}
		return out, nil
	}
	return nil, &expr.EvalError{Expr: it.Items, Err: fmt.Errorf("forEach %s must be a list or a map, not %T", it.Name, v)}
}

// Bind presents one item of a collection, its iterators' values by name,
// to vars for the CEL programs of the collection's own expressions, and
// returns what takes them away again.
func Bind(vars *expr.Vars, item map[string]any) (unbind func()) {
	for k, v := range item {
		vars.SetValue(k, v)
	}
	return func() {
		for k := range item {
			vars.Unset(k)
		}
	}
}
