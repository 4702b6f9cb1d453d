package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/remote"
)

// Options configure a Reconciler.
type Options struct {
	// Client reads and writes the cluster. Required.
	Client client.Client
	// APIReader reads objects the cache does not hold: externalRefs and
	// objects of an onCreate child's name that Inrun did not create. A
	// manager's GetAPIReader fits. Default: Client.
	APIReader client.Reader
	// FieldOwner is the server-side apply field manager. Default "inrun".
	FieldOwner string
	// Recorder records Events (events.k8s.io) on the custom resource.
	// Optional: a manager's GetEventRecorder fits.
	Recorder events.EventRecorder
	// Log is the logger used when the context carries none.
	Log logr.Logger
	// Renderer evaluates the Blueprint's expressions. Default: a
	// CELRenderer over the Blueprint's programs, compiled by New.
	Renderer Renderer
	// Clock returns the time used for condition transitions. Default
	// time.Now.
	Clock func() time.Time
	// Unavailable are child kinds the runtime may not list or watch, with
	// why. Their children are left alone and reported on every Sync.
	Unavailable map[schema.GroupVersionKind]error
	// OwnerIndex, when set, names a field index of the Client's cache on
	// LabelOwnerUID (see controller.Setup). Children are then listed
	// through it, not by scanning every object of their kind.
	OwnerIndex string
	// Remote calls the Blueprint's remote reconciler. Required when the
	// Blueprint has one (reconcile.url or reconcile.service); the runtime
	// builds it with remote.New.
	Remote remote.Caller
	// Components has the Go hooks the Blueprint's children name
	// (go.transform); New fails naming any it lacks. Default
	// components.Default.
	Components *components.Registry
	// HookTimeout bounds one call of a hook. Default DefaultHookTimeout.
	HookTimeout time.Duration
	// Deprecation says, each pass, whether the pattern version the
	// Blueprint runs as is deprecated (the Deprecated condition). Default:
	// a holder of the Blueprint's own Deprecated, which never changes.
	Deprecation *DeprecationHolder
	// SkipStepBackoff calls a workflow's step again in the pass after a
	// failed attempt, not once its backoffSeconds have passed: simulate's
	// passes are the runtime's next reconciles, wherever they fall in time.
	SkipStepBackoff bool
	// ShardBuckets, when set, is the bucket count of a shard group (package
	// shard): every child is labelled shard.LabelOwnerBucket with its
	// custom resource's bucket, so that each replica caches only the
	// children of its buckets.
	ShardBuckets int
}

// DefaultHookTimeout bounds a hook's call when Options.HookTimeout is
// zero. A hook runs inside the pass, so it is short.
const DefaultHookTimeout = 5 * time.Second

