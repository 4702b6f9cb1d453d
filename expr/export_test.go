package expr

import "github.com/inrun/inrun/ir"

// BoundedCost reports whether x runs untracked in p: for tests.
func BoundedCost(p *Programs, x *ir.Expr) bool { return boundedCost(p.env.CEL(), x.Checked) }

// EvalBoth evaluates x by walking its field path, when it has one (ok
// false otherwise, or where the walk defers to CEL), and by its program.
func EvalBoth(p *Programs, x *ir.Expr, vars *Vars) (walked any, ok bool, viaCEL any, err error) {
	if fp := p.paths[x]; fp != nil {
		walked, ok = fp.eval(vars)
	}
	viaCEL, err = p.evalProgram(x, vars)
	return walked, ok, viaCEL, err
}

// HasFieldPath reports whether x is planned as a field path.
func HasFieldPath(p *Programs, x *ir.Expr) bool { return p.paths[x] != nil }
