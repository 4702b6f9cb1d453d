package compiler

import (
	"regexp"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// stepNameRE is a step's name: it travels in requests, idempotency keys
// and the status, so it is a plain word, as a condition reason is.
var stepNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,62}$`)

// workflow reads reconcile.workflow: the steps a reconciler drives the
// custom resource through, their backoff limits, how many step runs the
// status keeps, and when a finished custom resource is deleted.
func (d *decoder) workflow(o *yamlpos.Map, r *ir.Reconcile) {
	n := o.Get("workflow")
	if n == nil {
		return
	}
	wo := d.Map(n, "reconcile.workflow")
	if wo == nil {
		return
	}
	d.Only(wo, "steps", "backoffLimit", "ttlSecondsAfterFinished", "historyLimit")
	w := &ir.Workflow{Pos: d.Pos(n), BackoffLimit: ir.DefaultWorkflowBackoffLimit, HistoryLimit: ir.DefaultWorkflowHistoryLimit}
	switch {
	case r.Remote == nil:
		d.add(d.Pos(o.KeyNode("workflow")), diag.InvalidValue, "set reconcile.url, service, go or api: the reconciler runs the steps", "reconcile.workflow without a reconciler to call")
	case r.Remote.Controller != nil:
		d.add(d.Pos(o.KeyNode("workflow")), diag.InvalidValue, "leave it out: a controller-runtime reconciler keeps its own state", "reconcile.workflow cannot be combined with reconcile.go.controller")
	}
	if v, ok := d.count(wo, "reconcile.workflow", "backoffLimit", 0); ok {
		w.BackoffLimit = v
	}
	if v, ok := d.count(wo, "reconcile.workflow", "ttlSecondsAfterFinished", 0); ok {
		w.TTLSecondsAfterFinished = &v
	}
	if v, ok := d.count(wo, "reconcile.workflow", "historyLimit", 1); ok {
		if v > ir.MaxWorkflowHistoryLimit {
			d.add(d.Pos(wo.Get("historyLimit")), diag.InvalidValue, "older step runs are summed up in status.workflow.summary; keep the status small", "reconcile.workflow.historyLimit %d is more than %d", v, ir.MaxWorkflowHistoryLimit)
		} else {
			w.HistoryLimit = v
		}
	}
	sn := wo.Get("steps")
	if sn == nil {
		d.add(d.Pos(n), diag.MissingField, "list the steps, e.g. steps: [{name: Reserve}, {name: Charge}]", "reconcile.workflow.steps is required")
	}
	seen := map[string]bool{}
	items := d.List(sn, "reconcile.workflow.steps")
	if sn != nil && len(items) == 0 && (yamlpos.IsNull(sn) || yamlpos.Resolve(sn).Kind == yaml.SequenceNode) {
		d.add(d.Pos(sn), diag.InvalidValue, "list at least one step", "reconcile.workflow.steps is empty")
	}
	for i, item := range items {
		path := "reconcile.workflow.steps[" + itoa(i) + "]"
		so := d.Map(item, path)
		if so == nil {
			continue
		}
		d.Only(so, "name", "backoffLimit")
		st := &ir.WorkflowStep{Pos: d.Pos(item)}
		name, nn := d.String(so, "name", true)
		switch {
		case name == "":
			continue
		case !stepNameRE.MatchString(name):
			d.add(d.Pos(nn), diag.InvalidValue, "use a word of letters, digits and '-', starting with a letter, e.g. Charge", "%s.name %q is not a step name", path, name)
		case seen[name]:
			d.add(d.Pos(nn), diag.DuplicateName, "give each step its own name", "%s.name %q names another step too", path, name)
		}
		seen[name] = true
		st.Name = name
		if v, ok := d.count(so, path, "backoffLimit", 0); ok {
			st.BackoffLimit = &v
		}
		w.Steps = append(w.Steps, st)
	}
	r.Workflow = w
}

// count reads an optional integer field of o that is at least min.
func (d *decoder) count(o *yamlpos.Map, path, key string, min int64) (int64, bool) {
	n := o.Get(key)
	if n == nil {
		return 0, false
	}
	v, ok := d.Int(n, path+"."+key)
	if !ok {
		return 0, false
	}
	if v < min {
		d.add(d.Pos(n), diag.InvalidValue, "", "%s.%s must be at least %d, not %d", path, key, min, v)
		return 0, false
	}
	return v, true
}
