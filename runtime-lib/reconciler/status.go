package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// The condition types the runtime maintains on every custom resource.
const (
	ConditionReady       = "Ready"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
	// ConditionDeprecated is True on the custom resources of a Blueprint
	// run as a deprecated pattern version (ir.Blueprint.Deprecated).
	ConditionDeprecated = "Deprecated"
	// ReasonPatternDeprecated is its reason, and the reason of the Event
	// recorded when it is set.
	ReasonPatternDeprecated = "PatternDeprecated"
)

// maxMessage bounds condition messages, which the API server stores whole.
const maxMessage = 2048

// writeStatus computes emit.status and the conditions, and writes them
// when they differ from what the custom resource already says.
func (p *pass) writeStatus(ctx context.Context) error {
	liveStatus, _, _ := unstructured.NestedMap(p.cr.Object, "status")
	status := map[string]any{}
	for k, v := range p.remoteState.status {
		status[k] = v
	}
	if !p.remoteState.called && p.bp.Reconcile != nil && p.bp.Reconcile.Remote != nil {
		// The call failed: keep what the reconciler reported last, and
		// what the failed call asks to keep.
		for k, v := range liveStatus {
			if k != "conditions" && k != "observedGeneration" && (p.bp.Status == nil || p.bp.Status.Lookup(k) == nil) {
				status[k] = v
			}
		}
		for k, v := range p.remoteState.keepStatus {
			status[k] = v
		}
	}
	if p.bp.Status != nil {
		for _, f := range p.bp.Status.Fields {
			if !p.statusFieldReady(f.Value) {
				continue
			}
			v, err := p.eval.Status(f)
			if err != nil {
				if expr.DataPending(err) {
					p.pendingStatus = append(p.pendingStatus, "status."+f.Key+" ("+pendingData(err)+")")
				} else {
					p.rep.Errors = append(p.rep.Errors, fmt.Errorf("emit.status.%s: %w", f.Key, err))
				}
				if old, ok := liveStatus[f.Key]; ok {
					status[f.Key] = old // keep the last good value
				}
				continue
			}
			if v != nil {
				status[f.Key] = v
			}
		}
	}
	if p.statusHook != nil {
		p.hookStatus(ctx, status, liveStatus)
	}
	if p.wf != nil && p.wf.bad == nil {
		status[WorkflowField] = p.wf.status()
	}
	status["observedGeneration"] = p.cr.GetGeneration()
	status["conditions"] = p.conditions(liveStatus)

	if equalJSON(liveStatus, status) {
		return nil
	}
	err := p.applyStatus(ctx, status)
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil {
		return err
	}
	// The API server refused this status (too large, or not what the CRD
	// declares). The conditions travel in the same write, so without a
	// second one the custom resource would go on saying it is Ready: keep
	// the status it last accepted and say what is wrong.
	err = fmt.Errorf("writing status: %w", err)
	p.rep.Errors = append(p.rep.Errors, err)
	if ferr := p.writeConditions(ctx); ferr != nil {
		return fmt.Errorf("%w; reporting it in the conditions failed too: %v", err, ferr)
	}
	return err
}

// writeConditions writes this pass's conditions beside the status the
// custom resource already has: what the runtime says when it cannot (or
// need not) write the rest.
func (p *pass) writeConditions(ctx context.Context) error {
	liveStatus, _, _ := unstructured.NestedMap(p.cr.Object, "status")
	status := map[string]any{}
	for k, v := range liveStatus {
		status[k] = v
	}
	status["observedGeneration"] = p.cr.GetGeneration()
	status["conditions"] = p.conditions(liveStatus)
	if equalJSON(liveStatus, status) {
		return nil
	}
	return p.applyStatus(ctx, status)
}

