package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
)

// KindPlan is what a kind move's Apply would do, found without writing
// anything.
type KindPlan struct {
	Move *KindMove
	// Objects is the number of custom resources of the Blueprint's kind;
	// Selected of them the selection picks.
	Objects, Selected int
	// ToMove are selected and not begun; InProgress carry the marker of a
	// move begun and not finished (apply finishes it).
	ToMove, InProgress int
	// Moved are custom resources of the target kind this move made, whose
	// old one is gone: moves finished.
	Moved int
	// Children is the number of objects Apply would re-parent.
	Children int
	// Conflicts name the objects that cannot move: an object of the
	// target kind already holds the name, or two selected ones would get
	// the same name. Apply refuses while there is one.
	Conflicts []string
	// Losses are the values the target's schema would drop, by object.
	Losses []KindLoss
	// Errors are selections that could not be evaluated. Apply refuses
	// while there is one.
	Errors []string
	// Finalized are the selected custom resources that carry another
	// controller's finalizer. Apply refuses while one is not being
	// deleted: the move deletes the old custom resource, which would wait
	// for that controller, for ever once it is gone.
	Finalized []KindFinalized
	// Dependents are the objects, not Inrun's children, that a custom
	// resource to move owns: the move keeps them and removes their owner
	// reference to it. Looked for only with Options.Discovery; Unchecked
	// names the kinds that could not be listed.
	Dependents, Unchecked []string
	// Samples are diffs of some of the objects to move.
	Samples []Diff

	todo []*unstructured.Unstructured
}

// KindLoss is a value the target's schema would drop from one object.
type KindLoss struct {
	Object, Path, Value string
}

// KindFinalized is a selected custom resource that carries other
// controllers' finalizers.
type KindFinalized struct {
	Object     string
	Finalizers []string
	// Deleting is true when it is being deleted already, by an earlier
	// move or by someone else: the finalizers hold it.
	Deleting bool
}

// String says what holds the custom resource.
func (f KindFinalized) String() string {
	s := fmt.Sprintf("%s: finalizer %s, not Inrun's", f.Object, strings.Join(f.Finalizers, ", "))
	if f.Deleting {
		s += "; it is being deleted and waits for it"
	}
	return s
}

// Refused reports whether Apply would refuse to start: a conflict, a
// selection that failed, another controller's finalizer on a custom
// resource to move, or a loss the Blueprint does not acknowledge.
func (p *KindPlan) Refused() bool {
	return len(p.Conflicts) > 0 || len(p.Errors) > 0 || p.held() > 0 || len(p.Losses) > 0 && !p.Move.AcceptLoss
}

// held counts the custom resources Apply refuses to move for another
// controller's finalizer.
func (p *KindPlan) held() int {
	n := 0
	for _, f := range p.Finalized {
		if !f.Deleting {
			n++
		}
	}
	return n
}

