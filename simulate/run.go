package simulate

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/match"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
)

// Input is what a simulation starts from.
type Input struct {
	// CR is the custom resource to reconcile.
	CR *unstructured.Unstructured
	// CRFile, when set, is the file CR was read from: a CR the API server
	// would refuse is then reported at its fields there.
	CRFile string
	// Objects exist before the first pass.
	Objects []*unstructured.Unstructured
	// Passes is how many reconcile passes to run; default DefaultPasses.
	Passes int
	// Observe injects child status after a pass.
	Observe []Observation
	// Reply, when set, answers every request to the Blueprint's remote
	// reconciler, as a simulate file's reply does: nothing leaves the
	// process.
	Reply map[string]any
	// Reconciler, when set, is started for the run and called instead of
	// the reconciler the Blueprint names; BaseDir is what its dir is
	// relative to.
	Reconciler *Reconciler
	BaseDir    string
}

// Outcome is the state of the store after a simulation's passes, before
// the further pass that measures idempotence.
type Outcome struct {
	// CR is the custom resource as stored, status included; once Gone, as
	// it was last seen.
	CR *unstructured.Unstructured
	// Gone is true when the CR no longer exists: deleted, and released by
	// every finalizer.
	Gone bool
	// Children are the CR's children by id.
	Children map[string][]*unstructured.Unstructured
	// Reports are the reconciler's report of each pass.
	Reports []*reconciler.Report
	// IdleWrites are the writes of one further pass after the last that
	// the store took: zero for an idempotent reconcile. IdleWritten names
	// them ("apply ConfigMap shop/web-config"). Neither counts while
	// Deleting.
	IdleWrites  int64
	IdleWritten []string
	// Deleting is true when the CR, after the passes, is marked for
	// deletion but not gone: a finalizer still holds it. GoneNext is then
	// true when the further pass released it.
	Deleting, GoneNext bool
	// WorkflowRunning is true when the CR's workflow (reconcile.workflow)
	// is still running after the passes: no further pass runs then.
	WorkflowRunning bool
	// Events are the Events recorded on the CR during the passes, in
	// order, each a {type, reason, action, message} map (message is the Event's note).
	Events []any
}

// Last returns the report of the last pass.
func (o *Outcome) Last() *reconciler.Report { return o.Reports[len(o.Reports)-1] }

// Simulator runs one Blueprint in memory. Build it once and run many
// inputs: the expressions are compiled once.
type Simulator struct {
	bp    *ir.Blueprint
	progs *expr.Programs
	// renderer renders bp; nil: its CEL programs.
	renderer reconciler.Renderer
	// used are the Blueprints bp uses, directly or not (ir.Use.Compiled),
	// a user before what it uses: each pass reconciles their custom
	// resources too, as their runtime would.
	used []*usedBlueprint
	// components are the Go reconcilers a reconcile.go may name; nil:
	// components.Default, those compiled into this program.
	components *components.Registry
}

// usedBlueprint is a Blueprint the simulated one uses.
type usedBlueprint struct {
	bp    *ir.Blueprint
	progs *expr.Programs
}

// WithRenderer returns a copy of s that renders its Blueprint with r
// instead of its CEL programs: the Renderer an operator inrun build
// generated, say, which its tests compare with the interpreter's. The
// Blueprints it uses keep theirs.
func (s *Simulator) WithRenderer(r reconciler.Renderer) *Simulator {
	cp := *s
	cp.renderer = r
	return &cp
}

// WithComponents returns a copy of s whose Go reconcilers (reconcile.go)
// come from reg instead of components.Default.
func (s *Simulator) WithComponents(reg *components.Registry) *Simulator {
	cp := *s
	cp.components = reg
	return &cp
}

// New returns a Simulator for bp, and the Blueprints it uses.
func New(bp *ir.Blueprint) (*Simulator, error) {
	progs, err := expr.Compile(bp)
	if err != nil {
		return nil, err
	}
	s := &Simulator{bp: bp, progs: progs}
	all := ir.WithUsed([]*ir.Blueprint{bp})
	for i := len(all) - 2; i >= 0; i-- { // the last is bp
		ub := &usedBlueprint{bp: all[i]}
		if ub.progs, err = expr.Compile(ub.bp); err != nil {
			return nil, fmt.Errorf("the used Blueprint %s: %w", ub.bp.Name, err)
		}
		s.used = append(s.used, ub)
	}
	return s, nil
}

