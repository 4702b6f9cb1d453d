package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IsKindMove reports whether the ledger of migration id, in opts.Namespace,
// is a kind move's.
func IsKindMove(ctx context.Context, id string, opts Options) (bool, error) {
	opts.defaults()
	data, err := (&store{c: opts.Client, ns: opts.Namespace, id: id}).headData(ctx)
	if err != nil {
		return false, err
	}
	var probe struct {
		To *Kind `json:"to"`
	}
	return json.Unmarshal(data, &probe) == nil && probe.To != nil, nil
}

// RollbackKind undoes kind move id, whose ledger is in opts.Namespace. It
// verifies every snapshot first and writes nothing unless all verify.
// Then, for each custom resource moved, it creates the old one again from
// its snapshot (or, where the move had not finished, keeps the old one),
// restores its status, re-parents the children back to it and deletes the
// new one. A field edited on the new custom resource after the move (the
// live value is neither the one the move wrote nor the one before) is
// drift: it is reported, and the restored custom resource keeps the live
// value, unless the object is in opts.Force.
func RollbackKind(ctx context.Context, id string, opts RollbackOptions) (*KindMove, *RollbackResult, error) {
	opts.defaults()
	s := &store{c: opts.Client, ns: opts.Namespace, id: id}
	k, err := s.kindHead(ctx)
	if err != nil {
		return nil, nil, err
	}
	entries, problems, err := s.entries(ctx)
	if err != nil {
		return k, nil, err
	}
	snaps := map[string]*unstructured.Unstructured{}
	for uid, e := range entries {
		obj, err := s.load(ctx, e)
		if err != nil {
			var ae apierrors.APIStatus
			if errors.As(err, &ae) {
				return k, nil, err
			}
			problems = append(problems, err.Error())
			continue
		}
		snaps[uid] = obj
	}
	// written maps an old UID to the new custom resource's entry.
	written := map[string]Entry{}
	for _, e := range entries {
		if e.From != "" {
			written[e.From] = e
		}
	}
	live, err := listKind(ctx, opts.Client, k.To.GroupVersionKind, "")
	if err != nil {
		return k, nil, err
	}
	for _, obj := range live {
		if obj.GetAnnotations()[AnnotationID] != id {
			continue
		}
		from := obj.GetAnnotations()[AnnotationFromUID]
		if _, ok := entries[from]; !ok {
			problems = append(problems, fmt.Sprintf("%s %s: made by migration %s from UID %s, but the ledger has no snapshot of it", k.To.Kind, objectKey(obj.GetNamespace(), obj.GetName()), id, from))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return k, nil, fmt.Errorf("%w; nothing was written:\n  %s", ErrTampered, strings.Join(problems, "\n  "))
	}
	var todo []Entry
	for _, e := range entries {
		if e.From == "" && (opts.Only == "" || e.Namespace == opts.Only) {
			todo = append(todo, e)
		}
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].Object() < todo[j].Object() })
	force := map[string]bool{}
	for _, f := range opts.Force {
		known := false
		for _, e := range todo {
			known = known || e.Object() == f
		}
		if !known {
			return k, nil, fmt.Errorf("--force %s: migration %s moved no object of that name; nothing was written%s", f, id, namespaceHint(f))
		}
		force[f] = true
	}

	res := &RollbackResult{}
	start := time.Now()
	done := 0
	runWorkers(ctx, opts.Workers, todo, func(e Entry) restoreOutcome {
		var w *unstructured.Unstructured
		if we, ok := written[e.UID]; ok {
			w = snaps[we.UID]
		}
		out, err := k.restoreOne(ctx, opts.Client, e, snaps[e.UID], w, force[e.Object()])
		return restoreOutcome{out, err}
	}, func(e Entry, o restoreOutcome) {
		res.add(e, o)
		done++
		if opts.Progress != nil {
			opts.Progress(Progress{Done: done, Total: len(todo), Changed: res.Restored, Elapsed: time.Since(start)})
		}
	})
	sort.Slice(res.Drift, func(i, j int) bool {
		a, b := res.Drift[i], res.Drift[j]
		return a.Object < b.Object || a.Object == b.Object && a.Field < b.Field
	})
	sort.Strings(res.Gone)
	if err := ctx.Err(); err != nil {
		return k, res, fmt.Errorf("rollback stopped after %d of %d objects: %w; run it again to finish", done, len(todo), err)
	}
	ns := opts.Only
	if !k.To.Namespaced || k.Namespace != "" {
		ns = ""
	}
	awaitReleased(ctx, opts.Client, k.To.GroupVersionKind, ns, id, 30*time.Second)
	return k, res, nil
}