// applyStatus writes status with server-side apply, through the status
// subresource when the CRD has one. The answer is asked for as metadata
// only (protobuf, where the custom resource itself has only JSON): the
// pass goes on with the status it wrote, which is all it reads of the
// answer, and decoding the whole custom resource unstructured cost more
// than the rest of the write.
func (p *pass) applyStatus(ctx context.Context, status map[string]any) error {
	body := map[string]any{
		"apiVersion": p.cr.GetAPIVersion(),
		"kind":       p.cr.GetKind(),
		"metadata":   map[string]any{"name": p.cr.GetName()},
		"status":     status,
	}
	if ns := p.cr.GetNamespace(); ns != "" {
		body["metadata"].(map[string]any)["namespace"] = ns
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	answer := &metav1.PartialObjectMetadata{}
	answer.SetGroupVersionKind(p.cr.GroupVersionKind())
	answer.SetNamespace(p.cr.GetNamespace())
	answer.SetName(p.cr.GetName())
	patch := client.RawPatch(types.ApplyPatchType, data)
	before := p.cr.GetResourceVersion()
	// Remembered before the write, not after it: the write's watch event
	// may reach CaughtUp before this goroutine runs again, and a status
	// remembered after that would be kept until the custom resource next
	// changed (a tenth of them at 1,000 custom resources, in the
	// benchmark's heap profile).
	written := p.wroteStatus(p.cr, before, status)
	if p.bp.Resource.StatusSubresource {
		err = p.opts.Client.Status().Patch(ctx, answer, patch, client.FieldOwner(p.opts.FieldOwner), client.ForceOwnership)
	} else {
		err = p.opts.Client.Patch(ctx, answer, patch, client.FieldOwner(p.opts.FieldOwner), client.ForceOwnership)
	}
	if err != nil || answer.GetResourceVersion() == before {
		// Failed, or changed nothing: no watch event will come for it.
		p.forgetStatus(p.cr, written)
	}
	if err != nil {
		return err
	}
	p.rep.Writes++
	p.cr.Object["status"] = status
	// Beside the children's writes, so that a log says why a custom
	// resource was written: from which version, and whether it changed.
	logr.FromContextOrDiscard(ctx).V(1).Info("wrote status", "resourceVersion", before, "now", answer.GetResourceVersion())
	return nil
}

// statusFieldReady reports whether every child a status field reads has a
// live object; fields that read a missing child are left out until it
// exists.
func (p *pass) statusFieldReady(v *ir.Value) bool {
	for _, x := range v.Exprs() {
		for _, r := range x.Refs {
			if _, isCollection := p.items[r]; p.bp.Child(r) != nil && p.live[r] == nil && !isCollection {
				return false
			}
		}
	}
	return true
}

// conditions computes Ready, Progressing and Degraded, and sets the
// remote reconciler's and the Blueprint's own conditions, keeping each
// condition's lastTransitionTime while its status holds.
func (p *pass) conditions(liveStatus map[string]any) []any {
	var conds []metav1.Condition
	if raw, ok := liveStatus["conditions"].([]any); ok {
		for _, c := range raw {
			m, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if cond, ok := conditionOf(m); ok {
				conds = append(conds, cond)
			}
		}
	}
	if p.remoteState.called {
		// The Result's conditions are the whole of the reconciler's part,
		// as its status is: one it stops returning is removed, as server-
		// side apply removes a list entry its manager stops applying.
		returned := map[string]bool{}
		for _, c := range p.remoteState.conditions {
			returned[c.Type] = true
		}
		conds = slices.DeleteFunc(conds, func(c metav1.Condition) bool {
			return !returned[c.Type] && !p.runtimeCondition(c)
		})
	}
	gen := p.cr.GetGeneration()
	now := metav1.NewTime(p.opts.Clock().UTC().Truncate(1e9))
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		if len(msg) > maxMessage {
			msg = msg[:maxMessage-3] + "..."
		}
		existing := meta.FindStatusCondition(conds, t)
		if existing == nil || existing.Status != s {
			meta.SetStatusCondition(&conds, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now})
			return
		}
		existing.Reason, existing.Message, existing.ObservedGeneration = reason, msg, gen
	}

	var waiting []string
	for _, id := range sortedKeys(p.rep.Pending) {
		waiting = append(waiting, id+" ("+p.rep.Pending[id]+")")
	}
	for _, id := range p.notReady {
		waiting = append(waiting, id+" (not ready)")
	}

	errs := p.rep.Errors
	if p.wf != nil && p.wf.endedBy != nil {
		errs = slices.DeleteFunc(slices.Clone(errs), func(e error) bool { return errors.Is(e, p.wf.endedBy) })
	}
	failed := len(errs) > 0
	if err := errors.Join(errs...); err != nil {
		set(ConditionDegraded, metav1.ConditionTrue, "ReconcileError", err.Error())
	} else if d := meta.FindStatusCondition(conds, ConditionDegraded); p.wf != nil && p.wf.idle && d != nil {
		// A workflow that called nothing, finished or waiting out a failed
		// attempt's backoff, says what its last call did.
		failed = d.Status == metav1.ConditionTrue
	} else {
		set(ConditionDegraded, metav1.ConditionFalse, "AsExpected", "")
	}
	wfFailed := p.wf != nil && p.wf.bad == nil && p.wf.st.Phase == WorkflowFailed
	// The messages say what there is: children, a reconciler, or both.
	children := len(p.bp.Children) > 0 || len(p.wanted) > 0
	converged, ready := "every child is applied", "every child is ready"
	if p.hasRemote() {
		called := fmt.Sprintf("the reconciler answered for generation %d", gen)
		converged, ready = called, called
		if children {
			converged, ready = called+" and every child is applied", called+" and every child is ready"
		}
	} else if !children {
		converged = fmt.Sprintf("generation %d is reconciled", gen)
		ready = converged
	}
	switch {
	case p.wf != nil && p.wf.bad == nil && !p.wf.finished() && templateSteps(p.bp):
		// The steps' resources are what the workflow waits for: it says
		// which step runs.
		set(ConditionProgressing, metav1.ConditionTrue, ReasonWorkflowRunning, p.wf.stepProgress())
	case wfFailed:
		set(ConditionProgressing, metav1.ConditionFalse, ReasonWorkflowFailed, p.wf.failedMessage())
	case len(waiting) > 0 || len(p.pendingStatus) > 0:
		set(ConditionProgressing, metav1.ConditionTrue, "Waiting", "waiting for "+strings.Join(append(waiting, p.pendingStatus...), ", "))
	case failed:
		set(ConditionProgressing, metav1.ConditionFalse, "ReconcileError", "see the Degraded condition")
	case p.wf != nil && p.wf.bad == nil && !p.wf.finished():
		set(ConditionProgressing, metav1.ConditionTrue, ReasonWorkflowRunning, p.wf.stepProgress())
	default:
		set(ConditionProgressing, metav1.ConditionFalse, "Converged", converged)
	}
	switch {
	case wfFailed:
		// A failed workflow is not ready, whether its last call was
		// answered or not: kubectl wait --for=condition=Ready must not
		// take it for done.
		set(ConditionReady, metav1.ConditionFalse, ReasonWorkflowFailed, p.wf.failedMessage())
	case failed:
		set(ConditionReady, metav1.ConditionFalse, "ReconcileError", "see the Degraded condition")
	case p.readyWhen != nil && p.readyWhen.ready:
		srcs := make([]string, len(p.bp.ReadyWhen))
		for i, x := range p.bp.ReadyWhen {
			srcs[i] = "${" + x.Source + "}"
		}
		set(ConditionReady, metav1.ConditionTrue, ReasonReadyWhenTrue, "emit.readyWhen holds: "+strings.Join(srcs, " and "))
	case p.readyWhen != nil:
		set(ConditionReady, metav1.ConditionFalse, ReasonReadyWhenFalse, "emit.readyWhen: "+strings.Join(p.readyWhen.failing, "; "))
	case len(waiting) > 0:
		set(ConditionReady, metav1.ConditionFalse, "ChildrenNotReady", "waiting for "+strings.Join(waiting, ", "))
	default:
		set(ConditionReady, metav1.ConditionTrue, "ChildrenReady", ready)
	}

	for _, c := range p.remoteState.conditions {
		if c.Type != ConditionReady && c.Type != ConditionProgressing && c.Type != ConditionDegraded {
			set(c.Type, metav1.ConditionStatus(c.Status), c.Reason, c.Message)
		}
	}
	for _, c := range p.custom {
		set(c.Type, c.Status, c.Reason, c.Message)
	}
	p.deprecated(&conds, set)

	sort.SliceStable(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
	out := make([]any, 0, len(conds))
	for i := range conds {
		out = append(out, conditionJSON(&conds[i]))
	}
	return out
}