// Run reconciles in.CR in a fresh store, in.Passes times, then once more to
// measure idempotence. The remote reconciler, if the Blueprint has one, is
// in.Reply, in.Reconciler, or else called where the Blueprint says.
func (s *Simulator) Run(ctx context.Context, in Input) (*Outcome, error) {
	bp := s.bp
	switch {
	case in.Reply != nil:
		rs := newReplyServer(in.Reply)
		defer rs.srv.Close()
		bp = WithURL(bp, rs.srv.URL+"/reconcile")
	case in.Reconciler != nil:
		url, err := in.Reconciler.Endpoint(bp)
		if err != nil {
			return nil, err
		}
		p, err := in.Reconciler.Start(ctx, StartOptions{URL: url, BaseDir: in.BaseDir})
		if err != nil {
			return nil, err
		}
		defer p.Stop()
		bp = WithURL(bp, p.URL())
	}
	ss, err := s.newSession(ctx, bp, in.CR, in.Objects)
	if err != nil {
		if in.CRFile != "" {
			err = refused(in.CRFile, bp, err)
		}
		return nil, err
	}
	return ss.run(ctx, in.Passes, in.Observe)
}

// session is one custom resource in a fresh store, reconciled pass by
// pass: a case, and its steps.
type session struct {
	bp    *ir.Blueprint
	store *Store
	rec   syncer
	key   client.ObjectKey
	// cr is the custom resource as last read; it keeps its UID once the
	// CR is gone, to find what it owned.
	cr   *unstructured.Unstructured
	gone bool
	// used reconcile, after bp's, the custom resources of the Blueprints
	// bp uses: its children, and theirs.
	used []*usedRun
}

// syncer is what reconciles the session's custom resource, pass by pass:
// the runtime's reconciler, or a controller-runtime reconciler's.
type syncer interface {
	Sync(ctx context.Context, cr *unstructured.Unstructured) (*reconciler.Report, error)
}

// usedRun is a used Blueprint running in a session.
type usedRun struct {
	*usedBlueprint
	rec *reconciler.Reconciler
}

