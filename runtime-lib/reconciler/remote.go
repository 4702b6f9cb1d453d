package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/runtime-lib/shard"
	"github.com/inrun/inrun/sdk"
)

// remotePrefix starts the inventory label value of a child a remote
// reconciler returned, so that they never clash with template ids.
const remotePrefix = "remote."

// AnnotationRemoteID keeps the id a remote reconciler gave a resource, so
// that the next request can tell it which observed child is which.
const AnnotationRemoteID = "inrun.dev/remote-id"

// remoteFinalizeRetry is how soon a finalizing request that is not done yet
// is sent again when the reply names no time.
const remoteFinalizeRetry = 5 * time.Second

// remoteState is what one pass learnt from the remote reconciler.
type remoteState struct {
	called     bool
	status     map[string]any
	conditions []sdk.Condition
	// keepStatus are status fields a failed call asks to keep (the id an
	// API assigned before a later step failed).
	keepStatus map[string]any
}

var labelSafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// remoteChildLabel is the inventory label value of a returned resource:
// its id when it has a usable one, else a hash of its identity.
func remoteChildLabel(res sdk.Resource) string {
	if res.ID != "" {
		if id := strings.Trim(labelSafe.ReplaceAllString(res.ID, "-"), "-._"); id != "" && len(id) <= 50 {
			return remotePrefix + id
		}
	}
	ref := res.Ref()
	sum := sha256.Sum256([]byte(ref.Group + "/" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name + "/" + res.ID))
	return remotePrefix + hex.EncodeToString(sum[:8])
}

// request builds the request of this pass.
func (p *pass) request(ctx context.Context, finalizing bool) (*sdk.Request, error) {
	args := map[string]any{}
	if p.bp.Reconcile.Args != nil && !finalizing {
		out, err := p.eval.Args(p.bp.Reconcile.Args)
		if err != nil {
			return nil, fmt.Errorf("reconcile.args: %w", err)
		}
		args = out
	}
	if p.argsHook != nil && !finalizing {
		if err := p.extraArgs(ctx, args); err != nil {
			return nil, err
		}
	}
	req := &sdk.Request{APIVersion: sdk.APIVersion, Kind: sdk.KindRequest, Object: wireObject(p.cr), Args: args, Finalizing: finalizing}
	for label, objs := range p.observed {
		if !strings.HasPrefix(label, remotePrefix) {
			continue
		}
		for _, obj := range objs {
			req.Observed = append(req.Observed, sdk.Resource{ID: obj.GetAnnotations()[AnnotationRemoteID], Object: wireObject(p.whole(obj))})
		}
	}
	return req, nil
}

// wireObject is obj as a reconciler sees it: without managed fields.
func wireObject(obj *unstructured.Unstructured) map[string]any {
	o := obj.DeepCopy()
	o.SetManagedFields(nil)
	return o.Object
}

// remoteChildrenStay keeps the reconciler's children as they are this
// pass: neither written nor pruned, and still its children.
func (p *pass) remoteChildrenStay() {
	for label, objs := range p.observed {
		if strings.HasPrefix(label, remotePrefix) {
			p.keep[label] = true
			p.wanted[label] = keyOf(objs[0])
		}
	}
}