// Plan lists the custom resources of both kinds and works out what Apply
// would do. It writes nothing.
func (k *KindMove) Plan(ctx context.Context, opts Options) (*KindPlan, error) {
	opts.defaults()
	for _, kind := range []Kind{k.From, k.To} {
		if err := checkInstalled(ctx, opts.Client, kind); err != nil {
			return nil, err
		}
	}
	objs, err := listKind(ctx, opts.Client, k.From.GroupVersionKind, opts.Only)
	if err != nil {
		return nil, err
	}
	targetNS := opts.Only
	if !k.To.Namespaced || k.Namespace != "" {
		targetNS = ""
	}
	targets, err := listKind(ctx, opts.Client, k.To.GroupVersionKind, targetNS)
	if err != nil {
		return nil, err
	}
	existing := map[client.ObjectKey]*unstructured.Unstructured{}
	for _, t := range targets {
		existing[client.ObjectKeyFromObject(t)] = t
	}
	children, err := k.childCounts(ctx, opts.Client)
	if err != nil {
		return nil, err
	}
	p := &KindPlan{Move: k, Objects: len(objs)}
	olds := map[string]bool{}
	for _, obj := range objs {
		olds[string(obj.GetUID())] = true
	}
	for _, t := range targets {
		// A move begun and not finished still has its old one, and is
		// counted in InProgress.
		if t.GetAnnotations()[AnnotationID] == k.ID && !olds[t.GetAnnotations()[AnnotationFromUID]] {
			p.Moved++
		}
	}
	claimed := map[client.ObjectKey]string{}
	for _, obj := range objs {
		name := objectKey(obj.GetNamespace(), obj.GetName())
		begun := obj.GetAnnotations()[AnnotationID] == k.ID
		deleting := !obj.GetDeletionTimestamp().IsZero()
		foreign := foreignFinalizers(obj)
		if !begun {
			if deleting {
				// Not the move's to finish; named when it is selected and
				// another controller's finalizer holds it.
				if ok, _ := k.selected(obj); ok && len(foreign) > 0 {
					p.Finalized = append(p.Finalized, KindFinalized{Object: name, Finalizers: foreign, Deleting: true})
				}
				continue
			}
			ok, err := k.selected(obj)
			if err != nil {
				p.Errors = append(p.Errors, fmt.Sprintf("%s: migrate.selection.includeWhen: %v", name, err))
				continue
			}
			if !ok {
				continue
			}
		}
		p.Selected++
		if owner := obj.GetLabels()[ir.LabelOwnerUID]; owner != "" && !begun {
			// Its parent's runtime would create it again as soon as it
			// is gone.
			p.Conflicts = append(p.Conflicts, fmt.Sprintf("%s is a child of %s (Blueprint %s): its parent's runtime would create it again; change the parent's Blueprint to make a %s instead", name, obj.GetAnnotations()[ir.AnnotationOwner], obj.GetLabels()[ir.LabelBlueprint], k.To.Kind))
			continue
		}
		if len(foreign) > 0 {
			p.Finalized = append(p.Finalized, KindFinalized{Object: name, Finalizers: foreign, Deleting: deleting})
			if !deleting {
				continue
			}
		}
		key := k.TargetKey(obj)
		tname := objectKey(key.Namespace, key.Name)
		if t := existing[key]; t != nil && t.GetAnnotations()[AnnotationFromUID] != string(obj.GetUID()) {
			p.Conflicts = append(p.Conflicts, fmt.Sprintf("%s: %s %s already exists and was not made by this move from it", name, k.To.Kind, tname))
			continue
		}
		if other, dup := claimed[key]; dup {
			p.Conflicts = append(p.Conflicts, fmt.Sprintf("%s and %s would both become %s %s", other, name, k.To.Kind, tname))
			continue
		}
		claimed[key] = name
		if begun {
			p.InProgress++
		} else {
			p.ToMove++
		}
		p.Children += children[obj.GetUID()]
		p.todo = append(p.todo, obj)
		for _, path := range k.dropped(obj) {
			p.Losses = append(p.Losses, KindLoss{Object: name, Path: path, Value: showPath(obj, path)})
		}
		if opts.Samples > 0 && len(p.Samples) < opts.Samples {
			p.Samples = append(p.Samples, k.diff(obj, children[obj.GetUID()]))
		}
	}
	if opts.Discovery != nil {
		if p.Dependents, p.Unchecked, err = k.dependents(ctx, opts.Client, opts.Discovery, opts.Only, p.todo); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// childCounts counts the children of every custom resource of From, by
// its UID, with one list a kind.
func (k *KindMove) childCounts(ctx context.Context, c client.Client) (map[types.UID]int, error) {
	out := map[types.UID]int{}
	for _, ck := range k.Children {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(ck.GroupVersion().WithKind(ck.Kind + "List"))
		if err := c.List(ctx, list, client.MatchingLabels{ir.LabelBlueprint: k.From.Blueprint}); err != nil {
			return nil, fmt.Errorf("listing %s children: %w", ck.Kind, err)
		}
		for _, item := range list.Items {
			out[types.UID(item.GetLabels()[ir.LabelOwnerUID])]++
		}
	}
	return out, nil
}

// diff describes how obj moves.
func (k *KindMove) diff(obj *unstructured.Unstructured, children int) Diff {
	key := k.TargetKey(obj)
	d := Diff{Object: objectKey(obj.GetNamespace(), obj.GetName())}
	d.Fields = append(d.Fields, FieldDiff{Path: "apiVersion, kind", Before: obj.GetAPIVersion() + " " + obj.GetKind(), After: k.To.GroupVersion().String() + " " + k.To.Kind})
	if key.Namespace != obj.GetNamespace() {
		d.Fields = append(d.Fields, FieldDiff{Path: "metadata.namespace", Before: Show(obj.GetNamespace(), obj.GetNamespace() != ""), After: Show(key.Namespace, key.Namespace != "")})
	}
	for _, path := range k.dropped(obj) {
		d.Fields = append(d.Fields, FieldDiff{Path: path, Before: showPath(obj, path), After: "(dropped)"})
	}
	d.Fields = append(d.Fields, FieldDiff{Path: "children", Before: fmt.Sprintf("%d owned by the %s", children, k.From.Kind), After: fmt.Sprintf("re-parented to the %s, UIDs kept", k.To.Kind)})
	return d
}

// showPath renders the value at a path dropped() returned.
func showPath(obj *unstructured.Unstructured, path string) string {
	if path == "metadata.ownerReferences" {
		var names []string
		for _, r := range obj.GetOwnerReferences() {
			names = append(names, r.Kind+" "+r.Name)
		}
		return strings.Join(names, ", ")
	}
	var cur any = obj.Object
	for _, seg := range strings.Split(path, ".") {
		idx := -1
		if i := strings.IndexByte(seg, '['); i >= 0 {
			fmt.Sscanf(seg[i:], "[%d]", &idx)
			seg = seg[:i]
		}
		m, _ := cur.(map[string]any)
		cur = m[seg]
		if idx >= 0 {
			l, _ := cur.([]any)
			if idx >= len(l) {
				return "(absent)"
			}
			cur = l[idx]
		}
	}
	return Show(cur, true)
}

// checkInstalled checks that kind's CRD is installed and serves its version.
func checkInstalled(ctx context.Context, c client.Client, kind Kind) error {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	name := kind.Plural + "." + kind.Group
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		switch {
		case apierrors.IsForbidden(err):
			return nil
		case apierrors.IsNotFound(err):
			return fmt.Errorf("CRD %s is not installed: install it first (inrun crd -f <its Blueprint> | kubectl apply -f -), then plan again", name)
		}
		return err
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if vm, _ := v.(map[string]any); vm["name"] == kind.Version && vm["served"] == true {
			return nil
		}
	}
	return fmt.Errorf("CRD %s does not serve version %s", name, kind.Version)
}

// KindResult is what a kind move's Apply did.
type KindResult struct {
	// Moved objects were moved to the new kind by this run (begun by it or
	// by an earlier one); Children the objects it re-parented.
	Moved, Children int
	// Skipped were gone, or no longer selected, once read again.
	Skipped int
	// Failed lists the objects that could not be moved, with why.
	Failed []error
}

// Apply moves every object the plan selects. For each, in this order: its
// snapshot and ledger entry, the marker on it, the new custom resource
// (and a snapshot of it as created, which rollback compares to), its
// status, its children re-parented, and last the old custom resource
// deleted. Each step is idempotent, so that an Apply killed at any point
// finishes when run again, and none is done twice.
func (k *KindMove) Apply(ctx context.Context, opts Options) (*KindPlan, *KindResult, error) {
	opts.defaults()
	p, err := k.Plan(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if p.Refused() {
		var lines, why, fixes []string
		lines = append(lines, p.Conflicts...)
		lines = append(lines, p.Errors...)
		if len(p.Conflicts) > 0 {
			why = append(why, "objects are in the way")
			fixes = append(fixes, "rename or remove the objects in the way, or leave their custom resources out of migrate.selection")
		}
		if len(p.Errors) > 0 {
			why = append(why, "objects cannot be moved")
			fixes = append(fixes, "fix what each says")
		}
		if p.held() > 0 {
			for _, f := range p.Finalized {
				if !f.Deleting {
					lines = append(lines, f.String())
				}
			}
			why = append(why, "objects carry other controllers' finalizers")
			fixes = append(fixes, fmt.Sprintf("the move deletes each old %s, which would wait for those controllers, for ever once they are gone: let each finalizer's controller finish with its custom resource and remove it, or, if that controller is gone, remove the finalizer yourself (kubectl edit %s.%s); then run inrun migrate apply again", k.From.Kind, k.From.Plural, k.From.Group))
		}
		if !k.AcceptLoss && len(p.Losses) > 0 {
			for _, l := range p.Losses {
				lines = append(lines, fmt.Sprintf("%s: %s %s would be dropped: %s has no such field", l.Object, l.Path, l.Value, k.To.Kind))
			}
			why = append(why, "it would drop values")
			fixes = append(fixes, "add acceptLoss: true to the migrate section (the snapshots keep the dropped values for rollback)")
		}
		return p, nil, fmt.Errorf("%w: %s; nothing was written:\n  %s\n%s", ErrRefused, strings.Join(why, ", "), strings.Join(lines, "\n  "), strings.Join(fixes, "; "))
	}
	res := &KindResult{}
	if len(p.todo) == 0 {
		return p, res, nil
	}
	s := &store{c: opts.Client, ns: opts.Namespace, id: k.ID}
	if err := s.begin(ctx, k); err != nil {
		return p, nil, err
	}
	type moved struct {
		moved    bool
		children int
		err      error
	}
	start := time.Now()
	done := 0
	runWorkers(ctx, opts.Workers, p.todo, func(obj *unstructured.Unstructured) moved {
		var m moved
		m.moved, m.children, m.err = k.moveOne(ctx, s, opts.Client, client.ObjectKeyFromObject(obj))
		return m
	}, func(_ *unstructured.Unstructured, m moved) {
		switch {
		case m.err != nil:
			res.Failed = append(res.Failed, m.err)
		case m.moved:
			res.Moved++
			res.Children += m.children
		default:
			res.Skipped++
		}
		done++
		if opts.Progress != nil {
			opts.Progress(Progress{Done: done, Total: len(p.todo), Changed: res.Moved, Elapsed: time.Since(start)})
		}
	})
	if err := ctx.Err(); err != nil {
		return p, res, fmt.Errorf("apply stopped (%w) with %d of %d objects moved; run it again to finish (moves begun are finished, none is done twice)", err, res.Moved, len(p.todo))
	}
	awaitReleased(ctx, opts.Client, k.From.GroupVersionKind, opts.Only, k.ID, 30*time.Second)
	return p, res, nil
}

// moveOne moves one custom resource; see Apply. It returns whether it
// moved it and how many children it re-parented.
func (k *KindMove) moveOne(ctx context.Context, s *store, c client.Client, key client.ObjectKey) (bool, int, error) {
	name := objectKey(key.Namespace, key.Name)
	moved, reparented := false, 0
	err := retry.OnError(conflictBackoff, func(err error) bool { return apierrors.IsConflict(err) || errors.Is(err, errRetry) }, func() error {
		old := &unstructured.Unstructured{}
		old.SetGroupVersionKind(k.From.GroupVersionKind)
		if err := c.Get(ctx, key, old); err != nil {
			if apierrors.IsNotFound(err) {
				return nil // deleted since the plan, or by an earlier run
			}
			return err
		}
		if f := foreignFinalizers(old); len(f) > 0 && old.GetDeletionTimestamp().IsZero() {
			// Added since the plan: deleted, it would wait for that
			// controller.
			return fmt.Errorf("it carries finalizer %s, not Inrun's, added since the plan: it is not moved; run inrun migrate plan again", strings.Join(f, ", "))
		}
		if old.GetAnnotations()[AnnotationID] != k.ID {
			// Not begun: check again on what was read, snapshot it, and
			// mark it at the resourceVersion the snapshot is of.
			if !old.GetDeletionTimestamp().IsZero() {
				return nil
			}
			if ok, err := k.selected(old); err != nil || !ok {
				return err
			}
			if lost := k.dropped(old); len(lost) > 0 && !k.AcceptLoss {
				return fmt.Errorf("a value written since the plan would be dropped (%s); run inrun migrate plan again", lost[0])
			}
			e, err := s.save(ctx, old)
			if err != nil {
				return fmt.Errorf("saving its snapshot: %w", err)
			}
			if err := s.record(ctx, e); err != nil {
				return fmt.Errorf("recording its snapshot in the ledger: %w", err)
			}
			marked := old.DeepCopy()
			ann := marked.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[AnnotationID] = k.ID
			marked.SetAnnotations(ann)
			if err := c.Update(ctx, marked, client.FieldOwner(FieldManager)); err != nil {
				return err
			}
			old = marked
		} else if !old.GetDeletionTimestamp().IsZero() {
			moved = true
			return nil // released by an earlier run: its other finalizers are not Inrun's
		}
		children, err := k.children(ctx, c, k.From.Blueprint, old.GetUID())
		if err != nil {
			return err
		}
		nu, err := k.ensureNew(ctx, s, c, old, children)
		if err != nil {
			return err
		}
		for _, child := range children {
			if err := k.reparent(ctx, c, child, old.GetUID(), nu, k.To); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return fmt.Errorf("re-parenting %s %s: %w", child.GetKind(), objectKey(child.GetNamespace(), child.GetName()), err)
			}
			reparented++
		}
		if err := release(ctx, c, old); err != nil {
			return fmt.Errorf("deleting it, once its children moved: %w", err)
		}
		moved = true
		return nil
	})
	if err != nil {
		return false, 0, fmt.Errorf("%s: %w", name, err)
	}
	return moved, reparented, nil
}

// errRetry makes a step start again from a fresh read.
var errRetry = errors.New("changed meanwhile")

// ensureNew returns the custom resource old becomes, creating it (and the
// snapshot of it as created) when an earlier run has not, and writing the
// status it had.
func (k *KindMove) ensureNew(ctx context.Context, s *store, c client.Client, old *unstructured.Unstructured, children []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	key := k.TargetKey(old)
	nu := &unstructured.Unstructured{}
	nu.SetGroupVersionKind(k.To.GroupVersionKind)
	err := c.Get(ctx, key, nu)
	created := false
	switch {
	case apierrors.IsNotFound(err):
		needFinalizer := false
		for _, child := range children {
			needFinalizer = needFinalizer || !k.canOwn(k.To, key, child)
		}
		nu = k.newObject(old, needFinalizer)
		if err := c.Create(ctx, nu, client.FieldOwner(FieldManager)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, errRetry
			}
			return nil, fmt.Errorf("creating %s %s: %w", k.To.Kind, objectKey(key.Namespace, key.Name), err)
		}
		created = true
	case err != nil:
		return nil, err
	case nu.GetAnnotations()[AnnotationFromUID] != string(old.GetUID()):
		return nil, fmt.Errorf("%s %s already exists and was not made by this move from it: it is left alone; rename or remove it, or roll back (inrun rollback) to undo the move begun", k.To.Kind, objectKey(key.Namespace, key.Name))
	}
	if created || !s.hasEntry(ctx, nu.GetUID()) {
		e, err := s.save(ctx, nu)
		if err != nil {
			return nil, fmt.Errorf("saving the snapshot of the new %s: %w", k.To.Kind, err)
		}
		e.From = string(old.GetUID())
		if err := s.record(ctx, e); err != nil {
			return nil, fmt.Errorf("recording the snapshot of the new %s: %w", k.To.Kind, err)
		}
	}
	if err := restoreStatus(ctx, c, nu, old.Object["status"]); err != nil {
		if apierrors.IsConflict(err) {
			return nil, errRetry
		}
		return nil, fmt.Errorf("writing the status of the new %s: %w", k.To.Kind, err)
	}
	return nu, nil
}
