package expr

import "github.com/inrun/inrun/ir"

// BoundedCost reports whether x runs untracked in p: for tests.
func BoundedCost(p *Programs, x *ir.Expr) bool { return boundedCost(p.env.CEL(), x.Checked) }
