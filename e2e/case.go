package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// LabelCase marks the namespaces Run creates, so that leftovers of an
// interrupted run are easy to find: kubectl get ns -l inrun.dev/e2e.
const LabelCase = "inrun.dev/e2e"

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name string
	// Namespace is the case's own namespace.
	Namespace string
	Duration  time.Duration
	// Err is why the case could not run its steps: its namespace, objects
	// or CR could not be created.
	Err error
	// Steps has one result per step of the case, run or skipped.
	Steps []*StepResult
	// Notes are problems found while cleaning up, such as a CR whose
	// finalizer was never removed. They do not fail the case.
	Notes []string
}

// Passed reports whether every step of the case ran and held.
func (c *CaseResult) Passed() bool {
	if c.Err != nil {
		return false
	}
	for _, s := range c.Steps {
		if !s.Passed() {
			return false
		}
	}
	return true
}

// StepResult is the outcome of one step.
type StepResult struct {
	// Index counts from 1.
	Index  int
	Action string
	// Timeout is how long the expectations were given.
	Timeout  time.Duration
	Duration time.Duration
	// Skipped is set for the steps after a failed one.
	Skipped bool
	// Err is why the step did not get to wait: its action failed, or the
	// run was interrupted.
	Err error
	// Failures are the expectations that did not hold when the time ran
	// out, as last observed.
	Failures []Failure
	// Conditions and Events describe the CR when the step failed, to help
	// see why: its status conditions and the latest Events about it.
	Conditions []string
	Events     []string
	// IdleSkipped says why a step that passed had no idle check.
	IdleSkipped string
}

// Passed reports whether the step ran and its expectations held.
func (s *StepResult) Passed() bool {
	return !s.Skipped && s.Err == nil && len(s.Failures) == 0
}

// Failure is one expectation that did not hold.
type Failure struct {
	// What names the expectation: an object, or the CR's status.
	What string
	// Problems are the differences, each as "path: expected X, got Y", or
	// why the object could not be compared at all.
	Problems []string
	// Diff shows the expected fields against the observed ones, -expected
	// +observed; empty when there was nothing to compare.
	Diff string
}

func (f Failure) String() string {
	return f.What + ": " + strings.Join(f.Problems, "; ")
}

// caseRun is one case in progress.
type caseRun struct {
	*run
	c   *Case
	res *CaseResult
	// cr is the custom resource as created: kind, namespace and name; or,
	// after a kind move's apply, the one the move made of it.
	cr *unstructured.Unstructured
	// moved are the custom resources cr replaced through kind moves, the
	// last one last: a rollback makes the case's CR that one again.
	moved []*unstructured.Unstructured
	// created are objects outside the case's namespace, and namespaces,
	// that cleanup deletes, in creation order.
	created []client.Object
	// wakes counts the idle check's wakes of the CR.
	wakes int
	// refusal is what creating the CR gave, for a case whose first step
	// expects it refused.
	refusal *error
}

func (r *run) runCase(ctx context.Context, c *Case) *CaseResult {
	start := time.Now()
	cr := &caseRun{run: r, c: c, res: &CaseResult{Name: c.Name}}
	res := cr.res
	if err := cr.setup(ctx); err != nil {
		res.Err = err
	}
	if res.Namespace != "" {
		r.printf("RUN   %s (namespace %s)\n", c.Name, res.Namespace)
	} else {
		r.printf("RUN   %s\n", c.Name)
	}
	if res.Err != nil {
		r.printf("  error: %v\n", res.Err)
	}
	failed := res.Err != nil
	for i := range c.Steps {
		s := &c.Steps[i]
		if failed {
			sr := &StepResult{Index: i + 1, Action: s.Action(), Skipped: true}
			res.Steps = append(res.Steps, sr)
			r.printStep(sr)
			continue
		}
		sr := cr.runStep(ctx, i, s)
		res.Steps = append(res.Steps, sr)
		r.printStep(sr)
		failed = !sr.Passed()
	}
	cr.cleanup()
	for _, n := range res.Notes {
		r.printf("  note: %s\n", n)
	}
	res.Duration = time.Since(start)
	verdict := "PASS"
	if !res.Passed() {
		verdict = "FAIL"
	}
	r.printf("%s  %s (%s)\n", verdict, c.Name, res.Duration.Round(100*time.Millisecond))
	return res
}

