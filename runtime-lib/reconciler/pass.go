package reconciler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/shard"
)

// pass is the state of one Sync of one custom resource.
type pass struct {
	*Reconciler
	cr  *unstructured.Unstructured
	rep *Report

	// observed are the objects labelled as this custom resource's
	// children, by child id.
	observed map[string][]*unstructured.Unstructured
	// typed holds the typed object of each child listed or applied typed
	// (TypedKind), which expressions read instead of converting it.
	typed map[*unstructured.Unstructured]runtime.Object
	// partial marks the objects of typed whose unstructured view holds
	// only their kind and metadata (metaView), until whole fills it.
	partial map[*unstructured.Unstructured]bool
	// live is the object each child id stands for in expressions.
	live map[string]*unstructured.Unstructured
	eval Evaluation

	// wanted is the identity each rendered child has this pass.
	wanted map[string]objectKey
	// keep marks children whose objects must not be pruned this pass,
	// because they failed or wait for something.
	keep map[string]bool
	// excluded marks children whose includeWhen is false.
	excluded map[string]bool
	// notReady lists children that exist but are not ready yet.
	notReady []string
	// isReady marks children that exist and are ready: those that read
	// them are rendered.
	isReady map[string]bool
	// pendingStatus names the status fields that wait for data a child
	// does not have yet.
	pendingStatus []string
	// items are the live objects of each collection rendered this pass,
	// in the order of its items.
	items map[string][]*unstructured.Unstructured
	// wantedItems are the identities a collection's items have this pass.
	wantedItems map[string]map[objectKey]bool
	// failed marks children whose render or write failed.
	failed map[string]bool
	// transient is an API failure worth a retry with backoff.
	transient error
	// remoteState is what the remote reconciler answered this pass.
	remoteState remoteState
	// wf is the workflow's progress (reconcile.workflow); nil without one.
	wf *workflowRun
	// readExternals is set once an externalRef has been read by name of
	// a kind the runtime may not watch: it is read again later.
	readExternals bool
	// written are the children created or applied this pass.
	written []*unstructured.Unstructured
	// selections are what this pass's externalRefs read.
	selections []Selection
	// custom are the custom conditions (emit.conditions) of this pass.
	custom []metav1.Condition
	// readyWhen is what emit.readyWhen says this pass; nil without one.
	readyWhen *readiness
}

// objectKey identifies an object across kinds and namespaces.
type objectKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()}
}

func (k objectKey) String() string {
	if k.namespace == "" {
		return k.gvk.Kind + " " + k.name
	}
	return k.gvk.Kind + " " + k.namespace + "/" + k.name
}

// identityKey is an object's kind, namespace and name: what stays the
// same when its apiVersion moves to another version.
type identityKey struct {
	gk              schema.GroupKind
	namespace, name string
}

func identityOf(u *unstructured.Unstructured) identityKey { return keyOf(u).identity() }

func (k objectKey) identity() identityKey {
	return identityKey{gk: k.gvk.GroupKind(), namespace: k.namespace, name: k.name}
}

// taken reports, as c's error, that another child already has the object
// key names this pass: two children of one name would overwrite each
// other on every pass. The first in order keeps it.
func (p *pass) taken(ctx context.Context, c *ir.Child, key objectKey) bool {
	want := key.identity()
	other := ""
	for id, k := range p.wanted {
		if id != c.ID && k.identity() == want {
			other = id
		}
	}
	for id, items := range p.wantedItems {
		for k := range items {
			if id != c.ID && k.identity() == want {
				other = id
			}
		}
	}
	if other == "" {
		return false
	}
	p.childError(ctx, c, fmt.Errorf("%s is child %q's already: two children cannot be one object; give each its own metadata.name, or make their includeWhen exclusive", key, strings.TrimPrefix(other, remotePrefix)))
	p.keep[c.ID] = true
	return true
}

