package compiler

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// podTemplates are where the workload kinds keep their pod template, and
// the restart policies its pods may have.
var podTemplates = map[string]struct {
	path    []string
	restart []string
}{
	"apps/Deployment":  {[]string{"spec", "template"}, []string{"Always"}},
	"apps/ReplicaSet":  {[]string{"spec", "template"}, []string{"Always"}},
	"apps/StatefulSet": {[]string{"spec", "template"}, []string{"Always"}},
	"apps/DaemonSet":   {[]string{"spec", "template"}, []string{"Always"}},
	"batch/Job":        {[]string{"spec", "template"}, []string{"OnFailure", "Never"}},
	"batch/CronJob":    {[]string{"spec", "jobTemplate", "spec", "template"}, []string{"OnFailure", "Never"}},
}

// checkWorkload reports, in a workload's template, the two mistakes the
// API server would refuse on every reconcile that the literals already
// show: pods whose restart policy the kind does not take (a Job's must
// say OnFailure or Never), and a selector a literal label
// of the pod template contradicts. What an expression decides is left to
// the API server, and to inrun simulate, which validates the same.
func (c *checker) checkWorkload(child *ir.Child) {
	pt, ok := podTemplates[child.Group+"/"+child.Kind]
	if !ok || !child.BuiltIn || child.Template == nil {
		return
	}
	tmpl := lookupPath(child.Template, pt.path...)
	if tmpl == nil || tmpl.Kind != ir.Map {
		return
	}
	where := strings.Join(pt.path, ".")
	if spec, specPos := fieldOf(tmpl, "spec"); spec != nil && spec.Kind == ir.Map {
		policies := strings.Join(pt.restart, " or ")
		switch rp := spec.Lookup("restartPolicy"); {
		case rp == nil && pt.restart[0] != "Always":
			c.errs.Add(specPos, diag.MissingField, fmt.Sprintf("add restartPolicy: %s to %s.spec", pt.restart[0], where),
				"child %q: a %s's pod template must set restartPolicy, %s: the API server refuses it left out (a pod's default, Always)", child.ID, child.Kind, policies)
		case rp != nil:
			if s, ok := literalString(rp); ok && !slices.Contains(pt.restart, s) {
				c.errs.Add(rp.Pos, diag.InvalidValue, "write "+policies,
					"child %q: a %s's pods may restart %s only, not %q", child.ID, child.Kind, policies, s)
			}
		}
	}
	if child.Group == "apps" {
		c.checkSelectorMatches(child, lookupPath(child.Template, "spec", "selector", "matchLabels"), lookupPath(tmpl, "metadata", "labels"))
	}
}

// checkSelectorMatches reports a selector's label the pod template's
// labels do not have, or have with another literal value.
func (c *checker) checkSelectorMatches(child *ir.Child, selector, labels *ir.Value) {
	if selector == nil || selector.Kind != ir.Map || (labels != nil && labels.Kind != ir.Map) {
		return
	}
	for _, f := range selector.Fields {
		if len(validation.IsQualifiedName(f.Key)) > 0 {
			continue // reported as no label key
		}
		label := labels.Lookup(f.Key)
		if label == nil {
			c.errs.Add(f.KeyPos, diag.InvalidValue, fmt.Sprintf("add the label %s to spec.template.metadata.labels", f.Key),
				"child %q: the %s's selector does not match its pod template: the template has no label %s", child.ID, child.Kind, f.Key)
			continue
		}
		want, wantLit := literalString(f.Value)
		got, gotLit := literalString(label)
		if wantLit && gotLit && want != got {
			c.errs.Add(f.Value.Pos, diag.InvalidValue, fmt.Sprintf("write the same value in spec.selector.matchLabels and spec.template.metadata.labels (%q)", got),
				"child %q: the %s's selector does not match its pod template: %s is %q here and %q in the template", child.ID, child.Kind, f.Key, want, got)
		}
	}
}

// lookupPath follows keys through maps from v; nil when one is missing.
func lookupPath(v *ir.Value, keys ...string) *ir.Value {
	for _, k := range keys {
		if v == nil || v.Kind != ir.Map {
			return nil
		}
		v = v.Lookup(k)
	}
	return v
}

// fieldOf returns the field key of map v and where the key is written.
func fieldOf(v *ir.Value, key string) (*ir.Value, ir.Pos) {
	for _, f := range v.Fields {
		if f.Key == key {
			return f.Value, f.KeyPos
		}
	}
	return nil, ir.Pos{}
}

// checkSameObject reports two children that are always one object: the
// same kind, and names and namespaces written alike, with no includeWhen
// to choose between them. Each pass would give the object to the first,
// and fail the other.
func (c *checker) checkSameObject() {
	seen := map[string]*ir.Child{}
	for _, child := range c.bp.Children {
		if child.External || child.IncludeWhen != nil || len(child.ForEach) > 0 || child.Template == nil || !kindResolved(child) {
			continue
		}
		name := valueText(lookupPath(child.Template, "metadata", "name"))
		if name == "" {
			continue
		}
		key := child.Group + "/" + child.Kind + " " + valueText(lookupPath(child.Template, "metadata", "namespace")) + "/" + name
		if first, dup := seen[key]; dup {
			c.errs.Add(child.Pos, diag.InvalidValue, "give each its own metadata.name, or an includeWhen that leaves one out",
				"children %q and %q are the same %s: both are named %s", first.ID, child.ID, child.Kind, name)
			continue
		}
		seen[key] = child
	}
}

// valueText is how a name or namespace is written: the literal, or the
// expressions' source; "" when it is neither.
func valueText(v *ir.Value) string {
	switch {
	case v == nil:
		return ""
	case v.Kind == ir.Literal:
		return fmt.Sprint(v.Literal)
	case v.Kind == ir.Expression:
		return "${" + v.Expr.Source + "}"
	case v.Kind == ir.Interpolation:
		var b strings.Builder
		for _, part := range v.Parts {
			if part.Expr != nil {
				b.WriteString("${" + part.Expr.Source + "}")
			} else {
				b.WriteString(part.Text)
			}
		}
		return b.String()
	}
	return ""
}
