package migrate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RollbackOptions are Options and the objects whose drift is overridden.
type RollbackOptions struct {
	Options
	// Force names objects (namespace/name, or name for a cluster-scoped
	// kind) whose fields are restored even where they were edited after
	// the migration. Their drift is still reported.
	Force []string
}

// Drift is a field edited after the migration: the rollback leaves it.
type Drift struct {
	// Object is namespace/name; Field the path.
	Object, Field string
	// Before the migration, written by it, and live now, as Show renders
	// them.
	Before, Written, Live string
	// Forced is true when the object was named in Force and the field was
	// restored all the same.
	Forced bool
}

// RollbackResult is what Rollback did.
type RollbackResult struct {
	// Restored objects were written.
	Restored int
	// Unchanged objects needed nothing: already as before, never moved, or
	// every field moved is drift.
	Unchanged int
	// Drift lists the fields left alone (or forced), sorted by object and
	// field.
	Drift []Drift
	// Gone lists the objects deleted, or replaced by another of the same
	// name, since the migration.
	Gone []string
	// Failed lists the objects that could not be restored, with why.
	Failed []error
}

// ErrTampered is returned, wrapped, by Rollback when a snapshot or the
// ledger does not verify; nothing is written.
var ErrTampered = errors.New("rollback refused: the snapshots do not match the ledger")

// Rollback undoes migration id, whose ledger is in opts.Namespace. It
// verifies every snapshot first and writes nothing unless all verify. Then,
// for each object and each path the migration wrote, it compares the value
// before the migration, the value the migration wrote and the live value:
// a live value still equal to the written one is restored; any other is
// drift, left alone unless the object is in opts.Force.
func Rollback(ctx context.Context, id string, opts RollbackOptions) (*Migration, *RollbackResult, error) {
	opts.defaults()
	s := &store{c: opts.Client, ns: opts.Namespace, id: id}
	m, err := s.head(ctx)
	if err != nil {
		return nil, nil, err
	}
	entries, problems, err := s.entries(ctx)
	if err != nil {
		return m, nil, err
	}
	if opts.Only != "" {
		for uid, e := range entries {
			if e.Namespace != opts.Only {
				delete(entries, uid)
			}
		}
	}
	befores := map[string]*unstructured.Unstructured{}
	for uid, e := range entries {
		before, err := s.load(ctx, e)
		if err != nil {
			var ae apierrors.APIStatus
			if errors.As(err, &ae) {
				return m, nil, err
			}
			problems = append(problems, err.Error())
			continue
		}
		befores[uid] = before
	}
	live, err := m.list(ctx, opts.Client, opts.Only)
	if err != nil {
		return m, nil, err
	}
	byName := map[string]bool{}
	for _, obj := range live {
		byName[objectKey(obj.GetNamespace(), obj.GetName())] = true
		if obj.GetAnnotations()[AnnotationID] == id {
			if _, ok := entries[string(obj.GetUID())]; !ok {
				problems = append(problems, fmt.Sprintf("%s: carries the marker of migration %s, but the ledger has no entry for it (UID %s)", objectKey(obj.GetNamespace(), obj.GetName()), id, obj.GetUID()))
			}
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return m, nil, fmt.Errorf("%w; nothing was written:\n  %s", ErrTampered, strings.Join(problems, "\n  "))
	}
	force := map[string]bool{}
	for _, f := range opts.Force {
		known := false
		for _, e := range entries {
			known = known || e.Object() == f
		}
		if !known {
			return m, nil, fmt.Errorf("--force %s: migration %s moved no object of that name; nothing was written%s", f, id, namespaceHint(f))
		}
		force[f] = true
	}

	todo := make([]Entry, 0, len(entries))
	for _, e := range entries {
		todo = append(todo, e)
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].Object() < todo[j].Object() })
	res := &RollbackResult{}
	start := time.Now()
	done := 0
	runWorkers(ctx, opts.Workers, todo, func(e Entry) restoreOutcome {
		out, err := m.restoreOne(ctx, opts.Client, e, befores[e.UID], force[e.Object()])
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
		return m, res, fmt.Errorf("rollback stopped after %d of %d objects: %w; run it again to finish", done, len(todo), err)
	}
	return m, res, nil
}

type restored struct {
	gone, written bool
	drift         []Drift
}

// restoreOutcome is what restoring one object did, or why it failed.
type restoreOutcome struct {
	restored
	err error
}

// add counts what restoring e did.
func (r *RollbackResult) add(e Entry, o restoreOutcome) {
	switch {
	case o.err != nil:
		r.Failed = append(r.Failed, o.err)
	case o.gone:
		r.Gone = append(r.Gone, e.Object())
	case o.written:
		r.Restored++
	default:
		r.Unchanged++
	}
	r.Drift = append(r.Drift, o.drift...)
}

// restoreOne restores one object's moved fields by the three-way rule.
func (m *Migration) restoreOne(ctx context.Context, c client.Client, e Entry, before *unstructured.Unstructured, force bool) (restored, error) {
	var out restored
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		out = restored{}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(m.Kind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, live); err != nil {
			if apierrors.IsNotFound(err) {
				out.gone = true
				return nil
			}
			return err
		}
		if string(live.GetUID()) != e.UID {
			out.gone = true
			return nil
		}
		written, _ := m.moved(before)
		next := live.DeepCopy()
		changed := false
		for _, p := range m.Paths() {
			b, bok := get(before.Object, p)
			w, wok := get(written.Object, p)
			l, lok := get(live.Object, p)
			switch {
			case same(w, wok, b, bok):
				continue // the migration did not write it: not its to restore
			case same(l, lok, b, bok):
				continue
			case same(l, lok, w, wok):
			default:
				out.drift = append(out.drift, Drift{Object: e.Object(), Field: p, Before: Show(b, bok), Written: Show(w, wok), Live: Show(l, lok), Forced: force})
				if !force {
					continue
				}
			}
			if bok {
				set(next.Object, p, b)
			} else {
				unset(next.Object, p)
			}
			changed = true
		}
		// The marker goes as it came: only while it is the one the
		// migration wrote.
		if live.GetAnnotations()[AnnotationID] == m.ID {
			ann := next.GetAnnotations()
			if v, ok := before.GetAnnotations()[AnnotationID]; ok {
				ann[AnnotationID] = v
			} else {
				delete(ann, AnnotationID)
			}
			next.SetAnnotations(ann)
			changed = true
		}
		if !changed {
			return nil
		}
		if err := c.Update(ctx, next, client.FieldOwner(FieldManager)); err != nil {
			return err
		}
		out.written = true
		return nil
	})
	if err != nil {
		return restored{}, fmt.Errorf("%s: %w", e.Object(), err)
	}
	return out, nil
}

// same compares two values that may be absent.
func same(a any, aok bool, b any, bok bool) bool {
	return aok == bok && (!aok || equal(a, b))
}

// namespaceHint says how to name a namespaced object when name has no
// namespace: --force takes namespace/name.
func namespaceHint(name string) string {
	if strings.Contains(name, "/") {
		return ""
	}
	return "; give a namespaced object as namespace/name, such as default/" + name
}