// wantedAnywhere returns the identities of every object a child has this
// pass, whatever the child.
func (p *pass) wantedAnywhere() map[identityKey]bool {
	out := map[identityKey]bool{}
	for _, k := range p.wanted {
		out[k.identity()] = true
	}
	for _, items := range p.wantedItems {
		for k := range items {
			out[k.identity()] = true
		}
	}
	return out
}

// observe lists this custom resource's children by their inventory labels.
func (p *pass) observe(ctx context.Context) error {
	p.live = map[string]*unstructured.Unstructured{}
	p.wanted = map[string]objectKey{}
	p.keep = map[string]bool{}
	p.excluded = map[string]bool{}
	p.failed = map[string]bool{}
	p.isReady = map[string]bool{}
	p.items = map[string][]*unstructured.Unstructured{}
	p.wantedItems = map[string]map[objectKey]bool{}

	observed, typed, err := listChildren(ctx, p.opts.Client, p.bp, p.cr, p.opts.Unavailable, p.opts.OwnerIndex, false)
	if err != nil {
		return err
	}
	// A child within the custom resource's reach always carries its
	// owner reference: an object there with the inventory labels and
	// without it had the labels copied onto it (kubectl get -o yaml, a new
	// name, kubectl create). It is none of the children: neither read
	// nor pruned. One of a child's name is claimed again, as on create.
	for id, objs := range observed {
		kept := objs[:0]
		for _, obj := range objs {
			if !p.canOwn(obj) || p.ownedByGC(obj) {
				kept = append(kept, obj)
			}
		}
		if len(kept) == 0 {
			delete(observed, id)
		} else {
			observed[id] = kept
		}
	}
	p.observed = observed
	p.typed = typed
	p.partial = make(map[*unstructured.Unstructured]bool, len(typed))
	for obj := range typed {
		p.partial[obj] = true
	}
	for id, objs := range p.observed {
		if !p.singular(id) {
			for _, obj := range objs {
				p.whole(obj)
			}
		}
		p.live[id] = objs[0]
	}
	eval, err := p.opts.Renderer.Begin(p.cr)
	if err != nil {
		return err
	}
	p.eval = eval
	for id, obj := range p.live {
		c := p.bp.Child(id)
		switch {
		case c == nil:
		case len(c.ForEach) > 0:
			delete(p.live, id)
		default:
			if err := p.present(id, obj); err != nil {
				return err
			}
		}
	}
	return nil
}

// present presents obj as the live object of the child id: by its typed
// object when it was listed typed and the Evaluation takes one, and with
// its whole view unless the Evaluation reads the typed object alone.
func (p *pass) present(id string, obj *unstructured.Unstructured) error {
	if t, ok := p.eval.(TypedEvaluation); ok && obj != nil {
		if native := p.typed[obj]; native != nil {
			if r, ok := p.eval.(TypedReader); !ok || !r.ReadsTyped(id, native) {
				p.whole(obj)
			}
			return t.SetLiveTyped(id, obj, native)
		}
	}
	return p.eval.SetLive(id, p.whole(obj))
}

// singular reports whether id is a child of the Blueprint that stands for
// one object: not a collection, a selection or a remote reconciler's
// resource. Only such children keep metadata views; the others' objects
// go whole to what reads them.
func (p *pass) singular(id string) bool {
	c := p.bp.Child(id)
	return c != nil && len(c.ForEach) == 0 && !c.Selector
}

// whole returns obj with its whole unstructured view, converting it from
// its typed object, in place, the first time something reads more of a
// metadata view than its metadata: a remote reconciler, a Go hook, an
// Evaluation that reads it unstructured.
func (p *pass) whole(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil || !p.partial[obj] {
		return obj
	}
	delete(p.partial, obj)
	full, err := viewOf(p.typed[obj], obj.GroupVersionKind())
	if err != nil {
		// A typed object the API server sent that its own Go type cannot
		// convert: a bug, reported with the pass.
		p.rep.Errors = append(p.rep.Errors, fmt.Errorf("reading %s: %w", keyOf(obj), err))
		return obj
	}
	obj.Object = full.Object
	return obj
}

