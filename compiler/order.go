package compiler

import (
	"slices"
	"sort"
	"strings"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// order fills DependsOn, reports reference cycles, and sorts Children so
// every child follows the children it references, keeping source order
// where references allow.
func (c *checker) order() {
	ids := map[string]*ir.Child{}
	for _, ch := range c.bp.Children {
		ids[ch.ID] = ch
	}
	for _, ch := range c.bp.Children {
		deps := map[string]bool{}
		var xs []*ir.Expr
		for _, it := range ch.ForEach {
			xs = append(xs, it.Items)
		}
		if ch.IncludeWhen != nil {
			xs = append(xs, ch.IncludeWhen)
		}
		if ch.ReadyWhen != nil {
			xs = append(xs, ch.ReadyWhen)
		}
		xs = append(xs, ch.Template.Exprs()...)
		for _, x := range xs {
			for _, r := range x.Refs {
				if r != expr.Self && r != ch.ID && ids[r] != nil {
					deps[r] = true
				}
			}
		}
		ch.DependsOn = make([]string, 0, len(deps))
		for d := range deps {
			ch.DependsOn = append(ch.DependsOn, d)
		}
		sort.Strings(ch.DependsOn)
	}

	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var sorted []*ir.Child
	var stack []string
	reported := map[string]bool{}
	var visit func(ch *ir.Child)
	visit = func(ch *ir.Child) {
		switch state[ch.ID] {
		case done:
			return
		case visiting:
			i := slices.Index(stack, ch.ID)
			cycle := append(slices.Clone(stack[i:]), ch.ID)
			key := canonicalCycle(cycle[:len(cycle)-1])
			if !reported[key] {
				reported[key] = true
				first := ids[cycle[0]]
				c.errs.Add(first.Pos, diag.Cycle, "break the cycle: one of these children must not read the other", "children reference each other in a cycle: %s", strings.Join(cycle, " → "))
			}
			return
		}
		state[ch.ID] = visiting
		stack = append(stack, ch.ID)
		for _, d := range ch.DependsOn {
			visit(ids[d])
		}
		stack = stack[:len(stack)-1]
		state[ch.ID] = done
		sorted = append(sorted, ch)
	}
	for _, ch := range c.bp.Children {
		visit(ch)
	}
	c.bp.Children = sorted
}

// canonicalCycle names a cycle independently of where it was entered.
func canonicalCycle(ids []string) string {
	min := 0
	for i := range ids {
		if ids[i] < ids[min] {
			min = i
		}
	}
	return strings.Join(append(slices.Clone(ids[min:]), ids[:min]...), ",")
}