// setup creates the case's namespace, its objects and its CR.
func (cr *caseRun) setup(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: namespacePrefix(cr.c.Name),
		Labels:       map[string]string{LabelCase: "true"},
		Annotations:  map[string]string{LabelCase + "-case": cr.c.Name},
	}}
	if err := cr.run.c.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating the case's namespace: %w", err)
	}
	cr.res.Namespace = ns.Name
	for i, o := range cr.c.Objects {
		obj := o.DeepCopy()
		if err := cr.create(ctx, obj); err != nil {
			return fmt.Errorf("objects[%d]: creating %s: %w", i, describeObject(obj, ns.Name), err)
		}
	}
	if cr.c.CR == nil {
		return nil // the case's requests make it through the gateway
	}
	obj := cr.c.CR.DeepCopy()
	err := cr.create(ctx, obj)
	switch {
	case cr.c.RefusesCR():
		cr.refusal = &err // the first step judges it
		if err == nil {
			cr.cr = obj // for cleanup
		}
		return nil
	case err != nil:
		return fmt.Errorf("creating the CR %s: %w", describeObject(obj, ns.Name), err)
	}
	cr.cr = obj
	return nil
}

// refusedAsExpected checks that what (the CR, a patch) was refused, by
// err, with each of the substrings want in its message.
func refusedAsExpected(what string, err error, want []string) []Failure {
	if problems := simulate.RefusalProblems(err, want); len(problems) > 0 {
		return []Failure{{What: what, Problems: problems}}
	}
	return nil
}

// create creates obj in the case's namespace, or in its own when it names
// one, creating that namespace when it is missing.
func (cr *caseRun) create(ctx context.Context, obj *unstructured.Unstructured) error {
	namespaced, err := cr.run.c.IsObjectNamespaced(obj)
	if err != nil {
		return err
	}
	elsewhere := !namespaced
	switch {
	case !namespaced:
		obj.SetNamespace("")
	case obj.GetNamespace() == "":
		obj.SetNamespace(cr.res.Namespace)
	case obj.GetNamespace() != cr.res.Namespace:
		elsewhere = true
		if err := cr.ensureNamespace(ctx, obj.GetNamespace()); err != nil {
			return err
		}
	}
	if err := cr.run.c.Create(ctx, obj); err != nil {
		return err
	}
	if elsewhere {
		cr.created = append(cr.created, obj)
	}
	return nil
}

func (cr *caseRun) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelCase: "true"}}}
	err := cr.run.c.Create(ctx, ns)
	switch {
	case err == nil:
		cr.created = append(cr.created, ns)
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	}
	return fmt.Errorf("creating namespace %s: %w", name, err)
}

