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

// Planned reports whether x's CEL program has been planned.
func Planned(p *Programs, x *ir.Expr) bool {
	prg := p.progs[x]
	return prg != nil && (prg.prg != nil || prg.err != nil)
}

// Walks reports whether x's field path answers with vars, without CEL.
func Walks(p *Programs, x *ir.Expr, vars *Vars) bool {
	fp := p.paths[x]
	if fp == nil {
		return false
	}
	_, ok := fp.eval(vars)
	return ok
}