// upToDate reports whether live already holds everything desired says:
// compared in the typed object when live is a metadata view.
func (p *pass) upToDate(desired, live *unstructured.Unstructured) bool {
	if p.partial[live] {
		return upToDateTyped(desired, live, p.typed[live])
	}
	return upToDate(desired, live)
}

// kindReady is the Reconciler's readiness rule of live's kind, judged
// from the typed object when live is a metadata view.
func (p *pass) kindReady(live *unstructured.Unstructured) bool {
	if _, typed := p.typed[live].(client.Object); p.partial[live] && typed && p.readyOnceItExists(live.GroupVersionKind()) {
		return true // a Service, a ConfigMap: no status to convert
	}
	return p.Reconciler.kindReady(p.ruleView(live))
}

// ruleView is live as its kind's readiness rule reads it: from the typed
// object, the fields the rule reads, when live is a metadata view.
func (p *pass) ruleView(live *unstructured.Unstructured) *unstructured.Unstructured {
	if p.partial[live] {
		if native, ok := p.typed[live].(client.Object); ok {
			gvk := live.GroupVersionKind()
			return readinessView(gvk, native, typedStatus(native, p.kindReadsStatus(gvk)))
		}
		p.whole(live)
	}
	return live
}

// Children lists the objects labelled as children of cr by bp, by child
// id, each id's objects sorted by kind, namespace and name.
func Children(ctx context.Context, r client.Reader, bp *ir.Blueprint, cr *unstructured.Unstructured) (map[string][]*unstructured.Unstructured, error) {
	out, _, err := listChildren(ctx, r, bp, cr, nil, "", true)
	return out, err
}

// listChildren lists cr's children by child id. The kinds TypedKind names
// are listed typed, as the cache holds them; typed then has the typed
// object of each of their unstructured views, which are whole views when
// whole is set and metadata views (metaView) when not.
func listChildren(ctx context.Context, r client.Reader, bp *ir.Blueprint, cr *unstructured.Unstructured, skip map[schema.GroupVersionKind]error, ownerIndex string, whole bool) (out map[string][]*unstructured.Unstructured, typed map[*unstructured.Unstructured]runtime.Object, err error) {
	opts := []client.ListOption{client.MatchingLabels{LabelBlueprint: bp.Name, LabelOwnerUID: string(cr.GetUID())}}
	if ownerIndex != "" {
		opts = append(opts, client.MatchingFields{ownerIndex: string(cr.GetUID())})
	}
	scheme := schemeOf(r)
	out = map[string][]*unstructured.Unstructured{}
	typed = map[*unstructured.Unstructured]runtime.Object{}
	for _, k := range OwnedKinds(bp) {
		if skip[k.GroupVersionKind] != nil {
			continue
		}
		var objs []*unstructured.Unstructured
		if TypedKind(scheme, k.GroupVersionKind) {
			var natives []runtime.Object
			objs, natives, err = listTyped(ctx, r, scheme, k.GroupVersionKind, opts, whole)
			for i, obj := range objs {
				typed[obj] = natives[i]
			}
		} else {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(listOf(k.GroupVersionKind))
			err = r.List(ctx, list, opts...)
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s children: %w", k.Kind, explainKind(err, "list", k.Plural))
		}
		for _, obj := range objs {
			id := obj.GetLabels()[LabelChild]
			out[id] = append(out[id], obj)
		}
	}
	for _, objs := range out {
		sort.Slice(objs, func(i, j int) bool { return keyOf(objs[i]).String() < keyOf(objs[j]).String() })
	}
	return out, typed, nil
}