// newSession stores objects and cr in a fresh store and builds the
// reconciler for bp, which is s.bp or a copy of it calling another URL.
func (s *Simulator) newSession(ctx context.Context, bp *ir.Blueprint, cr *unstructured.Unstructured, objects []*unstructured.Unstructured) (*session, error) {
	reg := s.components
	if reg == nil {
		reg = components.Default
	}
	store := NewStore(bp)
	if bp.ControllerRef() != nil {
		scheme, err := controllerScheme(reg)
		if err != nil {
			return nil, err
		}
		store = newStore(bp, scheme)
	}
	for _, obj := range objects {
		o := obj.DeepCopy()
		if o.GetNamespace() == "" && s.namespaced(o.GroupVersionKind()) {
			o.SetNamespace("default")
		}
		if err := store.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	cr = cr.DeepCopy()
	if err := store.CreateCR(ctx, cr); err != nil {
		return nil, crRefused{err}
	}
	ss := &session{bp: bp, store: store, key: client.ObjectKeyFromObject(cr), cr: cr}
	if bp.ControllerRef() != nil {
		c, err := newControllerRun(bp, reg, store, ss.key)
		if err != nil {
			return nil, err
		}
		ss.rec = c
		return ss, nil
	}
	rec, err := newReconciler(bp, s.progs, s.renderer, reg, store)
	if err != nil {
		return nil, err
	}
	ss.rec = rec
	for _, ub := range s.used {
		rec, err := newReconciler(ub.bp, ub.progs, nil, reg, store)
		if err != nil {
			return nil, fmt.Errorf("the used Blueprint %s: %w", ub.bp.Name, err)
		}
		ss.used = append(ss.used, &usedRun{usedBlueprint: ub, rec: rec})
	}
	return ss, nil
}

// Epoch is the time of every pass of a simulation: what it prints (the
// conditions' lastTransitionTime) is the same on every run, so that its
// output can be kept in a file and compared.
var Epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

func clock() time.Time { return Epoch }

// newReconciler builds the reconciler of bp on store, rendering with r, or
// else progs. A remote reconciler must be running where the Blueprint (or
// the simulate file) says; a Go one must be in reg.
func newReconciler(bp *ir.Blueprint, progs *expr.Programs, r reconciler.Renderer, reg *components.Registry, store *Store) (*reconciler.Reconciler, error) {
	if r == nil {
		r = reconciler.CELRenderer{Programs: progs}
	}
	opts := reconciler.Options{Client: store, Renderer: r, Components: reg, Recorder: store, SkipStepBackoff: true, Clock: clock}
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil {
		var c remote.Caller
		var err error
		switch {
		case bp.Reconcile.Remote.Go != nil:
			// A Go reconciler compiled into this program: a plain inrun
			// refuses the Blueprint, naming what it lacks.
			c, err = remote.BuildGo(bp, reg, store, logr.Discard())
		default:
			// The runtime's own client, over HTTP or onto an existing API:
			// its bearer token is read from the Secret tokenSecret names,
			// here in the store, at each call, as on a cluster.
			c, err = controller.RemoteClient(bp, progs, store)
		}
		if err != nil {
			return nil, err
		}
		opts.Remote = c
	}
	return reconciler.New(bp, opts)
}

// sync runs one reconcile pass. Once the CR is gone a pass does nothing.
func (ss *session) sync(ctx context.Context) (*reconciler.Report, error) {
	if ss.gone {
		return &reconciler.Report{Pending: map[string]string{}}, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ss.bp.Resource.GroupVersionKind)
	if err := ss.store.Get(ctx, ss.key, live); err != nil {
		return nil, err
	}
	ss.cr = live
	rep, err := ss.rec.Sync(ctx, live)
	if rep == nil {
		return nil, err
	}
	if err := ss.collect(ctx); err != nil {
		return nil, err
	}
	return rep, ss.syncUsed(ctx, rep)
}

// syncUsed reconciles every custom resource of a used Blueprint's kind,
// each with that Blueprint, as its runtime would after the custom
// resource's was written. A used Blueprint's errors join rep's, each
// naming its object. Objects whose owners are all gone are then deleted,
// as the garbage collector would.
func (ss *session) syncUsed(ctx context.Context, rep *reconciler.Report) error {
	if len(ss.used) == 0 {
		return nil
	}
	for _, u := range ss.used {
		gvk := u.bp.Resource.GroupVersionKind
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := ss.store.List(ctx, list); err != nil {
			return err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			urep, err := u.rec.Sync(ctx, obj)
			if urep == nil {
				return fmt.Errorf("%s %s/%s, by the used Blueprint %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), u.bp.Name, err)
			}
			for _, e := range urep.Errors {
				rep.Errors = append(rep.Errors, fmt.Errorf("%s %s/%s (the used Blueprint %s): %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), u.bp.Name, e))
			}
		}
	}
	return ss.collectOrphans(ctx)
}

// collectOrphans deletes, until none is left, every object of a kind the
// Blueprints own whose owner references all name objects that are gone.
func (ss *session) collectOrphans(ctx context.Context) error {
	var kinds []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, b := range ir.WithUsed([]*ir.Blueprint{ss.bp}) {
		for _, k := range append([]ir.ResourceKind{{GroupVersionKind: b.Resource.GroupVersionKind}}, reconciler.OwnedKinds(b)...) {
			if !seen[k.GroupVersionKind] {
				seen[k.GroupVersionKind] = true
				kinds = append(kinds, k.GroupVersionKind)
			}
		}
	}
	for {
		var objs []*unstructured.Unstructured
		uids := map[types.UID]bool{}
		for _, gvk := range kinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := ss.store.List(ctx, list); err != nil {
				return err
			}
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
				uids[list.Items[i].GetUID()] = true
			}
		}
		deleted := 0
		for _, obj := range objs {
			refs := obj.GetOwnerReferences()
			if len(refs) == 0 || obj.GetDeletionTimestamp() != nil || slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return uids[r.UID] }) {
				// Deleted already, and held by a finalizer that a later
				// pass releases: deleting it again changes nothing.
				continue
			}
			if err := ss.store.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s %s/%s, whose owner is gone: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
			deleted++
		}
		if deleted == 0 {
			return nil
		}
	}
}

