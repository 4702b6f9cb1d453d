package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// rowSpec is one row of the matrix: a fault, what Inrun must do about it,
// and how to try it.
type rowSpec struct {
	id       string
	fault    string
	expected string
	// quick rows run with -quick, and so in go test.
	quick bool
	run   func(m *matrix, ctx context.Context, r *Row) error
}

// remoteTimeout is reconcile.timeout in testdata/blueprint.yaml.
const remoteTimeout = 2 * time.Second

// rows are the matrix's rows, in the order they run: first those that
// share one runtime, then those that run their own.
func rows(o *options) []rowSpec {
	var out []rowSpec
	for _, f := range remoteFaults(remoteTimeout) {
		expected := fmt.Sprintf("children kept; Degraded and a Warning %s Event say %q; at most %d reconciles in %s; Ready again once fixed, unedited",
			f.reason, f.want[len(f.want)-1], retryBound(o.window, o.maxBackoff), o.window)
		if f.retryAfter {
			expected += "; no call sooner than Retry-After"
		}
		out = append(out, rowSpec{id: f.id, fault: f.fault, expected: expected, quick: f.quick,
			run: func(m *matrix, ctx context.Context, r *Row) error { return m.remoteRow(ctx, f, r) }})
	}
	return append(out,
		rowSpec{id: "invalid-cr", fault: "a Widget edited so that an expression divides by zero, then fixed",
			expected: "children kept as they were; Degraded and a Warning ChildFailed Event say \"division by zero\"; no hot loop; converged once fixed",
			quick:    true, run: (*matrix).invalidRow},
		rowSpec{id: "configmap", fault: "the Blueprint ConfigMap edited into a broken state while running, then fixed",
			expected: "a Warning BlueprintInvalid Event on the ConfigMap; the last good Blueprint keeps reconciling; the fixed one runs and rewrites nothing",
			quick:    true, run: (*matrix).configMapRow},
		rowSpec{id: "kill", fault: fmt.Sprintf("inrun run killed with SIGKILL while converging %d Widgets, then started again", o.n),
			expected: "every Widget converges; no child deleted, duplicated or recreated; nothing converged written again; writes ≤ what was left to do",
			quick:    true, run: (*matrix).killRow},
		rowSpec{id: "apiserver", fault: fmt.Sprintf("kube-apiserver stopped for %s under a running runtime, then started", o.apiDown),
			expected: "no crash; edits and new Widgets after it returns converge; children kept; writes ≤ what the edits need",
			quick:    true, run: (*matrix).apiServerRow},
		rowSpec{id: "leader", fault: fmt.Sprintf("two runtimes with --leader-elect; the leader killed with SIGKILL while converging %d Widgets", o.n),
			expected: "the other leads within the lease duration + 10s; every Widget converges; nothing written twice; writes ≤ what was left to do",
			quick:    true, run: (*matrix).leaderRow},
	)
}

// rowIDs are the ids of every row.
func rowIDs() []string {
	var ids []string
	for _, r := range rows(&full) {
		ids = append(ids, r.id)
	}
	return ids
}

// selected are the rows opts asks for.
func selected(opts *options) []rowSpec {
	var out []rowSpec
	for _, r := range rows(opts) {
		switch {
		case len(opts.only) > 0:
			if slices.Contains(opts.only, r.id) {
				out = append(out, r)
			}
		case !opts.quick || r.quick:
			out = append(out, r)
		}
	}
	return out
}