// children renders and writes every child in dependency order. A child
// that reads others waits until they exist and are ready; one that reads a
// child includeWhen left out is left out too.
func (p *pass) children(ctx context.Context) {
	for _, c := range p.bp.Children {
		if err := p.opts.Unavailable[c.GroupVersionKind]; err != nil && !c.External {
			p.childError(ctx, c, err)
			continue
		}
		if p.stepHolds(ctx, c) {
			continue
		}
		if p.readsExcluded(c) {
			p.excluded[c.ID] = true
			p.setLive(c.ID, nil)
			continue
		}
		if missing := p.missing(c); len(missing) > 0 {
			p.rep.Pending[c.ID] = "waiting for " + strings.Join(missing, ", ")
			p.keep[c.ID] = true
			continue
		}
		if unready := p.unready(c); len(unready) > 0 {
			p.rep.Pending[c.ID] = "waiting for " + strings.Join(unready, ", ") + " to be ready"
			p.keep[c.ID] = true
			continue
		}
		if len(c.ForEach) > 0 {
			p.collection(ctx, c)
			continue
		}
		include, err := p.eval.Include(c)
		if err != nil {
			p.evalError(ctx, c, err)
			continue
		}
		if !include {
			p.excluded[c.ID] = true
			p.setLive(c.ID, nil)
			continue
		}
		if c.External {
			p.readExternal(ctx, c)
			continue
		}
		desired, err := p.render(ctx, c)
		if err != nil {
			p.evalError(ctx, c, err)
			continue
		}
		key := keyOf(desired)
		if p.taken(ctx, c, key) {
			continue
		}
		p.wanted[c.ID] = key
		var current *unstructured.Unstructured
		for _, obj := range p.observed[c.ID] {
			if keyOf(obj) == key {
				current = obj
			}
		}
		if !p.canOwn(desired) && !controllerutil.ContainsFinalizer(p.cr, Finalizer) {
			if err := p.addFinalizer(ctx); err != nil {
				p.apiError(ctx, c, err, "patch")
				continue
			}
		}
		switch {
		case c.Phase == ir.OnCreate && current != nil:
			p.setLive(c.ID, current)
		case c.Phase == ir.OnCreate:
			p.create(ctx, c, desired)
		default:
			if obj := p.ensure(ctx, c, desired, current); obj != nil {
				p.setLive(c.ID, obj)
			}
		}
		if live := p.live[c.ID]; live != nil && !p.failed[c.ID] {
			p.checkReady(ctx, c, live)
		}
	}
}

// checkReady records whether the live object of c is ready.
func (p *pass) checkReady(ctx context.Context, c *ir.Child, live *unstructured.Unstructured) {
	ready, err := p.ready(c, live)
	if err == nil && !ready {
		// Not "waiting", when it will never be ready by itself. Only
		// then is its status read again: ready children, most of them,
		// cost nothing more.
		if failed := p.failedForGood(c, live); failed != "" {
			p.childError(ctx, c, fmt.Errorf("%s %s failed: %s", c.Kind, live.GetName(), failed))
			return
		}
	}
	switch {
	case err != nil && !expr.DataPending(err):
		p.childError(ctx, c, err)
	case err != nil || !ready: // data readyWhen reads is not there yet: not ready
		p.notReady = append(p.notReady, c.ID)
	default:
		p.isReady[c.ID] = true
	}
}

// evalError records an expression of c that failed: a wait when it read
// data a child does not have yet, a Blueprint or custom resource problem
// otherwise. Either way c's object is kept as it is.
func (p *pass) evalError(ctx context.Context, c *ir.Child, err error) {
	if expr.DataPending(err) {
		p.rep.Pending[c.ID] = pendingData(err)
		p.keep[c.ID] = true
		return
	}
	p.childError(ctx, c, err)
}

// pendingData says what a DataPending error waits for.
func pendingData(err error) string {
	var ee *expr.EvalError
	if errors.As(err, &ee) {
		return fmt.Sprintf("waiting for ${%s} to have a value (%v)", ee.Expr.Source, ee.Err)
	}
	return "waiting for data: " + err.Error()
}

