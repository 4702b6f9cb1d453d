package reconciler

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// Conditions is what an Evaluation offers for emit.conditions and
// emit.readyWhen. The interpreter's has it; an operator inrun build
// generates has it when its Blueprint declares either.
type Conditions interface {
	// Condition evaluates custom condition c: its status, a bool or a
	// string, and its reason and message, "" where c has none.
	Condition(c *ir.Condition) (status any, reason, message string, err error)
	// ReadyWhen evaluates x, one of emit.readyWhen.
	ReadyWhen(x *ir.Expr) (bool, error)
}

// The reasons of custom conditions and of Ready under emit.readyWhen.
const (
	// ReasonEvaluated: the condition's status expression gave its status.
	ReasonEvaluated = "Evaluated"
	// ReasonWaiting: what the condition reads is not there yet.
	ReasonWaiting = "Waiting"
	// ReasonExpressionFailed: the condition's expression failed; Degraded
	// says how.
	ReasonExpressionFailed = "ExpressionFailed"
	// ReasonReadyWhenTrue and ReasonReadyWhenFalse: Ready as
	// emit.readyWhen says.
	ReasonReadyWhenTrue  = "ReadyWhenTrue"
	ReasonReadyWhenFalse = "ReadyWhenFalse"
)

// reasonRE is what metav1.Condition accepts as a reason.
var reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// readiness is what emit.readyWhen says this pass.
type readiness struct {
	ready bool
	// failing says, for each part that does not hold, why.
	failing []string
}

// evalConditions evaluates emit.conditions and emit.readyWhen, once the
// children are rendered, into p.custom and p.readyWhen. Expressions that
// fail are reported in Degraded.
func (p *pass) evalConditions() {
	if len(p.bp.Conditions) == 0 && len(p.bp.ReadyWhen) == 0 {
		return
	}
	ev, ok := p.eval.(Conditions)
	if !ok {
		p.rep.Errors = append(p.rep.Errors, errors.New("this operator's Renderer has no emit.conditions or emit.readyWhen: generate it again with this version of inrun build"))
		return
	}
	for _, c := range p.bp.Conditions {
		p.custom = append(p.custom, p.condition(ev, c))
	}
	if len(p.bp.ReadyWhen) == 0 {
		return
	}
	r := &readiness{ready: true}
	for _, x := range p.bp.ReadyWhen {
		why := ""
		if waits := p.waitsFor(x); waits != "" {
			why = waits
		} else if ok, err := ev.ReadyWhen(x); err != nil {
			why = fmt.Sprintf("${%s} failed", x.Source)
			if expr.DataPending(err) {
				why = pendingData(err)
			} else {
				p.rep.Errors = append(p.rep.Errors, fmt.Errorf("emit.readyWhen: %w", err))
			}
		} else if !ok {
			why = fmt.Sprintf("${%s} is false", x.Source)
		}
		if why != "" {
			r.ready = false
			r.failing = append(r.failing, why)
		}
	}
	p.readyWhen = r
}

// condition evaluates one custom condition. What it reads that is not
// there yet, or an expression that fails, makes it Unknown.
func (p *pass) condition(ev Conditions, c *ir.Condition) metav1.Condition {
	out := metav1.Condition{Type: c.Type, Status: metav1.ConditionUnknown}
	if waits := p.waitsFor(c.Exprs()...); waits != "" {
		out.Reason, out.Message = ReasonWaiting, waits
		return out
	}
	value, reason, message, err := ev.Condition(c)
	var status metav1.ConditionStatus
	if err == nil {
		status, err = conditionStatus(c, value)
	}
	switch {
	case expr.DataPending(err):
		out.Reason, out.Message = ReasonWaiting, pendingData(err)
		return out
	case err != nil:
		err = fmt.Errorf("emit.conditions[%s]: %w", c.Type, err)
		p.rep.Errors = append(p.rep.Errors, err)
		out.Reason, out.Message = ReasonExpressionFailed, err.Error()
		return out
	}
	out.Status, out.Reason, out.Message = status, ReasonEvaluated, message
	if c.Reason != nil {
		if reasonRE.MatchString(reason) && len(reason) <= 1024 {
			out.Reason = reason
		} else {
			p.rep.Errors = append(p.rep.Errors, fmt.Errorf("%s: emit.conditions[%s].reason %q is not a condition reason: one word of letters, digits, _ , or : starting with a letter", c.Reason.Pos, c.Type, reason))
		}
	}
	if c.Message == nil {
		out.Message = fmt.Sprintf("${%s} is %s", c.Status.Source, strings.ToLower(string(out.Status)))
	}
	return out
}