// runStep runs the step's action, then polls its expectations until they
// hold or its timeout runs out.
func (cr *caseRun) runStep(ctx context.Context, i int, s *Step) *StepResult {
	start := time.Now()
	sr := &StepResult{Index: i + 1, Action: s.Action(), Timeout: cr.timeout(s)}
	defer func() { sr.Duration = time.Since(start) }()

	var response func() *Failure
	switch {
	case len(s.Expect.Refused) > 0 && s.Patch == nil:
		sr.Timeout = 0 // judged at once, not polled
		sr.Failures = refusedAsExpected("the CR", *cr.refusal, s.Expect.Refused)
		return sr
	case len(s.Expect.Refused) > 0:
		sr.Timeout = 0
		sr.Failures = refusedAsExpected("the patch", cr.patchCR(ctx, s.Patch), s.Expect.Refused)
		return sr
	case s.Request != nil:
		var err error
		if response, err = cr.request(ctx, s); err != nil {
			sr.Err = err
			return sr
		}
	case s.Delete:
		target := cr.crRef()
		err := cr.run.c.Delete(ctx, target, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil {
			sr.Err = fmt.Errorf("deleting the CR: %w", err)
			return sr
		}
	case s.Migrate != nil:
		if err := cr.migrate(ctx, s.Migrate); err != nil {
			sr.Err = err
			return sr
		}
	case s.Patch != nil:
		if err := cr.patchCR(ctx, s.Patch); err != nil {
			sr.Err = fmt.Errorf("patching the CR: %w", err)
			return sr
		}
	}

	deadline := start.Add(sr.Timeout)
	for {
		fails := cr.check(ctx, &s.Expect)
		if response != nil {
			if f := response(); f != nil {
				fails = append(fails, *f)
			}
		}
		if len(fails) == 0 && cr.counter != nil && !s.Delete && cr.cr != nil && !cr.expectsGone(&s.Expect) {
			// Converged, as far as the expectations say: it must stay so
			// for free. A step that ends in time gets at least a minute.
			if why := cr.idleSkip(ctx); why != "" {
				sr.IdleSkipped = why
				return sr
			}
			if f := cr.checkIdle(ctx, cr.counter, time.Now().Add(max(time.Until(deadline), time.Minute))); f != nil {
				sr.Failures = []Failure{*f}
				sr.Conditions, sr.Events = cr.describeCR(ctx)
			}
			return sr
		}
		if len(fails) == 0 {
			return sr
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			sr.Failures = fails
			sr.Conditions, sr.Events = cr.describeCR(ctx)
			return sr
		}
		select {
		case <-ctx.Done():
			sr.Err = errors.New("interrupted")
			return sr
		case <-time.After(min(wait, cr.opts.PollInterval)):
		}
	}
}

// request sends a step's request, and returns what checks its answer: a
// GET is sent again at each check, until the expectations hold; another
// method is sent once, here, and its answer kept.
func (cr *caseRun) request(ctx context.Context, s *Step) (func() *Failure, error) {
	gr := cr.run.gateway
	if gr == nil {
		return nil, errNoGateway
	}
	what := "the answer to " + s.Request.Method + " " + s.Request.Path
	send := func() (int, []byte, error) {
		rctx, cancel := context.WithTimeout(ctx, cr.timeout(s)+10*time.Second)
		defer cancel()
		return gr.send(rctx, s.Request)
	}
	check := func(status int, body []byte) *Failure {
		if s.Expect.Response == nil {
			if status >= 400 {
				return &Failure{What: what, Problems: []string{fmt.Sprintf("status %d; add expect.response when a refusal is what the step expects", status)}, Diff: strings.TrimSpace(string(body))}
			}
			return nil
		}
		return checkResponse(what, status, body, s.Expect.Response)
	}
	if s.Request.Method == http.MethodGet {
		return func() *Failure {
			status, body, err := send()
			if err != nil {
				return &Failure{What: what, Problems: []string{err.Error()}}
			}
			return check(status, body)
		}, nil
	}
	status, body, err := send()
	if err != nil {
		return nil, fmt.Errorf("sending %s %s: %w", s.Request.Method, s.Request.Path, err)
	}
	f := check(status, body)
	return func() *Failure { return f }, nil
}

// check returns every expectation of e that does not hold now.
func (cr *caseRun) check(ctx context.Context, e *Expectation) []Failure {
	var fails []Failure
	for _, oe := range e.Objects {
		obj, what, err := cr.get(ctx, oe.ObjectRef)
		switch {
		case apierrors.IsNotFound(err):
			fails = append(fails, Failure{What: what, Problems: []string{"expected to exist, but it does not"}})
		case err != nil:
			fails = append(fails, Failure{What: what, Problems: []string{err.Error()}})
		case oe.Match != nil:
			if ms := mismatches(obj.Object, oe.Match); len(ms) > 0 {
				fails = append(fails, Failure{What: what, Problems: ms, Diff: diff(obj.Object, oe.Match)})
			}
		}
	}
	for _, ref := range e.Absent {
		obj, what, err := cr.get(ctx, ref)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			fails = append(fails, Failure{What: what, Problems: []string{err.Error()}})
		default:
			fails = append(fails, Failure{What: what, Problems: []string{"expected to be absent, but it exists" + deletionNote(obj)}})
		}
	}
	if e.Status != nil {
		live, err := cr.liveCR(ctx)
		switch {
		case apierrors.IsNotFound(err):
			fails = append(fails, Failure{What: "the CR's status", Problems: []string{"the CR does not exist"}})
		case err != nil:
			fails = append(fails, Failure{What: "the CR's status", Problems: []string{err.Error()}})
		default:
			status, _, _ := unstructured.NestedMap(live.Object, "status")
			if ms := mismatches(status, e.Status); len(ms) > 0 {
				for i, m := range ms {
					if rest, ok := strings.CutPrefix(m, "(root)"); ok {
						ms[i] = "status" + rest
					} else {
						ms[i] = "status." + m
					}
				}
				fails = append(fails, Failure{What: "the CR's status", Problems: ms, Diff: diff(status, e.Status)})
			}
		}
	}
	return fails
}