// missing returns the children c reads that have no live object.
func (p *pass) missing(c *ir.Child) []string {
	var out []string
	for _, d := range c.DependsOn {
		if _, isCollection := p.items[d]; p.live[d] == nil && !isCollection {
			out = append(out, d)
		}
	}
	return out
}

// unready returns the children c reads that exist but are not ready.
func (p *pass) unready(c *ir.Child) []string {
	var out []string
	for _, d := range c.DependsOn {
		if !p.isReady[d] {
			out = append(out, d)
		}
	}
	return out
}

// readsExcluded reports whether c reads a child that includeWhen left out.
func (p *pass) readsExcluded(c *ir.Child) bool {
	for _, d := range c.DependsOn {
		if p.excluded[d] {
			return true
		}
	}
	return false
}

func (p *pass) setLive(id string, obj *unstructured.Unstructured) {
	if c := p.bp.Child(id); c != nil && len(c.ForEach) > 0 {
		return // a collection's live objects are presented together
	}
	if obj != nil && p.live[id] == obj {
		return // observe has presented this very object already
	}
	if obj == nil {
		delete(p.live, id)
	} else {
		p.live[id] = obj
	}
	// The object came from the API server or the Blueprint's own render;
	// a conversion failure here means a bug, and Set reports it.
	if p.bp.Child(id) == nil {
		return // a remote reconciler's resource: no expression reads it
	}
	if err := p.present(id, obj); err != nil {
		p.rep.Errors = append(p.rep.Errors, err)
	}
}

// render evaluates c's template into the object to apply, transformed by
// its Go hook and decorated.
func (p *pass) render(ctx context.Context, c *ir.Child) (*unstructured.Unstructured, error) {
	m, err := p.eval.Object(c)
	if err != nil {
		return nil, err
	}
	if m, err = p.transform(ctx, c, m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if err := p.decorate(c, u); err != nil {
		return nil, err
	}
	return u, nil
}

// decorate completes a child about to be applied: its namespace, the
// inventory labels and annotations, the owner reference where one can
// reach, and the applied hash.
func (p *pass) decorate(c *ir.Child, u *unstructured.Unstructured) error {
	if u.GetName() == "" {
		return fmt.Errorf("%s: child %q rendered an empty metadata.name", c.Pos, c.ID)
	}
	switch {
	case !c.Namespaced && u.GetNamespace() != "":
		return fmt.Errorf("%s: child %q is a cluster-scoped %s and cannot have metadata.namespace", c.Pos, c.ID, c.Kind)
	case c.Namespaced && u.GetNamespace() == "":
		if p.cr.GetNamespace() == "" {
			return fmt.Errorf("%s: child %q needs metadata.namespace: the %s is cluster-scoped", c.Pos, c.ID, p.bp.Resource.Kind)
		}
		u.SetNamespace(p.cr.GetNamespace())
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = ManagedBy
	labels[LabelBlueprint] = p.bp.Name
	labels[LabelOwnerUID] = string(p.cr.GetUID())
	labels[LabelChild] = c.ID
	if n := p.opts.ShardBuckets; n > 0 {
		// A UID's bucket never changes, so neither does this label; a
		// child made before sharding gets it with its next apply, as it
		// changes the applied hash.
		labels[shard.LabelOwnerBucket] = shard.BucketValue(p.cr.GetUID(), n)
	}
	delete(labels, LabelAppliedHash)
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationOwner] = ownerRef(p.cr)
	u.SetAnnotations(annotations)
	if p.canOwn(u) {
		t := true
		u.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion:         p.cr.GetAPIVersion(),
			Kind:               p.cr.GetKind(),
			Name:               p.cr.GetName(),
			UID:                p.cr.GetUID(),
			Controller:         &t,
			BlockOwnerDeletion: &t,
		}})
	}
	// The live object then holds every field applied, and a converged
	// child is not applied again.
	builtin.SecretAsStored(u)
	// The hash covers everything applied, so that removing a field from
	// the template is a change even though the remaining fields match.
	labels[LabelAppliedHash] = hashObject(u.Object)
	u.SetLabels(labels)
	return nil
}

