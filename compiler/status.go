package compiler

import (
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// status reads emit: the fields written under the custom resource's
// .status (emit.status), the Blueprint's own conditions (emit.conditions)
// and what Ready means (emit.readyWhen).
func (d *decoder) status(top *yamlpos.Map) {
	n := top.Get("emit")
	if n == nil {
		return
	}
	o := d.Map(n, "emit")
	d.Only(o, "status", "conditions", "readyWhen")
	if o == nil {
		return
	}
	if s := o.Get("status"); s != nil {
		if s.Kind != yaml.MappingNode {
			d.add(d.Pos(s), diag.WrongType, "", "emit.status must be a map, not %s", describe(s))
		} else {
			d.bp.Status = d.value(s)
			for _, f := range d.bp.Status.Fields {
				switch f.Key {
				case "conditions":
					d.add(f.KeyPos, diag.InvalidValue, "declare conditions under emit.conditions, each with a type and a status", "emit.status.conditions is written by the runtime")
				case "observedGeneration":
					d.add(f.KeyPos, diag.InvalidValue, "choose another name", "emit.status.%s is written by the runtime", f.Key)
				}
			}
		}
	}
	if c := o.Get("conditions"); c != nil {
		d.conditions(c)
	}
	if r := o.Get("readyWhen"); r != nil {
		d.bp.ReadyWhen = d.conditionList(r, "emit.readyWhen")
	}
}

// builtinConditions are the condition types the runtime writes itself.
var builtinConditions = map[string]bool{"Ready": true, "Progressing": true, "Degraded": true}

var (
	// conditionTypeRE is an UpperCamelCase condition type, as Kubernetes
	// spells its own (Available, PodScheduled).
	conditionTypeRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	// ReasonRE is what metav1.Condition accepts as a reason.
	reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
)

// maxConditionType is the longest type metav1.Condition accepts.
const maxConditionType = 316

// conditions reads emit.conditions: a list of type, status, and optionally
// reason and message.
func (d *decoder) conditions(n *yaml.Node) {
	items := d.List(n, "emit.conditions")
	seen := map[string]ir.Pos{}
	for i, item := range items {
		path := fmt.Sprintf("emit.conditions[%d]", i)
		o := d.Map(item, path)
		if o == nil {
			continue
		}
		d.Only(o, "type", "status", "reason", "message")
		c := &ir.Condition{Pos: d.Pos(item)}
		t, tn := d.Required(o, "type", "name the condition, such as type: DatabaseReady")
		if tn != nil && t != "" {
			c.Pos, c.Type = d.Pos(tn), t
			path = "emit.conditions[" + t + "]"
			switch {
			case builtinConditions[t]:
				hint := "choose another type"
				if t == "Ready" {
					hint = "write what Ready means in emit.readyWhen"
				}
				d.add(c.Pos, diag.InvalidValue, hint, "condition type %s is written by the runtime", t)
			case !conditionTypeRE.MatchString(t) || len(t) > maxConditionType:
				d.add(c.Pos, diag.InvalidValue, "write an UpperCamelCase word, such as "+suggestType(t), "condition type %q is not UpperCamelCase", t)
			default:
				if first, dup := seen[t]; dup {
					d.add(c.Pos, diag.DuplicateName, "give each condition its own type", "duplicate condition type %s, first declared at %s", t, first)
				} else {
					seen[t] = c.Pos
				}
			}
		}
		if s := o.Get("status"); s == nil || yamlpos.IsNull(s) {
			d.add(c.Pos, diag.MissingField, "add status: ${...}, a bool that says whether the condition holds", "%s.status is required", path)
		} else if v := d.value(s); v.Kind != ir.Expression {
			d.add(v.Pos, diag.WrongType, "write ${...} around a bool, such as ${deployment.status.readyReplicas > 0}", "%s.status must be one ${...} expression", path)
		} else {
			c.Status = v.Expr
		}
		c.Reason = d.conditionText(o, "reason", path)
		c.Message = d.conditionText(o, "message", path)
		if c.Reason != nil {
			if s, ok := c.Reason.Literal.(string); ok && c.Reason.Kind == ir.Literal && (!reasonRE.MatchString(s) || len(s) > 1024) {
				d.add(c.Reason.Pos, diag.InvalidValue, "write an UpperCamelCase word, such as "+suggestType(s), "%s.reason %q is not a condition reason", path, s)
			}
		}
		if c.Status != nil {
			// Checked even when its type is wrong: every mistake at once.
			d.bp.Conditions = append(d.bp.Conditions, c)
		}
	}
}

// conditionText reads a condition's reason or message: a string, which may
// hold ${...}.
func (d *decoder) conditionText(o *yamlpos.Map, key, path string) *ir.Value {
	n := o.Get(key)
	if n == nil || yamlpos.IsNull(n) {
		return nil
	}
	v := d.value(n)
	switch v.Kind {
	case ir.Expression, ir.Interpolation:
		return v
	case ir.Literal:
		if _, ok := v.Literal.(string); ok {
			return v
		}
	}
	d.add(v.Pos, diag.WrongType, "", "%s.%s must be a string, not %s", path, key, describe(n))
	return nil
}

// suggestType turns a name into an UpperCamelCase one for hints:
// database-ready becomes DatabaseReady.
func suggestType(s string) string {
	id := suggestID(s)
	if id == "deployment" && !strings.EqualFold(s, id) {
		return "DatabaseReady" // suggestID found nothing to keep
	}
	out := []byte(id)
	if out[0] >= 'a' && out[0] <= 'z' {
		out[0] -= 'a' - 'A'
	}
	return string(out)
}

// conditionList reads a list of boolean ${...} that must all hold, or one.
// Unlike condition, the parts stay apart, so that a message can say which
// of them does not hold.
func (d *decoder) conditionList(n *yaml.Node, path string) []*ir.Expr {
	if n.Kind != yaml.SequenceNode {
		val := d.value(n)
		if val.Kind != ir.Expression {
			d.add(val.Pos, diag.WrongType, "write ${...} around a boolean expression", "%s must be one ${...} expression, or a list of them", path)
			return nil
		}
		return []*ir.Expr{val.Expr}
	}
	if len(n.Content) == 0 {
		d.add(d.Pos(n), diag.MissingField, "give at least one ${...}, or leave the field out", "%s is an empty list", path)
		return nil
	}
	var out []*ir.Expr
	for i, item := range n.Content {
		val := d.value(item)
		if val.Kind != ir.Expression {
			d.add(val.Pos, diag.WrongType, "write ${...} around a boolean expression", "%s[%d] must be one ${...} expression", path, i)
			continue
		}
		out = append(out, val.Expr)
	}
	return out
}