// get reads the object ref names, in the case's namespace unless it names
// another or its kind is cluster-scoped. It also returns how to name the
// object in messages.
func (cr *caseRun) get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, string, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(ref.GroupVersionKind())
	obj.SetName(ref.Name)
	namespaced, err := cr.run.c.IsObjectNamespaced(obj)
	if err != nil {
		return nil, describeObject(obj, cr.res.Namespace), err
	}
	if namespaced {
		obj.SetNamespace(ref.Namespace)
		if ref.Namespace == "" {
			obj.SetNamespace(cr.res.Namespace)
		}
	}
	what := describeObject(obj, cr.res.Namespace)
	err = cr.run.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	return obj, what, err
}

// idleSkip says why the idle check does not run on the CR as it is now,
// or "" when it does: a Degraded CR is not converged (its reconciles are
// retried, each recording a Warning Event); a finished workflow whose
// Blueprint deletes the CR after its TTL has that delete as its next write,
// which the wakes would race (and, on a slow machine, lose).
func (cr *caseRun) idleSkip(ctx context.Context) string {
	live := cr.crRef()
	if err := cr.run.c.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == reconciler.ConditionDegraded && m["status"] == "True" {
			return "the CR is Degraded: its reconciles are retried, each recording a Warning Event"
		}
	}
	bp := cr.run.opts.Blueprint
	if bp == nil || bp.Reconcile == nil || bp.Reconcile.Workflow == nil || bp.Reconcile.Workflow.TTLSecondsAfterFinished == nil {
		return ""
	}
	phase, _, _ := unstructured.NestedString(live.Object, "status", reconciler.WorkflowField, "phase")
	if phase == reconciler.WorkflowSucceeded || phase == reconciler.WorkflowFailed {
		return "the workflow has finished: the runtime deletes the CR after ttlSecondsAfterFinished"
	}
	return ""
}

// expectsGone reports whether e expects the CR itself absent: it went by
// itself (a finished workflow's ttlSecondsAfterFinished), and there is
// nothing left to wake.
func (cr *caseRun) expectsGone(e *Expectation) bool {
	for _, ref := range e.Absent {
		if ref.GroupVersionKind() == cr.cr.GroupVersionKind() && ref.Name == cr.cr.GetName() {
			return true
		}
	}
	return false
}

func (cr *caseRun) crRef() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(cr.cr.GroupVersionKind())
	obj.SetNamespace(cr.cr.GetNamespace())
	obj.SetName(cr.cr.GetName())
	return obj
}

func (cr *caseRun) liveCR(ctx context.Context) (*unstructured.Unstructured, error) {
	obj := cr.crRef()
	err := cr.run.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	return obj, err
}