// canOwn reports whether garbage collection can delete obj with the custom
// resource: owner references cannot cross namespaces.
func (p *pass) canOwn(obj *unstructured.Unstructured) bool {
	return p.cr.GetNamespace() == "" || obj.GetNamespace() == p.cr.GetNamespace()
}

// ownedByGC reports whether a live child carries this custom resource's
// owner reference, so that garbage collection deletes it.
func (p *pass) ownedByGC(obj *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == p.cr.GetUID() {
			return true
		}
	}
	return false
}

// create creates an onCreate child. An object of that name that already
// exists, but was not created for this custom resource, is used as it is:
// read by expressions, never written, never pruned.
func (p *pass) create(ctx context.Context, c *ir.Child, desired *unstructured.Unstructured) *unstructured.Unstructured {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(desired.GroupVersionKind())
	err := p.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case err == nil:
		p.setLive(c.ID, existing)
		return existing
	case !apierrors.IsNotFound(err):
		p.apiError(ctx, c, err, "get")
		return nil
	}
	obj := desired.DeepCopy()
	err = p.opts.Client.Create(ctx, obj, client.FieldOwner(p.opts.FieldOwner))
	if err != nil {
		p.apiError(ctx, c, err, "create")
		return nil
	}
	p.rep.Writes++
	dropManagedFields(obj)
	p.rep.Created = append(p.rep.Created, keyOf(obj).String())
	p.written = append(p.written, obj)
	p.wrote(obj)
	logr.FromContextOrDiscard(ctx).V(1).Info("created child", "child", c.ID, "object", keyOf(obj).String())
	p.setLive(c.ID, obj)
	return obj
}

// apply writes a child with server-side apply and returns what the API
// server answered, or nil when it refused (reported).
func (p *pass) apply(ctx context.Context, c *ir.Child, desired *unstructured.Unstructured) *unstructured.Unstructured {
	obj, err := p.send(ctx, c, desired)
	if err != nil {
		p.apiError(ctx, c, err, "patch")
		return nil
	}
	return obj
}

// send applies desired, the child c's object, and records the write.
func (p *pass) send(ctx context.Context, c *ir.Child, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var (
		obj    *unstructured.Unstructured
		native runtime.Object
		err    error
	)
	if TypedKind(schemeOf(p.opts.Client), desired.GroupVersionKind()) {
		obj, native, err = applyTyped(ctx, p.opts.Client, desired, client.FieldOwner(p.opts.FieldOwner), client.ForceOwnership)
	} else {
		obj = desired.DeepCopy()
		err = p.opts.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(p.opts.FieldOwner), client.ForceOwnership)
	}
	if err != nil {
		return nil, err
	}
	p.rep.Writes++
	if native != nil {
		p.typed[obj] = native
		p.partial[obj] = true
		if !p.singular(c.ID) {
			p.whole(obj) // a collection's item or a remote reconciler's resource
		}
	}
	dropManagedFields(obj)
	p.rep.Applied = append(p.rep.Applied, keyOf(obj).String())
	p.written = append(p.written, obj)
	p.wrote(obj)
	logr.FromContextOrDiscard(ctx).V(1).Info("applied child", "child", c.ID, "object", keyOf(obj).String())
	p.setLive(c.ID, obj)
	return obj, nil
}

// dropManagedFields drops the managed fields of a write's answer, as the
// caches drop them from what they hold: nothing reads them, and an
// expression's view of the object would convert them all.
func dropManagedFields(u *unstructured.Unstructured) {
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
}