// children returns the CR's children by id, and the children of those
// that are a used Blueprint's custom resources by id.id: database.service
// is the Service of the Database the child database is.
func (ss *session) children(ctx context.Context, bp *ir.Blueprint, cr *unstructured.Unstructured) (map[string][]*unstructured.Unstructured, error) {
	if bp.ControllerRef() != nil {
		return controllerChildren(ctx, ss.store, bp, cr)
	}
	out, err := reconciler.Children(ctx, ss.store, bp, cr)
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(out)) {
		for _, obj := range out[id] {
			u := ss.usedOf(obj.GroupVersionKind())
			if u == nil {
				continue
			}
			nested, err := ss.children(ctx, u.bp, obj)
			if err != nil {
				return nil, err
			}
			for nid, nobjs := range nested {
				out[id+"."+nid] = append(out[id+"."+nid], nobjs...)
			}
		}
	}
	return out, nil
}

// usedOf returns the used Blueprint that reconciles gvk, or nil.
func (ss *session) usedOf(gvk schema.GroupVersionKind) *usedRun {
	for _, u := range ss.used {
		if u.bp.Resource.GroupVersionKind == gvk {
			return u
		}
	}
	return nil
}

// collect notices a CR that is gone and deletes what it owned, as the
// cluster's garbage collector would.
func (ss *session) collect(ctx context.Context) error {
	if ss.gone {
		return nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ss.bp.Resource.GroupVersionKind)
	err := ss.store.Get(ctx, ss.key, live)
	switch {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}
	ss.gone = true
	children, err := ss.children(ctx, ss.bp, ss.cr)
	if err != nil {
		return err
	}
	for _, objs := range children {
		for _, obj := range objs {
			for _, ref := range obj.GetOwnerReferences() {
				if ref.UID == ss.cr.GetUID() {
					if err := ss.store.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
						return fmt.Errorf("deleting %s %s/%s, owned by the deleted CR: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
					}
					break
				}
			}
		}
	}
	return nil
}

// run runs passes (DefaultPasses when zero), injecting observe after its
// pass, and returns the state of the store after them; then it runs one
// more to count the writes of a converged reconcile, unless a workflow
// still runs. The state is taken before that pass, which would otherwise
// make another call, write another status, or finish a deletion the
// case's passes left under way.
func (ss *session) run(ctx context.Context, passes int, observe []Observation) (*Outcome, error) {
	if passes <= 0 {
		passes = DefaultPasses
	}
	out := &Outcome{}
	_, from := ss.store.Events(ss.bp.Resource.GroupVersionKind, ss.key, 0)
	for i := 1; i <= passes; i++ {
		rep, err := ss.sync(ctx)
		if err != nil {
			return nil, err
		}
		out.Reports = append(out.Reports, rep)
		for _, o := range observe {
			if o.AfterPass == i {
				if err := ss.inject(ctx, o); err != nil {
					return nil, err
				}
			}
		}
	}
	out.CR, out.Gone = ss.cr, ss.gone
	if !ss.gone {
		out.CR = &unstructured.Unstructured{}
		out.CR.SetGroupVersionKind(ss.bp.Resource.GroupVersionKind)
		if err := ss.store.Get(ctx, ss.key, out.CR); err != nil {
			return nil, err
		}
	}
	var err error
	if out.Children, err = ss.children(ctx, ss.bp, out.CR); err != nil {
		return nil, err
	}

	out.Events, _ = ss.store.Events(ss.bp.Resource.GroupVersionKind, ss.key, from)

	if workflowRunning(ss.bp, out.CR) && out.CR.GetDeletionTimestamp() == nil {
		// A workflow still running is not converged either, and no further
		// pass runs: it would run the next step, which the case's next
		// step would then find done. A case may stop midway to check
		// where the workflow is.
		out.WorkflowRunning = true
		return out, nil
	}
	before := len(ss.store.Written(0))
	if _, err := ss.sync(ctx); err != nil {
		return nil, err
	}
	switch {
	case out.CR.GetDeletionTimestamp() != nil && !out.Gone:
		// A deletion under way is not converged: the finalizer deletes
		// what garbage collection cannot reach in one pass and releases
		// the CR in a later one, so the further pass may well write.
		out.Deleting = true
		out.GoneNext = ss.gone
	case ss.bp.ControllerRef() == nil:
		// A controller-runtime reconciler's writes are its own, as its
		// authors wrote it: idempotence is Inrun's promise about its own.
		// A write the store refused changed nothing: it is the CR's
		// Degraded condition that tells of it, not this.
		out.IdleWritten = ss.store.Written(before)
		out.IdleWrites = int64(len(out.IdleWritten))
	}
	return out, nil
}