// restoreOne rolls one custom resource back. before is its snapshot;
// written the snapshot of the new one as created, nil when the move did
// not get that far.
func (k *KindMove) restoreOne(ctx context.Context, c client.Client, e Entry, before, written *unstructured.Unstructured, force bool) (restored, error) {
	var out restored
	err := retry.OnError(conflictBackoff, func(err error) bool { return apierrors.IsConflict(err) || errors.Is(err, errRetry) }, func() error {
		out = restored{}
		nu := &unstructured.Unstructured{}
		nu.SetGroupVersionKind(k.To.GroupVersionKind)
		err := c.Get(ctx, k.TargetKey(before), nu)
		switch {
		case apierrors.IsNotFound(err):
			nu = nil
		case err != nil:
			return err
		case nu.GetAnnotations()[AnnotationFromUID] != e.UID || nu.GetAnnotations()[AnnotationID] != k.ID:
			nu = nil // another object of that name: not the move's
		}
		old := &unstructured.Unstructured{}
		old.SetGroupVersionKind(k.From.GroupVersionKind)
		err = c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, old)
		switch {
		case apierrors.IsNotFound(err):
			old = nil
		case err != nil:
			return err
		case string(old.GetUID()) == e.UID:
			// The move had not finished: the old one is still there.
		case old.GetAnnotations()[AnnotationRollbackOf] == e.UID:
			// Restored by an earlier run.
		default:
			if nu != nil {
				return fmt.Errorf("%s %s exists and is not the one moved (UID %s): it is left alone, and so is %s %s", k.From.Kind, e.Object(), e.UID, k.To.Kind, objectKey(nu.GetNamespace(), nu.GetName()))
			}
			out.gone = true
			return nil
		}
		if nu != nil && old != nil && string(old.GetUID()) == e.UID && !old.GetDeletionTimestamp().IsZero() {
			// The move deleted it and a finalizer holds it: undone in
			// place, the custom resource would be lost once it goes.
			f := foreignFinalizers(old)
			if len(f) == 0 {
				return errRetry // garbage collection is finishing the delete
			}
			return fmt.Errorf("%s %s is being deleted, held by finalizer %s, not Inrun's: %s %s, where the move put it, is kept; once the finalizer is gone (its controller removes it, or remove it yourself if that controller is gone), run inrun rollback again to create the %s again from its snapshot", k.From.Kind, e.Object(), strings.Join(f, ", "), k.To.Kind, objectKey(nu.GetNamespace(), nu.GetName()), k.From.Kind)
		}
		var drift []fieldDrift
		if nu != nil && written != nil {
			// Computed again by a resumed run, from the same three states.
			drift = drifted(e, before, written, nu, force)
			for _, d := range drift {
				out.drift = append(out.drift, d.Drift)
			}
		}
		if old == nil {
			if nu == nil {
				out.gone = true // the new one was deleted since: nothing to restore
				return nil
			}
			var err error
			if old, err = k.recreate(ctx, c, e, before, drift); err != nil {
				return err
			}
			out.written = true
		}
		if nu != nil {
			children, err := k.children(ctx, c, "", nu.GetUID())
			if err != nil {
				return err
			}
			for _, child := range children {
				if err := k.reparent(ctx, c, child, nu.GetUID(), old, k.From); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("re-parenting %s %s back: %w", child.GetKind(), objectKey(child.GetNamespace(), child.GetName()), err)
				}
			}
			if err := release(ctx, c, nu); err != nil {
				return fmt.Errorf("deleting %s %s, once its children moved back: %w", k.To.Kind, objectKey(nu.GetNamespace(), nu.GetName()), err)
			}
			out.written = true
		}
		if string(old.GetUID()) == e.UID && old.GetAnnotations()[AnnotationID] == k.ID {
			// The old one kept: its marker goes as it came.
			next := old.DeepCopy()
			ann := next.GetAnnotations()
			if v, ok := before.GetAnnotations()[AnnotationID]; ok {
				ann[AnnotationID] = v
			} else {
				delete(ann, AnnotationID)
			}
			next.SetAnnotations(ann)
			if err := c.Update(ctx, next, client.FieldOwner(FieldManager)); err != nil {
				return err
			}
			out.written = true
		}
		return nil
	})
	if err != nil {
		return restored{}, fmt.Errorf("%s: %w", e.Object(), err)
	}
	return out, nil
}