func (o *Options) setDefaults(bp *ir.Blueprint) error {
	if o.Client == nil {
		return errors.New("reconciler: Options.Client is required")
	}
	if o.APIReader == nil {
		o.APIReader = o.Client
	}
	if o.FieldOwner == "" {
		o.FieldOwner = ManagedBy
	}
	if o.Recorder == nil {
		o.Recorder = discardRecorder{}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Components == nil {
		o.Components = components.Default
	}
	if o.HookTimeout <= 0 {
		o.HookTimeout = DefaultHookTimeout
	}
	if o.Deprecation == nil {
		o.Deprecation = NewDeprecationHolder(bp.Deprecated)
	}
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil && o.Remote == nil {
		return fmt.Errorf("reconciler: Blueprint %s calls a remote reconciler, but Options.Remote is not set", bp.Name)
	}
	if o.Renderer == nil {
		p, err := expr.Compile(bp)
		if err != nil {
			return fmt.Errorf("reconciler: compiling expressions of %s: %w", bp.Name, err)
		}
		o.Renderer = CELRenderer{Programs: p}
	}
	return nil
}

type discardRecorder struct{}

func (discardRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {
}

// ExternalResync is how often a custom resource that reads an externalRef
// by name of a kind the runtime may not watch is reconciled again to
// notice changes to it.
const ExternalResync = 30 * time.Second

// Reconciler reconciles the custom resources of one Blueprint.
type Reconciler struct {
	bp   *ir.Blueprint
	opts Options
	// echoes holds the resourceVersion of each child, by objectKey, as
	// this Reconciler's last write of it left it (see IsEcho).
	echoes sync.Map
	// statuses holds this Reconciler's last status write of each custom
	// resource, by objectKey (see catchUp).
	statuses sync.Map
	// selections holds, by objectKey of a custom resource, the
	// []Selection its externalRefs read last (see Selecting).
	selections sync.Map
	// cleanedUp holds, by objectKey, the UID of each custom resource being
	// deleted whose remote reconciler answered done: the passes that then
	// wait for children garbage collection cannot reach to go do not ask
	// it again.
	cleanedUp sync.Map
	// replaced holds, by objectKey of a custom resource, a *replacing:
	// what its reconciler's recent calls created and pruned.
	replaced sync.Map
	// reads is what passes read of each child (see Relevant); nil when
	// every update of a child counts.
	reads map[string]*childReads
	// transforms are the Go hooks of the children that name one, by name.
	transforms map[string]components.TransformFunc
	// argsHook and statusHook are the Blueprint's own Go hooks (go:), or
	// nil.
	argsHook   components.ArgsFunc
	statusHook components.StatusFunc
}

// statusWrite is a status written: the custom resource's resourceVersion
// just before, and the status it was given.
type statusWrite struct {
	before string
	status any
}

// catchUp gives cr, read from a cache that has not seen this Reconciler's
// last status write of it yet, the status that write made: without it, a
// reconcile that runs before the write's watch event arrives (woken by a
// child's event) would compute the same status again from the stale one
// and write it a second time.
func (r *Reconciler) catchUp(cr *unstructured.Unstructured) {
	if v, ok := r.statuses.Load(echoKey(cr)); ok {
		r.give(cr, v)
	}
}

// give gives cr the status written, a *statusWrite that statuses held for
// cr, if cr is the version that write was made over, and forgets the write
// if not: the cache has caught up, or the object changed since.
func (r *Reconciler) give(cr *unstructured.Unstructured, written any) {
	w := written.(*statusWrite)
	if w.before != cr.GetResourceVersion() {
		r.statuses.CompareAndDelete(echoKey(cr), written)
		return
	}
	cr.Object["status"] = runtime.DeepCopyJSONValue(w.status)
}

// CaughtUp forgets the status this Reconciler last wrote to cr, of the
// Blueprint's kind, once a watch event brings a version of cr other than
// the one that write was made over: the cache holds the write, or a newer
// change, and catchUp has nothing left to give. Without it every custom
// resource kept a copy of its last status until its next reconcile.
func (r *Reconciler) CaughtUp(cr client.Object) {
	key := objectKey{gvk: r.bp.Resource.GroupVersionKind, namespace: cr.GetNamespace(), name: cr.GetName()}
	if v, ok := r.statuses.Load(key); ok && v.(*statusWrite).before != cr.GetResourceVersion() {
		r.statuses.CompareAndDelete(key, v)
	}
}

// wroteStatus remembers the status a write gives cr, whose resourceVersion
// is before, and returns what it remembered, for forgetStatus.
func (r *Reconciler) wroteStatus(cr *unstructured.Unstructured, before string, status map[string]any) *statusWrite {
	w := &statusWrite{before: before, status: runtime.DeepCopyJSONValue(status)}
	r.statuses.Store(echoKey(cr), w)
	return w
}

// forgetStatus forgets w, what wroteStatus remembered of cr, unless a
// later write has replaced it.
func (r *Reconciler) forgetStatus(cr *unstructured.Unstructured, w *statusWrite) {
	r.statuses.CompareAndDelete(echoKey(cr), w)
}

var _ reconcile.Reconciler = &Reconciler{}

// New returns a Reconciler for bp, which must come from the compiler.
func New(bp *ir.Blueprint, opts Options) (*Reconciler, error) {
	if err := opts.setDefaults(bp); err != nil {
		return nil, err
	}
	r := &Reconciler{bp: bp, opts: opts, reads: readsOf(bp), transforms: map[string]components.TransformFunc{}}
	var missing []string
	for _, n := range components.Needs(bp) {
		ok := true
		switch n.What {
		case components.Transform:
			r.transforms[n.Name], ok = opts.Components.Transform(n.Name)
		case components.Args:
			r.argsHook, ok = opts.Components.ArgsHook(n.Name)
		case components.Status:
			r.statusHook, ok = opts.Components.StatusHook(n.Name)
		}
		if !ok {
			missing = append(missing, n.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("blueprint %s names Go code this inrun does not have: %s. To run it, %s", bp.Name, strings.Join(missing, ", "), components.BuildHint)
	}
	return r, nil
}

// Blueprint returns the Blueprint the Reconciler runs.
func (r *Reconciler) Blueprint() *ir.Blueprint { return r.bp }

// Reconcile implements reconcile.Reconciler: it reads the custom resource
// and runs Sync on it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := objectKey{gvk: r.bp.Resource.GroupVersionKind, namespace: req.Namespace, name: req.Name}
	cr, err := r.read(ctx, key)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.statuses.Delete(key)
			r.selections.Delete(key)
			r.cleanedUp.Delete(key)
			r.replaced.Delete(key)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	report, err := r.syncCaughtUp(ctx, cr)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: report.RequeueAfter}, nil
}

// read gets the custom resource key names from the client (the cache),
// with the status this Reconciler last wrote to it if the cache has not
// caught up with that write. The write is looked up before the cache is
// read, not after: CaughtUp forgets it once the cache holds a newer
// version, which may happen between the read and a later look, and the
// version read would then be reconciled without it and its status written
// a second time (seen under load in the fault matrix's kill row). Looked up
// first, a write forgotten is one the cache already held when it was read.
func (r *Reconciler) read(ctx context.Context, key objectKey) (*unstructured.Unstructured, error) {
	written, _ := r.statuses.Load(key)
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(key.gvk)
	if err := r.opts.Client.Get(ctx, types.NamespacedName{Namespace: key.namespace, Name: key.name}, cr); err != nil {
		return nil, err
	}
	if written != nil {
		r.give(cr, written)
	}
	return cr, nil
}

func (r *Reconciler) hasRemote() bool {
	return r.bp.Reconcile != nil && r.bp.Reconcile.Remote != nil
}

// IsEcho reports whether a watch event of obj only brings back this
// Reconciler's own last write of it. The pass that wrote obj went on with
// the API server's answer, so reconciling again for its echo would find
// nothing to do: in the benchmark, one reconcile in four after an edit.
// Anyone else's change has another resourceVersion and is no echo. Each
// write answers one call. gvk is obj's kind, which a typed object from a
// watch does not carry.
func (r *Reconciler) IsEcho(gvk schema.GroupVersionKind, obj client.Object) bool {
	return r.echoes.CompareAndDelete(objectKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()}, obj.GetResourceVersion())
}

// Forget drops what IsEcho knows of obj, of kind gvk, once it is deleted.
func (r *Reconciler) Forget(gvk schema.GroupVersionKind, obj client.Object) {
	r.echoes.Delete(objectKey{gvk: gvk, namespace: obj.GetNamespace(), name: obj.GetName()})
}

// wrote remembers obj as the API server answered a write of it.
func (r *Reconciler) wrote(obj client.Object) {
	if rv := obj.GetResourceVersion(); rv != "" {
		r.echoes.Store(echoKey(obj), rv)
	}
}

// echoKey names obj by kind, namespace and name; an object deleted and
// created again has a new resourceVersion, so it is no echo either.
func echoKey(obj client.Object) objectKey {
	return objectKey{gvk: obj.GetObjectKind().GroupVersionKind(), namespace: obj.GetNamespace(), name: obj.GetName()}
}

// Report says what one Sync did.
type Report struct {
	// Created, Applied and Pruned list children as "Kind namespace/name".
	Created []string
	Applied []string
	Pruned  []string
	// LeftAlone lists the objects prune or cleanup would have deleted
	// that carry the inventory labels but that Inrun never wrote.
	LeftAlone []string
	// Unlisted are the kinds PruneUndeclared may not list (RBAC), whose
	// objects it could not search.
	Unlisted []string
	// Pending are children not rendered yet, with what they wait for.
	Pending map[string]string
	// Errors are the problems found: failed expressions, refused writes.
	// Their children were left as they are.
	Errors []error
	// Writes counts API writes made, status included.
	Writes int
	// RequeueAfter asks to be called again, e.g. while waiting.
	RequeueAfter time.Duration
}

// Err joins Report.Errors.
func (rep *Report) Err() error { return errors.Join(rep.Errors...) }

// Sync reconciles one custom resource: finalizer, children, prune, status.
// It returns an error only for failures worth retrying with backoff; the
// Blueprint's own problems (failing expressions) are in Report.Errors and
// in the Degraded condition.
func (r *Reconciler) Sync(ctx context.Context, cr *unstructured.Unstructured) (*Report, error) {
	r.catchUp(cr)
	return r.syncCaughtUp(ctx, cr)
}

// syncCaughtUp is Sync of cr once caught up (catchUp, or read for Reconcile).
func (r *Reconciler) syncCaughtUp(ctx context.Context, cr *unstructured.Unstructured) (*Report, error) {
	log := logr.FromContextOrDiscard(ctx)
	if log.GetSink() == nil {
		log = r.opts.Log
	}
	log = log.WithValues("blueprint", r.bp.Name)
	ctx = logr.NewContext(ctx, log)

	rep := &Report{Pending: map[string]string{}}
	if !cr.GetDeletionTimestamp().IsZero() {
		return rep, r.finalize(ctx, cr, rep)
	}

	pass := &pass{Reconciler: r, cr: cr, rep: rep}
	if err := pass.observe(ctx); err != nil {
		return rep, r.fail(ctx, cr, rep, "ObserveFailed", err)
	}
	if r.hasRemote() && !controllerutil.ContainsFinalizer(cr, Finalizer) {
		// The reconciler is sent a finalizing request before the custom
		// resource goes, which the finalizer waits for.
		if err := pass.addFinalizer(ctx); err != nil {
			return rep, r.fail(ctx, cr, rep, "FinalizerFailed", err)
		}
	}
	if templateSteps(r.bp) {
		pass.beginWorkflow()
	}
	pass.children(ctx)
	switch {
	case r.hasRemote():
		pass.remote(ctx)
	case pass.wf != nil:
		pass.steps(ctx)
	}
	pass.recordWrites()
	pass.prune(ctx)
	pass.noteReplaced()
	r.selected(cr, pass.selections)
	pass.evalConditions()
	if err := pass.writeStatus(ctx); err != nil {
		pass.forgetResult()
		return rep, r.fail(ctx, cr, rep, "StatusFailed", err)
	}
	if pass.transient != nil {
		pass.forgetResult()
		return rep, pass.transient
	}
	if pass.readExternals && rep.RequeueAfter == 0 {
		// An object that cannot be watched: look again.
		rep.RequeueAfter = ExternalResync
	}
	return rep, nil
}

// fail records err as an Event and returns it for a retry with backoff.
func (r *Reconciler) fail(ctx context.Context, cr *unstructured.Unstructured, rep *Report, reason string, err error) error {
	rep.Errors = append(rep.Errors, err)
	if ctx.Err() != nil {
		// The runtime is stopping (or a shard's caches are rebuilt): the
		// call was cut short, the custom resource did not fail.
		return err
	}
	r.opts.Recorder.Eventf(cr, nil, corev1.EventTypeWarning, reason, "Reconcile", "%v", err)
	logr.FromContextOrDiscard(ctx).Error(err, reason)
	return err
}

// finalize deletes the children garbage collection cannot reach, then
// releases the custom resource.
func (r *Reconciler) finalize(ctx context.Context, cr *unstructured.Unstructured, rep *Report) error {
	key := echoKey(cr)
	if !controllerutil.ContainsFinalizer(cr, Finalizer) {
		r.cleanedUp.Delete(key)
		return nil
	}
	p := &pass{Reconciler: r, cr: cr, rep: rep}
	if err := p.observe(ctx); err != nil {
		return r.fail(ctx, cr, rep, "CleanupFailed", err)
	}
	if uid, _ := r.cleanedUp.Load(key); r.hasRemote() && uid != cr.GetUID() {
		done, err := p.finalizeRemote(ctx)
		if err != nil {
			err = r.fail(ctx, cr, rep, "ReconcilerFailed", err)
			// Degraded must say why the custom resource is not gone, not
			// what failed before it was deleted.
			if werr := p.writeConditions(ctx); werr != nil && !apierrors.IsNotFound(werr) {
				logr.FromContextOrDiscard(ctx).Error(werr, "reporting a failed finalizing call")
			}
			return err
		}
		if !done {
			return nil // RequeueAfter is set: ask again
		}
		// Done is not asked again while the children below go. Kept in
		// memory only: a restarted runtime asks once more.
		r.cleanedUp.Store(key, cr.GetUID())
	}
	remaining := 0
	for _, objs := range p.observed {
		for _, obj := range objs {
			if p.ownedByGC(obj) {
				continue
			}
			err := p.delete(ctx, obj)
			var notOurs *NotWrittenError
			if errors.As(err, &notOurs) {
				p.leftAlone(obj, notOurs)
				continue // not Inrun's to delete, nor to wait for
			}
			if err != nil {
				return r.fail(ctx, cr, rep, "CleanupFailed", err)
			}
			remaining++
		}
	}
	if remaining > 0 {
		// Deletes are asynchronous: come back once they are gone.
		rep.RequeueAfter = time.Second
		return nil
	}
	patch := client.MergeFrom(cr.DeepCopy())
	controllerutil.RemoveFinalizer(cr, Finalizer)
	if err := r.opts.Client.Patch(ctx, cr, patch); err != nil && !apierrors.IsNotFound(err) {
		return r.fail(ctx, cr, rep, "CleanupFailed", err)
	}
	r.cleanedUp.Delete(key)
	rep.Writes++
	return nil
}