// workflowRunning reports whether cr, of bp, has a workflow that is still
// running, as its status says.
func workflowRunning(bp *ir.Blueprint, cr *unstructured.Unstructured) bool {
	if bp.Reconcile == nil || bp.Reconcile.Workflow == nil {
		return false
	}
	phase, _, _ := unstructured.NestedString(cr.Object, "status", reconciler.WorkflowField, "phase")
	return phase == reconciler.WorkflowRunning
}

// patch applies a JSON merge patch to the CR as the API server would: the
// CRD's defaults filled in again, and a new generation when the spec
// changed.
func (ss *session) patch(ctx context.Context, patch map[string]any) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ss.bp.Resource.GroupVersionKind)
	if err := ss.store.Get(ctx, ss.key, live); err != nil {
		return err
	}
	oldSpec := live.Object["spec"]
	obj := mergePatch(live.DeepCopy().Object, patch).(map[string]any)
	u := &unstructured.Unstructured{Object: obj}
	// What a merge patch may not change.
	u.SetGroupVersionKind(live.GroupVersionKind())
	u.SetName(live.GetName())
	u.SetNamespace(live.GetNamespace())
	u.SetUID(live.GetUID())
	u.SetResourceVersion(live.GetResourceVersion())
	if ss.store.rules != nil {
		if err := ss.store.rules.strict(u); err != nil {
			return fmt.Errorf("patching the CR: %w", err)
		}
	}
	// Defaults first, so that a patch that only spells out a default
	// makes no new generation.
	if ss.store.rules != nil {
		defaulting.Default(u.Object, ss.store.rules.structural)
	}
	if !equality.Semantic.DeepEqual(oldSpec, u.Object["spec"]) {
		u.SetGeneration(live.GetGeneration() + 1)
	}
	if err := ss.store.Update(ctx, u); err != nil {
		return fmt.Errorf("patching the CR: %w", err)
	}
	return nil
}

// remove deletes the CR: with finalizers it stays, marked for deletion,
// until the passes release it.
func (ss *session) remove(ctx context.Context) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ss.bp.Resource.GroupVersionKind)
	if err := ss.store.Get(ctx, ss.key, live); err != nil {
		return err
	}
	if err := ss.store.Delete(ctx, live); err != nil {
		return fmt.Errorf("deleting the CR: %w", err)
	}
	if err := ss.collect(ctx); err != nil {
		return err
	}
	if len(ss.used) > 0 {
		return ss.collectOrphans(ctx)
	}
	return nil
}

// mergePatch applies an RFC 7386 JSON merge patch to doc.
func mergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return runtime.DeepCopyJSONValue(patch)
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergePatch(d[k], v)
	}
	return d
}

func (s *Simulator) namespaced(gvk schema.GroupVersionKind) bool {
	for _, c := range s.bp.Children {
		if c.GroupVersionKind == gvk {
			return c.Namespaced
		}
	}
	// A kind no child has: a Namespace a case gives, say.
	return !builtin.ClusterScoped(gvk.GroupKind())
}