func (p *pass) readExternal(ctx context.Context, c *ir.Child) {
	if c.Selector {
		p.readSelected(ctx, c)
		return
	}
	if p.opts.Unavailable[c.GroupVersionKind] != nil {
		p.readExternals = true // not watched: look again later
	}
	ref, err := p.eval.Object(c)
	if err != nil {
		p.childError(ctx, c, err)
		return
	}
	u := &unstructured.Unstructured{Object: ref}
	ns := u.GetNamespace()
	if c.Namespaced && ns == "" {
		ns = p.cr.GetNamespace()
	}
	// Remembered whether it exists or not: its creation is what a
	// custom resource waiting for it needs to hear of.
	p.selections = append(p.selections, Selection{GroupVersionKind: c.GroupVersionKind, Namespace: ns, Name: u.GetName()})
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(c.GroupVersionKind)
	err = p.opts.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: u.GetName()}, obj)
	switch {
	case apierrors.IsNotFound(err):
		p.rep.Pending[c.ID] = fmt.Sprintf("waiting for %s %s to exist", c.Kind, types.NamespacedName{Namespace: ns, Name: u.GetName()})
		p.setLive(c.ID, nil)
	case err != nil:
		p.apiError(ctx, c, err, "get")
	default:
		p.setLive(c.ID, obj)
		if c.ReadyWhen == nil {
			p.isReady[c.ID] = true // an object Inrun only reads is ready once it exists
			return
		}
		// Ready when its readyWhen holds: what reads it waits until then,
		// and its changes reconcile the custom resource again (watchExternal).
		p.checkReady(ctx, c, obj)
	}
}

// maxEventNote is the most an events.k8s.io note may hold.
const maxEventNote = 1024

// recordWrites records one Event for the children this pass created or
// applied. One per pass rather than one per child: an Event is a write
// too, and a custom resource's changes are read together in kubectl
// describe.
func (p *pass) recordWrites() {
	if len(p.written) == 0 {
		return
	}
	var note strings.Builder
	for i, what := range [][]string{p.rep.Created, p.rep.Applied} {
		if len(what) == 0 {
			continue
		}
		if note.Len() > 0 {
			note.WriteString("; ")
		}
		note.WriteString([]string{"Created ", "Applied "}[i])
		note.WriteString(strings.Join(what, ", "))
	}
	msg := note.String()
	if len(msg) > maxEventNote {
		const more = "… (see the custom resource's children)"
		msg = msg[:maxEventNote-len(more)] + more
	}
	// The one object changed is related to the Event; several are named
	// in the note only, as an Event relates to one object.
	var related runtime.Object
	if len(p.written) == 1 {
		related = p.written[0]
	}
	reason, action := "Applied", "Apply"
	if len(p.rep.Applied) == 0 {
		reason, action = "Created", "Create"
	}
	p.opts.Recorder.Eventf(p.cr, related, corev1.EventTypeNormal, reason, action, "%s", msg)
}

// childError records a problem of the Blueprint or the custom resource: the
// child is kept as it is, and the Degraded condition says why.
func (p *pass) childError(ctx context.Context, c *ir.Child, err error) {
	err = fmt.Errorf("child %q: %w", c.ID, err)
	p.keep[c.ID] = true
	p.failed[c.ID] = true
	p.rep.Errors = append(p.rep.Errors, err)
	p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeWarning, "ChildFailed", "Reconcile", "%v", err)
	logr.FromContextOrDiscard(ctx).Error(err, "child failed", "child", c.ID)
}

// apiError records a refused or failed API call; Sync returns it so that
// the work queue retries with backoff.
func (p *pass) apiError(ctx context.Context, c *ir.Child, err error, verb string) {
	err = explain(err, verb, c)
	p.childError(ctx, c, err)
	if p.transient == nil {
		p.transient = err
	}
}

// explain adds what to do to errors whose fix is outside Inrun.
func explain(err error, verb string, c *ir.Child) error {
	return explainKind(err, verb, c.Plural)
}