// runtimeCondition reports whether c is one the runtime sets on this
// Blueprint's custom resources, rather than a remote reconciler's.
func (p *pass) runtimeCondition(c metav1.Condition) bool {
	switch c.Type {
	case ConditionReady, ConditionProgressing, ConditionDegraded:
		return true
	case ConditionDeprecated:
		return c.Reason == ReasonPatternDeprecated
	case ConditionComplete, ConditionFailed:
		if p.bp.Reconcile != nil && p.bp.Reconcile.Workflow != nil {
			return true
		}
	}
	for _, bc := range p.bp.Conditions {
		if bc.Type == c.Type {
			return true
		}
	}
	return false
}

// deprecated keeps the Deprecated condition of a Blueprint run as a
// deprecated pattern version, with a Warning Event when it is set or its
// message changes, and removes the runtime's own once the Blueprint no
// longer is one. The deprecation is read each pass: it may change while
// the Blueprint runs (Options.Deprecation).
func (p *pass) deprecated(conds *[]metav1.Condition, set func(t string, s metav1.ConditionStatus, reason, msg string)) {
	d := p.opts.Deprecation.Deprecated()
	existing := meta.FindStatusCondition(*conds, ConditionDeprecated)
	if d == nil {
		if existing != nil && existing.Reason == ReasonPatternDeprecated {
			meta.RemoveStatusCondition(conds, ConditionDeprecated)
		}
		return
	}
	msg := DeprecatedMessage(d)
	if existing == nil || existing.Status != metav1.ConditionTrue || existing.Message != msg {
		p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeWarning, ReasonPatternDeprecated, "Reconcile", "%s", msg)
	}
	set(ConditionDeprecated, metav1.ConditionTrue, ReasonPatternDeprecated, msg)
}

// DeprecatedMessage is the message of the Deprecated condition and its
// Event: the pattern, the deprecation, the replacement, and until when it
// is accepted, or why it no longer is.
func DeprecatedMessage(d *ir.Deprecated) string {
	msg := fmt.Sprintf("%s is deprecated: %s", d.Pattern, d.Message)
	if d.Replacement != "" {
		msg += "; move to " + d.Replacement
	}
	if d.Refused != "" {
		return msg + "; " + d.Refused + ": it keeps running, but inrun run refuses it when it next starts"
	}
	return msg + "; accepted until " + d.Until.UTC().Format("2006-01-02")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