// describeCR returns the CR's conditions and the latest Events about it,
// which usually say why children or status are not what a step expects.
func (cr *caseRun) describeCR(ctx context.Context) (conditions, events []string) {
	if cr.cr == nil {
		return nil, nil
	}
	live, err := cr.liveCR(ctx)
	switch {
	case apierrors.IsNotFound(err):
		conditions = []string{"(the CR does not exist)"}
	case err != nil:
		conditions = []string{"(reading the CR: " + err.Error() + ")"}
	default:
		list, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		for _, item := range list {
			c, ok := item.(map[string]any)
			if !ok {
				continue
			}
			line := fmt.Sprintf("%v=%v", c["type"], c["status"])
			if r, ok := c["reason"].(string); ok && r != "" {
				line += " " + r
			}
			if m, ok := c["message"].(string); ok && m != "" {
				line += ": " + m
			}
			conditions = append(conditions, line)
		}
		if len(conditions) == 0 {
			conditions = []string{"(none)"}
		}
	}
	if cr.cr.GetNamespace() == "" {
		return conditions, nil
	}
	list := &corev1.EventList{}
	err = cr.run.c.List(ctx, list, client.InNamespace(cr.cr.GetNamespace()),
		client.MatchingFields{"involvedObject.name": cr.cr.GetName(), "involvedObject.kind": cr.cr.GetKind()})
	if err != nil {
		return conditions, []string{"(listing Events: " + err.Error() + ")"}
	}
	items := list.Items
	// The latest few are what matter; a long list hides them.
	const maxEvents = 5
	sortEvents(items)
	if len(items) > maxEvents {
		items = items[len(items)-maxEvents:]
	}
	for _, e := range items {
		line := fmt.Sprintf("%s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message))
		if e.Count > 1 {
			line += fmt.Sprintf(" (%d times)", e.Count)
		}
		events = append(events, line)
	}
	return conditions, events
}

// cleanup deletes what the case created, unless Keep. The CR goes first,
// while the runtime still runs, so that its finalizer removes children
// outside the namespace; then objects elsewhere, then the namespaces.
func (cr *caseRun) cleanup() {
	if cr.opts.Keep {
		return
	}
	// Cleanup runs after an interrupt too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if gr := cr.run.gateway; gr != nil {
		// What the case's requests made, as the case's CR: deleted while
		// the runtime runs.
		made, err := gr.intents(ctx)
		if err != nil {
			cr.res.Notes = append(cr.res.Notes, fmt.Sprintf("listing what the gateway made: %v", err))
		}
		for _, obj := range made {
			if err := cr.run.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				cr.res.Notes = append(cr.res.Notes, fmt.Sprintf("deleting %s: %v", describeObject(obj, ""), err))
			}
		}
		for deadline := time.Now().Add(30 * time.Second); len(made) > 0 && time.Now().Before(deadline) && ctx.Err() == nil; {
			time.Sleep(cr.opts.PollInterval)
			if made, err = gr.intents(ctx); err != nil {
				break
			}
		}
		if len(made) > 0 {
			cr.res.Notes = append(cr.res.Notes, fmt.Sprintf("%d custom resources the gateway made were still there 30s after they were deleted", len(made)))
		}
	}
	if cr.cr != nil {
		if err := cr.run.c.Delete(ctx, cr.crRef()); err != nil && !apierrors.IsNotFound(err) {
			cr.res.Notes = append(cr.res.Notes, fmt.Sprintf("deleting the CR: %v", err))
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			live, err := cr.liveCR(ctx)
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				note := "the CR was still there 30s after it was deleted"
				if err == nil && len(live.GetFinalizers()) > 0 {
					note += fmt.Sprintf(", with finalizers %v; its namespace stays Terminating until they are removed", live.GetFinalizers())
				}
				cr.res.Notes = append(cr.res.Notes, note)
				break
			}
			time.Sleep(cr.opts.PollInterval)
		}
	}
	for i := len(cr.created) - 1; i >= 0; i-- {
		obj := cr.created[i]
		if err := cr.run.c.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			cr.res.Notes = append(cr.res.Notes, fmt.Sprintf("deleting %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err))
		}
	}
	if cr.res.Namespace != "" {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cr.res.Namespace}}
		if err := cr.run.c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			cr.res.Notes = append(cr.res.Notes, fmt.Sprintf("deleting namespace %s: %v", ns.Name, err))
		}
	}
}

func deletionNote(obj *unstructured.Unstructured) string {
	ts := obj.GetDeletionTimestamp()
	if ts == nil {
		return ""
	}
	note := fmt.Sprintf(" (being deleted since %s ago", time.Since(ts.Time).Round(100*time.Millisecond))
	if f := obj.GetFinalizers(); len(f) > 0 {
		note += fmt.Sprintf(", held by finalizers %v", f)
	}
	return note + ")"
}

// describeObject names an object in messages: apiVersion, kind and name,
// with the namespace when it is not the case's.
func describeObject(obj *unstructured.Unstructured, caseNS string) string {
	s := obj.GetAPIVersion() + " " + obj.GetKind() + " "
	if ns := obj.GetNamespace(); ns != "" && ns != caseNS {
		s += ns + "/"
	}
	return s + obj.GetName()
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namespacePrefix turns a case name into a GenerateName prefix: a DNS label
// short enough to leave room for the random suffix.
func namespacePrefix(caseName string) string {
	p := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(p) > 40 {
		p = strings.TrimRight(p[:40], "-")
	}
	if p == "" {
		return "e2e-"
	}
	return "e2e-" + p + "-"
}

// patchCR applies a JSON merge patch to the case's CR.
func (cr *caseRun) patchCR(ctx context.Context, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encoding the patch: %w", err)
	}
	return cr.run.c.Patch(ctx, cr.crRef(), client.RawPatch(types.MergePatchType, data))
}
