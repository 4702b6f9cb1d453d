package typed

import (
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// Items combines the values of collection c's iterators, one per iterator
// in c.ForEach order, into the bindings of its items as the interpreter
// makes them (reconciler.CombineItems).
func Items(c *ir.Child, values ...any) ([]map[string]any, error) {
	return reconciler.CombineItems(c, values)
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