// inject merges observed status into a child, as the cluster's own
// controllers would. The child is a template's id or, for what a remote
// reconciler returned, remote.<its id>; a child of a child that is a used
// Blueprint's custom resource is <its id>.<the id in that Blueprint>.
func (ss *session) inject(ctx context.Context, o Observation) error {
	head, _, _ := strings.Cut(o.Child, ".")
	if ss.bp.Child(head) == nil && !strings.HasPrefix(o.Child, remoteChildPrefix) {
		return fmt.Errorf("observe: the Blueprint has no child %q", head)
	}
	children, err := ss.children(ctx, ss.bp, ss.cr)
	if err != nil {
		return err
	}
	objs := children[o.Child]
	if len(objs) == 0 {
		return fmt.Errorf("observe after pass %d: child %q does not exist yet", o.AfterPass, o.Child)
	}
	for _, obj := range objs {
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		for k, v := range deepCopy(o.Status) {
			status[k] = v
		}
		obj.Object["status"] = status
		// Built-in kinds with status take it through the subresource only,
		// as on a cluster; other kinds keep it in the object.
		err := ss.store.Status().Update(ctx, obj)
		if err != nil {
			err = ss.store.Update(ctx, obj)
		}
		if err != nil {
			return fmt.Errorf("observe: writing status of %s: %w", types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, err)
		}
	}
	return nil
}

// remoteChildPrefix starts the id of a child a remote reconciler returned:
// remote.deployment for the resource it gave the id deployment.
const remoteChildPrefix = "remote."

// Result is the verdict on one case.
type Result struct {
	Case     string
	Failures []string
	Err      error
}

// Passed reports whether the case held.
func (r *Result) Passed() bool { return r.Err == nil && len(r.Failures) == 0 }

// RunCase runs one case of f and checks its expectations: the first
// passes and the case's expect, then each step in turn, each followed by
// one more pass that must write nothing. A step whose expectations fail
// ends the case. A case that names a child or status field the Blueprint
// does not have (CheckFile) does not run.
//
// The remote reconciler, when the Blueprint has one, is the case's or the
// file's recorded reply, served by an HTTP server in this process; else the
// file's reconciler process, started for the case unless Serve keeps one
// running; else the one the Blueprint names, which must be running.
func (s *Simulator) RunCase(ctx context.Context, f *File, c *Case) *Result {
	res := &Result{Case: c.Name}
	var refs diag.List
	if c.Reply == nil {
		s.checkFileReply(f, &refs)
	}
	if s.checkCase(f, c, &refs); len(refs) > 0 {
		res.Err = refs.Err()
		return res
	}
	cr, err := f.LoadCR(c)
	if err != nil {
		res.Err = err
		return res
	}
	var objects []*unstructured.Unstructured
	for _, o := range c.Objects {
		objects = append(objects, &unstructured.Unstructured{Object: deepCopy(o)})
	}
	bp, replies, done, err := s.endpoint(ctx, f, c)
	if err != nil {
		res.Err = err
		return res
	}
	defer func() {
		if err := done(); err != nil {
			if res.Err == nil {
				res.Err = err
			} else {
				res.Failures = append(res.Failures, err.Error())
			}
		}
	}()
	ss, err := s.newSession(ctx, bp, cr, objects)
	var refusal crRefused
	switch {
	case errors.As(err, &refusal) && len(c.Expect.Refused) > 0:
		res.Failures = refusedAsExpected("the CR", refusal.err, c.Expect.Refused, "")
		return res
	case err != nil:
		if c.CR != "" {
			err = refused(f.crPath(c), bp, err)
		}
		res.Err = err
		return res
	case len(c.Expect.Refused) > 0:
		res.Failures = refusedAsExpected("the CR", nil, c.Expect.Refused, "")
		return res
	}
	// The namespaces inrun e2e would make: the case's objects' and the
	// CR's. A child written into another is refused, as on a cluster.
	namespaces := []string{ss.key.Namespace}
	for _, o := range objects {
		namespaces = append(namespaces, o.GetNamespace())
	}
	ss.store.ExistingNamespaces(namespaces...)
	out, err := ss.run(ctx, c.Passes, c.Observe)
	if err != nil {
		res.Err = err
		return res
	}
	res.Failures = verdict(out, c.Expect, "")
	for i := range c.Steps {
		if len(res.Failures) > 0 {
			skipped := fmt.Sprintf("step %d did not run", i+1)
			if i+1 < len(c.Steps) {
				skipped = fmt.Sprintf("steps %d to %d did not run", i+1, len(c.Steps))
			}
			res.Failures = append(res.Failures, skipped)
			break
		}
		st := &c.Steps[i]
		where := fmt.Sprintf("step %d (%s): ", i+1, st.action())
		if st.Reply != nil {
			replies.set(st.Reply, st.Delete)
		}
		switch {
		case st.Patch != nil && len(st.Expect.Refused) > 0:
			res.Failures = refusedAsExpected("the patch", ss.patch(ctx, st.Patch), st.Expect.Refused, where)
			continue
		case st.Patch != nil:
			err = ss.patch(ctx, st.Patch)
		case st.Delete:
			err = ss.remove(ctx)
		}
		if err == nil {
			out, err = ss.run(ctx, st.Passes, st.Observe)
		}
		if err != nil {
			res.Err = fmt.Errorf("%s%w", where, err)
			return res
		}
		res.Failures = verdict(out, st.Expect, where)
	}
	return res
}