// fieldDrift is a Drift, and where its live value goes in the custom
// resource a rollback creates again.
type fieldDrift struct {
	Drift
	path   []string
	live   any
	liveOK bool
}

// drifted compares, for every value a kind move carries, the value before
// the move, the one it wrote and the live one on the new custom resource.
func drifted(e Entry, before, written, nu *unstructured.Unstructured, force bool) []fieldDrift {
	var out []fieldDrift
	b, w, l := leaves(before), leaves(written), leaves(nu)
	paths := map[string]bool{}
	for _, m := range []map[string]leaf{b, w, l} {
		for p := range m {
			paths[p] = true
		}
	}
	for p := range paths {
		bv, bok := b[p]
		wv, wok := w[p]
		lv, lok := l[p]
		if same(lv.v, lok, wv.v, wok) || same(lv.v, lok, bv.v, bok) {
			continue
		}
		path := lv.path
		if !lok {
			path = wv.path
		}
		out = append(out, fieldDrift{Drift: Drift{Object: e.Object(), Field: p, Before: Show(bv.v, bok), Written: Show(wv.v, wok), Live: Show(lv.v, lok), Forced: force}, path: path, live: lv.v, liveOK: lok})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// recreate creates the old custom resource again from its snapshot, with
// the drifted fields' live values (unless forced), and restores its
// status.
func (k *KindMove) recreate(ctx context.Context, c client.Client, e Entry, before *unstructured.Unstructured, drift []fieldDrift) (*unstructured.Unstructured, error) {
	obj := before.DeepCopy()
	status := obj.Object["status"]
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	for _, d := range drift {
		switch {
		case d.Forced:
		case d.liveOK:
			_ = unstructured.SetNestedField(obj.Object, runtimeCopy(d.live), d.path...)
		default:
			unstructured.RemoveNestedField(obj.Object, d.path...)
		}
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationRollbackOf] = e.UID
	obj.SetAnnotations(ann)
	obj.SetOwnerReferences(liveOwners(ctx, c, obj.GetOwnerReferences(), obj.GetNamespace()))
	if err := c.Create(ctx, obj, client.FieldOwner(FieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, errRetry
		}
		return nil, fmt.Errorf("creating it again: %w", err)
	}
	if err := restoreStatus(ctx, c, obj, status); err != nil && !apierrors.IsConflict(err) {
		return nil, fmt.Errorf("restoring its status: %w", err)
	}
	return obj, nil
}

// liveOwners keeps the owner references whose owner still exists with the
// same UID: garbage collection would delete an object whose owners are
// all gone.
func liveOwners(ctx context.Context, c client.Client, refs []metav1.OwnerReference, ns string) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range refs {
		owner := &unstructured.Unstructured{}
		owner.SetAPIVersion(ref.APIVersion)
		owner.SetKind(ref.Kind)
		key := client.ObjectKey{Namespace: ns, Name: ref.Name}
		if err := c.Get(ctx, key, owner); err != nil {
			key.Namespace = ""
			if err := c.Get(ctx, key, owner); err != nil {
				continue
			}
		}
		if owner.GetUID() == ref.UID {
			out = append(out, ref)
		}
	}
	return out
}

// leaf is a value a rollback compares, and the path to it.
type leaf struct {
	path []string
	v    any
}

// leaves flattens what a kind move carries and a person may edit: every
// value under spec (a list is one value), and each label and annotation
// but the move's own.
func leaves(obj *unstructured.Unstructured) map[string]leaf {
	out := map[string]leaf{}
	var walk func(path []string, v any)
	walk = func(path []string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for key, x := range m {
				walk(append(append([]string(nil), path...), key), x)
			}
			return
		}
		out[strings.Join(path, ".")] = leaf{path: path, v: v}
	}
	if spec, ok := obj.Object["spec"]; ok {
		walk([]string{"spec"}, spec)
	}
	for key, v := range obj.GetLabels() {
		out["metadata.labels."+key] = leaf{path: []string{"metadata", "labels", key}, v: v}
	}
	for key, v := range obj.GetAnnotations() {
		if strings.HasPrefix(key, "migrate.inrun.dev/") || key == annotationLastApplied {
			continue
		}
		out["metadata.annotations."+key] = leaf{path: []string{"metadata", "annotations", key}, v: v}
	}
	return out
}