func explainKind(err error, verb, plural string) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w (the runtime may not %s %s: grant what `inrun rbac` prints; a runtime confined to namespaces, --namespace or the chart's watchNamespaces, has rights in those only)", err, verb, plural)
	}
	return err
}

// OwnedKinds are the kinds whose objects a Blueprint's custom resources
// own: its template children's and those its remote reconciler may return,
// each once. externalRefs are not owned.
func OwnedKinds(bp *ir.Blueprint) []ir.ResourceKind { return bp.ResourceKinds() }

func (p *pass) addFinalizer(ctx context.Context) error {
	patch := client.MergeFrom(p.cr.DeepCopy())
	controllerutil.AddFinalizer(p.cr, Finalizer)
	if err := p.opts.Client.Patch(ctx, p.cr, patch); err != nil {
		return err
	}
	p.rep.Writes++
	logr.FromContextOrDiscard(ctx).V(1).Info("added finalizer", "resourceVersion", p.cr.GetResourceVersion())
	return nil
}

// prune deletes the children the Blueprint no longer produces: includeWhen
// turned false, a template removed, or a name that changed. Children that
// failed or wait this pass are kept.
func (p *pass) prune(ctx context.Context) {
	var wanted map[identityKey]bool // every child's objects, made once a candidate needs it
	for id, objs := range p.observed {
		if p.keep[id] {
			continue
		}
		c := p.bp.Child(id)
		for _, obj := range objs {
			want, rendered := p.wanted[id]
			items, collection := p.wantedItems[id]
			switch {
			case collection && items[keyOf(obj)]:
				continue // still one of the collection's items
			case collection: // its item went away
			case rendered && keyOf(obj) == want:
				continue // still wanted
			case rendered: // its name or namespace changed
			case strings.HasPrefix(id, remotePrefix): // the reconciler stopped returning it
			case c == nil, p.excluded[id]: // template removed, or includeWhen false
			default:
				continue
			}
			if wanted == nil {
				wanted = p.wantedAnywhere()
			}
			if wanted[identityOf(obj)] {
				// Another child has it now: an id renamed, an object a
				// reconciler returns under another id. Deleting it would
				// take down what the pass just applied.
				continue
			}
			err := p.delete(ctx, obj)
			var notOurs *NotWrittenError
			if errors.As(err, &notOurs) {
				p.leftAlone(obj, notOurs)
				continue
			}
			if err != nil {
				err = fmt.Errorf("pruning %s: %w", keyOf(obj), err)
				p.rep.Errors = append(p.rep.Errors, err)
				p.opts.Recorder.Eventf(p.cr, obj, corev1.EventTypeWarning, "PruneFailed", "Delete", "%v", err)
				if p.transient == nil {
					p.transient = err
				}
				continue
			}
			p.rep.Pruned = append(p.rep.Pruned, keyOf(obj).String())
			p.opts.Recorder.Eventf(p.cr, obj, corev1.EventTypeNormal, "Pruned", "Delete", "Deleted %s: the Blueprint no longer produces it", keyOf(obj))
		}
	}
	sort.Strings(p.rep.Pruned)
}

// delete deletes a child. Only objects listed by this custom resource's
// inventory reach it, and only those Inrun wrote are deleted (wroteIt):
// the checks make that a promise, not a property of the callers. The UID
// precondition makes sure the object deleted is the one observed, not
// another created since under its name. An object that carries the
// inventory without Inrun having written it is a *NotWrittenError.
func (p *pass) delete(ctx context.Context, obj *unstructured.Unstructured) error {
	if !p.createdFor(obj) {
		return fmt.Errorf("refusing to delete %s: it was not created for this custom resource", keyOf(obj))
	}
	if err := p.wroteIt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	uid := obj.GetUID()
	err := p.opts.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		p.rep.Writes++
	}
	return err
}