// conditionStatus reads what a condition's status expression gave.
func conditionStatus(c *ir.Condition, v any) (metav1.ConditionStatus, error) {
	switch t := v.(type) {
	case bool:
		if t {
			return metav1.ConditionTrue, nil
		}
		return metav1.ConditionFalse, nil
	case nil:
		return metav1.ConditionUnknown, nil
	case string:
		switch s := metav1.ConditionStatus(t); s {
		case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
			return s, nil
		}
	}
	got := fmt.Sprint(v)
	if s, ok := v.(string); ok {
		got = fmt.Sprintf("%q", s)
	}
	return "", &expr.EvalError{Expr: c.Status, Err: fmt.Errorf("a condition's status must be a bool, or True, False or Unknown, not %s", got)}
}

// waitsFor says what the expressions wait for before they can be
// evaluated: children that have no live object, or that includeWhen left
// out; "" when nothing.
func (p *pass) waitsFor(xs ...*ir.Expr) string {
	var missing, excluded []string
	seen := map[string]bool{}
	for _, x := range xs {
		for _, r := range x.Refs {
			if seen[r] || p.bp.Child(r) == nil {
				continue
			}
			seen[r] = true
			_, isList := p.items[r]
			switch {
			case p.excluded[r]:
				excluded = append(excluded, r)
			case p.live[r] == nil && !isList:
				missing = append(missing, r)
			}
		}
	}
	var why []string
	if len(missing) > 0 {
		why = append(why, "waiting for "+strings.Join(missing, ", "))
	}
	if len(excluded) > 0 {
		why = append(why, "reads "+strings.Join(excluded, ", ")+", which includeWhen leaves out")
	}
	return strings.Join(why, "; ")
}

// conditionOf reads a condition of a live status as
// runtime.DefaultUnstructuredConverter.FromUnstructured would, and
// reports false when that would fail. The usual condition (strings, an
// int64 generation, an RFC 3339 time) is read directly: a pass reads
// every condition of its custom resource, and the converter's reflection
// was a few percent of the runtime's CPU. Anything else is left to the
// converter.
func conditionOf(m map[string]any) (metav1.Condition, bool) {
	var c metav1.Condition
	direct := true
	str := func(k string) string {
		v, present := m[k]
		s, ok := v.(string)
		if present && !ok {
			direct = false
		}
		return s
	}
	c.Type = str("type")
	c.Status = metav1.ConditionStatus(str("status"))
	c.Reason = str("reason")
	c.Message = str("message")
	if v, present := m["observedGeneration"]; present {
		g, ok := v.(int64)
		direct = direct && ok
		c.ObservedGeneration = g
	}
	if v, present := m["lastTransitionTime"]; present && v != nil {
		s, ok := v.(string)
		t, err := time.Parse(time.RFC3339, s)
		direct = direct && ok && err == nil
		c.LastTransitionTime = metav1.NewTime(t.Local())
	}
	if direct {
		return c, true
	}
	c = metav1.Condition{}
	return c, runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil
}

// conditionJSON is c as runtime.DefaultUnstructuredConverter.ToUnstructured
// writes it, without its reflection.
func conditionJSON(c *metav1.Condition) map[string]any {
	m := make(map[string]any, 6)
	m["type"] = c.Type
	m["status"] = string(c.Status)
	if c.ObservedGeneration != 0 {
		m["observedGeneration"] = c.ObservedGeneration
	}
	m["lastTransitionTime"] = c.LastTransitionTime.ToUnstructured()
	m["reason"] = c.Reason
	m["message"] = c.Message
	return m
}
