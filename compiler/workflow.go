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

// stepNameRE is a step's name: it travels in requests, idempotency keys
// and the status, so it is a plain word, as a condition reason is.
var stepNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,62}$`)

// workflow reads reconcile.workflow: the steps a reconciler, or the
// Blueprint's own resources, drive the custom resource through, their
// backoff limits and deadlines, how many step runs the status keeps, and
// when a finished custom resource is deleted. What steps' resources name is
// checked with the children (checker.checkWorkflow).
func (d *decoder) workflow(o *yamlpos.Map, r *ir.Reconcile) {
	n := o.Get("workflow")
	if n == nil {
		return
	}
	wo := d.Map(n, "reconcile.workflow")
	if wo == nil {
		return
	}
	d.Only(wo, "steps", "backoffLimit", "backoffSeconds", "ttlSecondsAfterFinished", "historyLimit")
	w := &ir.Workflow{Pos: d.Pos(n), BackoffLimit: ir.DefaultWorkflowBackoffLimit, BackoffSeconds: ir.DefaultWorkflowBackoffSeconds, HistoryLimit: ir.DefaultWorkflowHistoryLimit}
	switch {
	case r.Remote == nil:
		// Driven by templates: each step names the resources it creates.
	case r.Remote.Controller != nil:
		d.add(d.Pos(o.KeyNode("workflow")), diag.InvalidValue, "leave it out: a controller-runtime reconciler keeps its own state", "reconcile.workflow cannot be combined with reconcile.go.controller")
	}
	if v, ok := d.count(wo, "reconcile.workflow", "backoffLimit", 0); ok {
		w.BackoffLimit = v
	}
	if v, ok := d.count(wo, "reconcile.workflow", "backoffSeconds", 0); ok {
		w.BackoffSeconds = v
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
	taken := map[string]string{} // resource id → the step that names it
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
		d.Only(so, "name", "backoffLimit", "backoffSeconds", "timeoutSeconds", "resources", "failedWhen")
		st := &ir.WorkflowStep{Pos: d.Pos(item)}
		name, nn := d.String(so, "name", true)
		switch {
		case name == "":
			continue
		case len(name) > 63:
			d.add(d.Pos(nn), diag.InvalidValue, "shorten it to 63 characters at most", "%s.name %q is %d characters long, more than 63", path, name, len(name))
		case !stepNameRE.MatchString(name):
			d.add(d.Pos(nn), diag.InvalidValue, "use a word of letters, digits and '-', starting with a letter, e.g. Charge", "%s.name %q is not a step name", path, name)
		case seen[name]:
			d.add(d.Pos(nn), diag.DuplicateName, "give each step its own name", "%s.name %q names another step too", path, name)
		}
		seen[name] = true
		st.Name = name
		if v, ok := d.count(so, path, "backoffLimit", 0); ok {
			st.BackoffLimit = &v
			if r.Remote == nil {
				d.add(d.Pos(so.Get("backoffLimit")), diag.InvalidValue, "leave it out, or set the retries in the resource itself (a Job's spec.backoffLimit)",
					"%s.backoffLimit: a step without a reconciler makes no attempts to retry", path)
			}
		}
		if v, ok := d.count(so, path, "backoffSeconds", 0); ok {
			st.BackoffSeconds = &v
			if r.Remote == nil {
				d.add(d.Pos(so.Get("backoffSeconds")), diag.InvalidValue, "leave it out: a step without a reconciler makes no attempts to retry",
					"%s.backoffSeconds: a step without a reconciler makes no attempts to retry", path)
			}
		}
		if v, ok := d.count(so, path, "timeoutSeconds", 1); ok {
			st.TimeoutSeconds = &v
		}
		d.stepResources(so, st, path, r.Remote != nil, taken)
		if fw := so.Get("failedWhen"); fw != nil {
			st.FailedWhen = d.conditionList(fw, path+".failedWhen")
			if r.Remote != nil {
				d.add(d.Pos(so.KeyNode("failedWhen")), diag.InvalidValue, `answer "step": {"phase": "Failed"} from the reconciler instead`,
					"%s.failedWhen is for a workflow without a reconciler: the reconciler says when a step failed", path)
			}
		}
		w.Steps = append(w.Steps, st)
	}
	if r.Remote == nil && wo.Get("backoffLimit") != nil {
		d.add(d.Pos(wo.Get("backoffLimit")), diag.InvalidValue, "leave it out, or set the retries in the resources themselves (a Job's spec.backoffLimit)",
			"reconcile.workflow.backoffLimit: a workflow without a reconciler makes no attempts to retry")
	}
	if r.Remote == nil && wo.Get("backoffSeconds") != nil {
		d.add(d.Pos(wo.Get("backoffSeconds")), diag.InvalidValue, "leave it out: a workflow without a reconciler makes no attempts to retry",
			"reconcile.workflow.backoffSeconds: a workflow without a reconciler makes no attempts to retry")
	}
	r.Workflow = w
}

// stepResources reads a step's resources: the ids of the Blueprint's
// resources it creates, in a workflow without a reconciler.
// taken maps each id named so far to its step's name: a resource belongs
// to one step.
func (d *decoder) stepResources(so *yamlpos.Map, st *ir.WorkflowStep, path string, remote bool, taken map[string]string) {
	n := so.Get("resources")
	if n == nil {
		if !remote {
			d.add(d.Pos(so.KeyNode("name")), diag.MissingField, "name the ids of the resources this step creates, e.g. resources: [migrate]; or set reconcile.url, service, go or api to run the steps",
				"%s.resources is required in a workflow without a reconciler", path)
		}
		return
	}
	if remote {
		d.add(d.Pos(so.KeyNode("resources")), diag.InvalidValue, "return the step's objects in the reconciler's Result, or drop the reconciler to drive the steps by templates",
			"%s.resources is for a workflow without a reconciler: the reconciler does each step", path)
		return
	}
	items := d.List(n, path+".resources")
	if len(items) == 0 && (yamlpos.IsNull(n) || yamlpos.Resolve(n).Kind == yaml.SequenceNode) {
		d.add(d.Pos(n), diag.InvalidValue, "name at least one resource id", "%s.resources is empty", path)
	}
	for i, item := range items {
		id, ok := d.Str(item, path+".resources["+itoa(i)+"]")
		if !ok || id == "" {
			continue
		}
		c := d.bp.Child(id)
		switch {
		case c == nil:
			var ids []string
			for _, ch := range d.bp.Children {
				if ch.ID != "" && !ch.External {
					ids = append(ids, ch.ID)
				}
			}
			d.add(d.Pos(item), diag.UnknownReference, "name one of the Blueprint's resource ids: "+strings.Join(ids, ", "),
				"%s.resources[%d] %q is no resource of this Blueprint", path, i, id)
			continue
		case c.External:
			d.add(d.Pos(item), diag.InvalidValue, "name a template resource: an externalRef is read, never created",
				"%s.resources[%d] %q is an externalRef", path, i, id)
			continue
		case taken[id] != "":
			d.add(d.Pos(item), diag.DuplicateName, "keep it in one step: a resource is created by the step that names it",
				"%s.resources[%d] %q is a resource of step %s too", path, i, id, taken[id])
			continue
		}
		taken[id] = st.Name
		st.Resources = append(st.Resources, id)
	}
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

// checkWorkflow checks, once the children are ordered, that no resource of
// a step reads one of a later step: it would wait for an object its own
// step's success is needed to create.
func (c *checker) checkWorkflow() {
	wf := c.workflow()
	if wf == nil {
		return
	}
	for _, ch := range c.bp.Children {
		i := wf.StepOf(ch.ID)
		if i < 0 {
			continue
		}
		for _, dep := range ch.DependsOn {
			if j := wf.StepOf(dep); j > i {
				c.errs.Add(ch.Pos, diag.InvalidValue, fmt.Sprintf("move %s to step %s or a later one, or %s to step %s or an earlier one", ch.ID, wf.Steps[j].Name, dep, wf.Steps[i].Name),
					"resource %q of step %s reads %q, which step %s creates later: it would wait forever", ch.ID, wf.Steps[i].Name, dep, wf.Steps[j].Name)
			}
		}
	}
}