// remote calls the remote reconciler and applies its Result: resources
// with server-side apply, the rest for status. A failed call or a refused
// Result changes nothing: every remote child is kept.
func (p *pass) remote(ctx context.Context) {
	keepAll := func() {
		for label := range p.observed {
			if strings.HasPrefix(label, remotePrefix) {
				p.keep[label] = true
			}
		}
	}
	if p.bp.Reconcile.Workflow != nil {
		p.beginWorkflow()
		defer p.workflowConditions()
		switch {
		case p.wf.bad != nil:
			keepAll()
			p.remoteError(ctx, p.wf.bad, false)
			return
		case p.wf.finished():
			// A finished workflow calls nothing: its children and the
			// reconciler's status stay as the last step left them.
			p.remoteChildrenStay()
			p.expire(ctx)
			return
		case p.deadline(ctx):
			keepAll() // the step ran out of time: not called again
			return
		case p.retryWait():
			keepAll() // the last attempt failed: tried again after its backoff
			return
		}
	}
	if p.replacingHeld() {
		keepAll()
		return
	}
	req, err := p.request(ctx, false)
	if err != nil {
		keepAll()
		if expr.DataPending(err) {
			// reconcile.args reads data a child does not have yet: the
			// reconciler is asked once it is there.
			p.rep.Pending["reconcile.args"] = pendingData(err)
			return
		}
		p.remoteError(ctx, err, false)
		return
	}
	if p.wf != nil {
		req.Step = p.wf.step(string(p.cr.GetUID()))
	}
	res, err := p.opts.Remote.Call(ctx, req)
	if err != nil {
		keepAll()
		var re *remote.Error
		if errors.As(err, &re) {
			p.remoteState.keepStatus = re.KeepStatus
		}
		p.workflowFailure(ctx, err)
		p.remoteError(ctx, err, true)
		return
	}
	if err := p.checkResult(&res.Result); err != nil {
		keepAll()
		p.workflowFailure(ctx, err)
		// The reply was well-formed, so the Caller may have kept it; the
		// retry must ask the reconciler again, not meet the same reply.
		if f, ok := p.opts.Remote.(forgetter); ok {
			f.Forget(sdk.Resource{Object: req.Object}.Ref())
		}
		p.remoteError(ctx, err, true)
		return
	}
	p.remoteState = remoteState{called: true, status: res.Status, conditions: res.Conditions}
	if res.Resources == nil {
		// A Result without resources says nothing of the children: an
		// error path that forgot them must not delete them. [] does.
		p.remoteChildrenStay()
	}
	for _, r := range res.Resources {
		p.applyRemote(ctx, r)
	}
	if err := p.patchCRMetadata(ctx, res.Labels, res.Annotations); err != nil {
		err = fmt.Errorf("setting the labels and annotations the reconciler returned: %w", err)
		p.rep.Errors = append(p.rep.Errors, err)
		p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeWarning, "MetadataFailed", "Reconcile", "%v", err)
		p.transient = err
	}
	if !res.Cached {
		for _, e := range res.Events {
			p.opts.Recorder.Eventf(p.cr, nil, e.Type, e.Reason, "Reconcile", "%s", e.Message)
		}
	}
	if d := time.Duration(res.RequeueAfter); d > 0 && (p.rep.RequeueAfter == 0 || d < p.rep.RequeueAfter) {
		p.rep.RequeueAfter = d
	}
	if p.wf != nil {
		p.workflowAnswered(ctx, &res.Result)
	}
}

// hasOwnerReferences reports whether metadata md sets owner references:
// an empty list sets none.
func hasOwnerReferences(md map[string]any) bool {
	refs, isList := md["ownerReferences"].([]any)
	return len(refs) > 0 || (!isList && md["ownerReferences"] != nil)
}

// forgetter is a Caller that remembers replies (remote.Client does).
type forgetter interface {
	Forget(ref sdk.ObjectRef)
}

// forgetResult makes the Caller forget the Result of this pass, when it
// used one, so that the retry of a reconcile that failed asks the
// reconciler again: a Result that could not be wholly applied (an object
// it names belongs to someone else, a status the API server refuses) is
// no more reused than a refused one, and a fixed reconciler is heard
// without an edit of the custom resource.
func (p *pass) forgetResult() {
	if !p.remoteState.called {
		return
	}
	if f, ok := p.opts.Remote.(forgetter); ok {
		f.Forget(sdk.Resource{Object: p.cr.Object}.Ref())
	}
}

// checkResult refuses a Result that CheckResult finds fault with, naming
// every problem at once, so that a reconciler is fixed in one round.
func (p *pass) checkResult(res *sdk.Result) error {
	problems := CheckResult(p.bp, res)
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, pr := range problems {
		msgs[i] = pr.Message
	}
	return fmt.Errorf("the reconciler's Result was refused: %s", strings.Join(msgs, "; "))
}

// childKeys are the labels and annotations of Inrun's that the runtime
// writes on every child itself: a reply that returns an observed object
// as it was may carry them.
var childKeys = map[string]bool{
	LabelBlueprint: true, LabelOwnerUID: true, LabelChild: true, LabelAppliedHash: true,
	AnnotationOwner: true, AnnotationRemoteID: true, shard.LabelOwnerBucket: true,
}

// inrunKey reports whether a label or annotation key is in one of Inrun's
// prefixes: inrun.dev/ or a subdomain of it (shard.inrun.dev/).
func inrunKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == "inrun.dev" || strings.HasSuffix(prefix, ".inrun.dev"))
}

// ResultProblem is one reason the runtime refuses a reconciler's Result
// that the contract's own reading (sdk.DecodeResult) took: Path is where
// in the Result (resources[1].kind), Message what is wrong and what to do.
type ResultProblem struct {
	Path, Message string
}