// crRefused is the API server's refusal of a case's CR.
type crRefused struct{ err error }

func (r crRefused) Error() string { return r.err.Error() }
func (r crRefused) Unwrap() error { return r.err }

// refusedAsExpected checks that what (the CR, a patch) was refused, by
// err, with each of the substrings want in its message.
func refusedAsExpected(what string, err error, want []string, prefix string) []string {
	problems := RefusalProblems(err, want)
	for i, p := range problems {
		problems[i] = fmt.Sprintf("%s%s %s", prefix, what, p)
	}
	return problems
}

// RefusalProblems checks an expect.refused: err is the API server's answer
// to a create or patch, want the substrings its message must hold. Each
// problem reads after the name of what was sent ("the patch ...").
func RefusalProblems(err error, want []string) []string {
	if err == nil {
		return []string{"was not refused: the API server took it, and expect.refused says it refuses it"}
	}
	var problems []string
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			problems = append(problems, fmt.Sprintf("was refused, but the message does not say %q: %v", w, err))
		}
	}
	return problems
}

// action names what a step does to the CR.
func (st *Step) action() string {
	switch {
	case st.Delete:
		return "delete"
	case st.Patch != nil:
		return "patch"
	}
	return "passes"
}

// verdict checks an outcome, idempotence included, prefixing every failure.
func verdict(out *Outcome, exp Expectation, prefix string) []string {
	fails := Check(out, exp)
	if out.IdleWrites != 0 {
		fails = append(fails, fmt.Sprintf("not idempotent: a further pass wrote again (%s); the reconcile should converge: what changes on every pass (a time, a random value, an order) makes it write forever",
			strings.Join(out.IdleWritten, ", ")))
	}
	for i := range fails {
		fails[i] = prefix + fails[i]
	}
	return fails
}

// checkItems compares a collection's objects with what ce expects of them.
func checkItems(ce ChildExpectation, objs []*unstructured.Unstructured) []string {
	var fails []string
	if ce.Count != nil && int64(len(objs)) != *ce.Count {
		fails = append(fails, fmt.Sprintf("child %q: expected %d objects, found %d", ce.ID, *ce.Count, len(objs)))
	}
	if ce.Items != nil {
		have := make([]any, len(objs))
		for i, o := range objs {
			have[i] = o.Object
		}
		if !match.Partial(have, ce.Items) {
			fails = append(fails, fmt.Sprintf("child %q items differ (-expected +got):\n%s", ce.ID, indent(match.Diff(have, widen(have, ce.Items)))))
		}
	}
	return fails
}