// CheckResult returns what the runtime refuses of res, a Result for bp's
// custom resources: resources of kinds bp does not declare (RBAC, watches
// and prune derive from the declaration), placed against their kind's
// scope, or owned by anything but the custom resource; and a step outcome
// in reply to a request without one (nothing would act on it, and a
// reconciler that reports a failure there believes the runtime heard it),
// a step.next that names no step, or the workflow's own status field.
// inrun simulate checks recorded replies with it before any case runs.
func CheckResult(bp *ir.Blueprint, res *sdk.Result) []ResultProblem {
	var problems []ResultProblem
	add := func(path, format string, args ...any) {
		problems = append(problems, ResultProblem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	declared := map[schema.GroupVersionKind]ir.ResourceKind{}
	var names []string
	if rec := bp.Reconcile; rec != nil && rec.Remote != nil {
		for _, k := range rec.Remote.Resources {
			declared[k.GroupVersionKind] = k
			names = append(names, ir.FormatKind(k.GroupVersionKind))
		}
	}
	allowed := "none"
	if len(names) > 0 {
		allowed = strings.Join(names, ", ")
	}
	for i, r := range res.Resources {
		at := fmt.Sprintf("resources[%d]", i)
		gv, err := schema.ParseGroupVersion(r.APIVersion())
		k, ok := declared[gv.WithKind(r.Kind())]
		if err != nil || !ok {
			add(at+".kind", "%s is of kind %s %s, not a kind reconcile.resources declares (it declares %s); declare the kind in the Blueprint, or stop returning the resource", at, r.APIVersion(), r.Kind(), allowed)
			continue
		}
		// Where a resource goes, and who owns it, is the runtime's to
		// say: refused here, it is the reply's mistake, and retried.
		md, _ := r.Object["metadata"].(map[string]any)
		switch {
		case !k.Namespaced && r.Namespace() != "":
			add(at+".metadata.namespace", "%s (%s %q) is of a cluster-scoped kind: leave metadata.namespace out", at, r.Kind(), r.Name())
		case k.Namespaced && r.Namespace() == "" && !bp.Resource.Namespaced:
			add(at+".metadata", "%s (%s %q) needs metadata.namespace: the %s is cluster-scoped", at, r.Kind(), r.Name(), bp.Resource.Kind)
		case hasOwnerReferences(md):
			add(at+".metadata.ownerReferences", "%s.metadata.ownerReferences: the runtime sets the owner reference to the %s itself; leave it out", at, bp.Resource.Kind)
		}
		// Inrun's own keys mark what Inrun acts on (inrun.dev/role: a
		// Blueprint ConfigMap the runtime runs): a reply may carry only
		// those the runtime sets on every child itself.
		for _, field := range []string{"labels", "annotations"} {
			m, _ := md[field].(map[string]any)
			for _, key := range slices.Sorted(maps.Keys(m)) {
				if inrunKey(key) && !childKeys[key] {
					add(fmt.Sprintf("%s.metadata.%s[%q]", at, field, key), "%s.metadata.%s[%q]: keys under inrun.dev/ are Inrun's, which sets its own on every child; leave it out", at, field, key)
				}
			}
		}
	}
	var wf *ir.Workflow
	if bp.Reconcile != nil {
		wf = bp.Reconcile.Workflow
	}
	switch {
	case wf != nil:
		if _, ok := res.Status[WorkflowField]; ok {
			add("status."+WorkflowField, "status.%s is the runtime's, where it keeps the workflow's progress; return the step's outcome in step", WorkflowField)
		}
		if res.Step != nil && res.Step.Next != "" && wf.Step(res.Step.Next) == nil {
			steps := make([]string, len(wf.Steps))
			for i, st := range wf.Steps {
				steps[i] = st.Name
			}
			hint := ""
			if near, ok := suggest.Closest(res.Step.Next, steps); ok {
				hint = "; did you mean " + near + "?"
			}
			add("step.next", "step.next %q is not a step of reconcile.workflow (%s)%s", res.Step.Next, strings.Join(steps, ", "), hint)
		}
	case res.Step != nil:
		add("step", "step is only valid in reply to a request with a step, and this Blueprint declares no reconcile.workflow, so no request has one; leave step out (report a failure with an HTTP 5xx status, or in conditions), or declare the steps in reconcile.workflow")
	}
	return problems
}

func (p *pass) applyRemote(ctx context.Context, res sdk.Resource) {
	label := remoteChildLabel(res)
	c := p.remoteChild(res, label)
	desired := &unstructured.Unstructured{Object: res.Object}
	if res.ID != "" {
		annotations := desired.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[AnnotationRemoteID] = res.ID
		desired.SetAnnotations(annotations)
	}
	if err := p.decorate(c, desired); err != nil {
		p.childError(ctx, c, err)
		return
	}
	key := keyOf(desired)
	if p.taken(ctx, c, key) {
		return
	}
	p.wanted[label] = key
	if !p.canOwn(desired) && !controllerutil.ContainsFinalizer(p.cr, Finalizer) {
		if err := p.addFinalizer(ctx); err != nil {
			p.apiError(ctx, c, err, "patch")
			return
		}
	}
	var current *unstructured.Unstructured
	for _, obj := range p.observed[label] {
		if keyOf(obj) == key {
			current = obj
		}
	}
	if obj := p.ensure(ctx, c, desired, current); obj != nil {
		p.setLive(label, obj)
	}
	// A returned resource counts for Ready like a template child does,
	// by its kind's rule.
	if live := p.live[label]; live != nil && !p.failed[label] && !p.kindReady(live) {
		p.notReady = append(p.notReady, key.String())
	}
}

// remoteChild describes a returned resource as a child, for decorate,
// apply and the errors they report.
func (p *pass) remoteChild(res sdk.Resource, label string) *ir.Child {
	gv, _ := schema.ParseGroupVersion(res.APIVersion())
	c := &ir.Child{ID: label, Phase: ir.OnReconcile, Pos: p.bp.Reconcile.Pos, GroupVersionKind: gv.WithKind(res.Kind())}
	for _, k := range p.bp.Reconcile.Remote.Resources {
		if k.GroupVersionKind == c.GroupVersionKind {
			c.Plural, c.Namespaced = k.Plural, k.Namespaced
		}
	}
	return c
}

// remoteError records a failed call or a refused Result: Degraded, an Event,
// and, for a call that failed, a retry with backoff.
func (p *pass) remoteError(ctx context.Context, err error, retry bool) {
	err = p.nameReconciler(err, "")
	p.rep.Errors = append(p.rep.Errors, err)
	p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeWarning, "ReconcilerFailed", "Reconcile", "%v", err)
	logr.FromContextOrDiscard(ctx).Error(err, "remote reconciler failed")
	if retry && p.transient == nil {
		p.transient = err
	}
}

// patchCRMetadata sets the labels and annotations a reconciler returned on
// the custom resource, writing only when they differ.
func (p *pass) patchCRMetadata(ctx context.Context, labels, annotations map[string]string) error {
	changed := false
	newLabels, newAnnotations := p.cr.GetLabels(), p.cr.GetAnnotations()
	set := func(m *map[string]string, k, v string) {
		if *m == nil {
			*m = map[string]string{}
		}
		if (*m)[k] != v {
			(*m)[k] = v
			changed = true
		}
	}
	for k, v := range labels {
		set(&newLabels, k, v)
	}
	for k, v := range annotations {
		set(&newAnnotations, k, v)
	}
	if !changed {
		return nil
	}
	patch := client.MergeFrom(p.cr.DeepCopy())
	p.cr.SetLabels(newLabels)
	p.cr.SetAnnotations(newAnnotations)
	if err := p.opts.Client.Patch(ctx, p.cr, patch); err != nil {
		return err
	}
	p.rep.Writes++
	return nil
}

// finalizeRemote sends the finalizing request and reports whether the
// reconciler has finished its cleanup.
func (p *pass) finalizeRemote(ctx context.Context) (bool, error) {
	req, err := p.request(ctx, true)
	if err != nil {
		return false, err
	}
	res, err := p.opts.Remote.Call(ctx, req)
	if err != nil {
		return false, p.nameReconciler(err, ", finalizing")
	}
	for _, e := range res.Events {
		p.opts.Recorder.Eventf(p.cr, nil, e.Type, e.Reason, "Finalize", "%s", e.Message)
	}
	if !res.Done {
		d := time.Duration(res.RequeueAfter)
		if d <= 0 {
			d = remoteFinalizeRetry
		}
		p.rep.RequeueAfter = d
		p.rep.Pending["remote"] = "waiting for the reconciler to finish cleaning up"
	}
	return res.Done, nil
}

// nameReconciler puts the reconciler's name before err, which a Go
// reconciler's own failures (*remote.GoError) carry already.
func (p *pass) nameReconciler(err error, when string) error {
	var ge *remote.GoError
	switch {
	case errors.As(err, &ge):
		if when != "" {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(when, ", "), err)
		}
		return err
	case p.bp.Reconcile.Remote.Go != nil:
		return fmt.Errorf("Go reconciler %q%s: %w", p.bp.Reconcile.Remote.Go.Name, when, err)
	default:
		return fmt.Errorf("remote reconciler%s: %w", when, err)
	}
}