// Check compares an outcome with an expectation and describes every
// difference.
func Check(out *Outcome, exp Expectation) []string {
	var fails []string
	for _, ce := range exp.Children {
		objs := out.Children[ce.ID]
		if ce.Items != nil || ce.Count != nil {
			fails = append(fails, checkItems(ce, objs)...)
			continue
		}
		switch len(objs) {
		case 0:
			fails = append(fails, fmt.Sprintf("child %q: expected to exist, but it does not%s", ce.ID, pendingNote(out, ce.ID)))
			continue
		case 1:
		default:
			fails = append(fails, fmt.Sprintf("child %q: expected one object, found %d", ce.ID, len(objs)))
			continue
		}
		if !match.Partial(objs[0].Object, ce.Match) {
			fails = append(fails, fmt.Sprintf("child %q differs (-expected +got):\n%s", ce.ID, indent(match.Diff(objs[0].Object, widen(objs[0].Object, ce.Match)))))
		}
	}
	for _, id := range exp.Absent {
		if objs := out.Children[id]; len(objs) > 0 {
			fails = append(fails, fmt.Sprintf("child %q: expected to be absent, but %s %s exists", id, objs[0].GetKind(), objs[0].GetName()))
		}
	}
	if exp.Gone && !out.Gone {
		why := "it was not deleted"
		if out.CR.GetDeletionTimestamp() != nil {
			why = fmt.Sprintf("finalizers %v still hold it", out.CR.GetFinalizers())
		}
		fails = append(fails, "expected the CR to be gone, but "+why+pendingNote(out, "remote"))
	}
	if exp.Status != nil {
		status, _, _ := unstructured.NestedMap(out.CR.Object, "status")
		if !match.Partial(status, exp.Status) {
			fails = append(fails, "status differs (-expected +got):\n"+indent(match.Diff(status, widen(status, exp.Status))))
		}
	}
	if exp.Metadata != nil {
		md, _, _ := unstructured.NestedMap(out.CR.Object, "metadata")
		if !match.Partial(md, exp.Metadata) {
			fails = append(fails, "metadata differs (-expected +got):\n"+indent(match.Diff(md, widen(md, exp.Metadata))))
		}
	}
	if exp.Events != nil && !match.Partial(out.Events, exp.Events) {
		fails = append(fails, "events differ (-expected +got):\n"+indent(match.Diff(out.Events, widen(out.Events, exp.Events))))
	}
	errText := ""
	if err := errors.Join(out.Last().Errors...); err != nil {
		errText = err.Error()
	}
	switch {
	case len(exp.Errors) == 0 && errText != "":
		fails = append(fails, "expected no errors, got:\n"+indent(errText))
	default:
		for _, want := range exp.Errors {
			if !strings.Contains(errText, want) {
				got := errText
				if got == "" {
					got = "no errors"
				}
				fails = append(fails, fmt.Sprintf("expected an error containing %q, got:\n%s", want, indent(got)))
			}
		}
	}
	if len(fails) > 0 && out.Deleting && out.GoneNext {
		passes := "1 pass"
		if n := len(out.Reports); n > 1 {
			passes = fmt.Sprintf("%d passes", n)
		}
		fails = append(fails, fmt.Sprintf("the CR was still being deleted after %s, and one more released it: a deletion takes passes of its own (the finalizer deletes what garbage collection cannot reach, a cluster-scoped child or one in another namespace, in one pass, and lets the CR go in the next, after which its other children go); give the case or the step more passes", passes))
	}
	return fails
}

// widen returns want with every !contains that matches nothing in have as
// a plain list, which the diff shows against the whole list in have:
// projected on the items that match, which are none, have would show as
// empty however much it holds.
func widen(have, want any) any {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return want
		}
		out := make(map[string]any, len(w))
		for k, v := range w {
			out[k] = widen(h[k], v)
		}
		return out
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return want
		}
		out := make([]any, len(w))
		for i := range w {
			out[i] = widen(h[i], w[i])
		}
		return out
	case match.Contains:
		if !match.Partial(have, w) {
			return []any(w)
		}
	}
	return want
}

func pendingNote(out *Outcome, id string) string {
	if why, ok := out.Last().Pending[id]; ok {
		return " (" + why + ")"
	}
	return ""
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return "    " + strings.Join(lines, "\n    ")
}

// SortedIDs returns the ids of an outcome's children, sorted.
func (o *Outcome) SortedIDs() []string {
	ids := make([]string, 0, len(o.Children))
	for id := range o.Children {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
