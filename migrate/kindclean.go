package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
)

// KindCleanResult is what a kind move's Clean did.
type KindCleanResult struct {
	// Moved is the number of custom resources of the target kind that
	// carry the move's marker.
	Moved int
	// Remaining names the custom resources of the old kind left, which
	// the selection does not pick: they keep the old kind's CRD.
	Remaining []string
	// Deleted is the number of snapshots and ledger ConfigMaps deleted.
	Deleted int
	// NoLedger is true when there was no ledger to delete (cleaned
	// before).
	NoLedger bool
	// CRD is the old kind's CRD; CRDDeleted is true when Clean deleted it
	// now, CRDGone when it was gone already.
	CRD                 string
	CRDDeleted, CRDGone bool
	// CRDLeft, when not empty, says why the old kind's CRD stays and what
	// to do.
	CRDLeft string
}

// RecordedKind returns kind move id as its ledger, in opts.Namespace,
// records it. Its selection is not recorded: a move read back knows the
// custom resources it moved, not the ones it would move now.
func RecordedKind(ctx context.Context, id string, opts Options) (*KindMove, error) {
	opts.defaults()
	return (&store{c: opts.Client, ns: opts.Namespace, id: id}).kindHead(ctx)
}

// kindHead reads the kind move the ledger was made for.
func (s *store) kindHead(ctx context.Context) (*KindMove, error) {
	data, err := s.headData(ctx)
	if err != nil {
		return nil, err
	}
	k := &KindMove{}
	if err := json.Unmarshal(data, k); err != nil || k.To.Kind == "" {
		return nil, fmt.Errorf("migration %s moves fields, not custom resources to another kind: use it without migrate.to in the Blueprint (or with --id)", s.id)
	}
	return k, nil
}

// Clean ends a kind move once it is done. It first verifies, in every
// namespace, that no custom resource of the old kind is a move begun and
// not finished, rolled back, or selected and not moved, and that each
// custom resource of the target kind carrying the move's marker has its
// snapshots in the ledger; otherwise it refuses, naming each object, and
// writes nothing. Then it deletes the snapshots and the ledger, and last
// the old kind's CRD, only when Inrun alone wrote it (opts.CRDManager) and no
// custom resource of the old kind, nor a child of one, is left. A CRD Inrun
// did not install is never deleted: CRDLeft says what to remove.
//
// A move read back from its ledger (RecordedKind) does not know its
// selection: a custom resource not moved is then taken as not selected.
func (k *KindMove) Clean(ctx context.Context, opts CleanOptions) (*KindCleanResult, error) {
	opts.defaults()
	if opts.Only != "" {
		return nil, fmt.Errorf("clean verifies the objects of every namespace, since they share the ledger: run it without a namespace")
	}
	c := opts.Client
	s := &store{c: c, ns: opts.Namespace, id: k.ID}
	res := &KindCleanResult{CRD: k.From.Plural + "." + k.From.Group}

	head, cleaning, entries, err := s.cleanState(ctx)
	if err != nil {
		return nil, err
	}
	res.NoLedger = head == nil

	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	switch err := c.Get(ctx, client.ObjectKey{Name: res.CRD}, crd); {
	case apierrors.IsNotFound(err):
		res.CRDGone = true
	case err != nil:
		return nil, fmt.Errorf("reading CRD %s: %w", res.CRD, err)
	}
	var olds []*unstructured.Unstructured
	if !res.CRDGone {
		if olds, err = listKind(ctx, c, k.From.GroupVersionKind, ""); err != nil {
			return nil, err
		}
	}
	news, err := listKind(ctx, c, k.To.GroupVersionKind, "")
	if err != nil {
		return nil, err
	}

	// Verify.
	var bad []string
	for _, nu := range news {
		if nu.GetAnnotations()[AnnotationID] != k.ID {
			continue
		}
		res.Moved++
		if from := nu.GetAnnotations()[AnnotationFromUID]; entries != nil {
			if _, ok := entries[from]; !ok {
				bad = append(bad, fmt.Sprintf("%s %s: made by migration %s from UID %s, but the ledger has no snapshot of it", k.To.Kind, objectKey(nu.GetNamespace(), nu.GetName()), k.ID, from))
			}
		}
	}
	for _, old := range olds {
		name := objectKey(old.GetNamespace(), old.GetName())
		deleting := !old.GetDeletionTimestamp().IsZero()
		_, rolledBack := entries[old.GetAnnotations()[AnnotationRollbackOf]]
		marked := old.GetAnnotations()[AnnotationID] == k.ID
		if marked && !deleting {
			bad = append(bad, fmt.Sprintf("%s: its move was begun and not finished: run inrun migrate apply to finish it", name))
			continue
		}
		selected := false
		if k.Selection != nil {
			ok, err := k.selected(old)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: migrate.selection.includeWhen: %v", name, err))
				continue
			}
			selected = ok
		}
		if deleting {
			// Held by a finalizer, it may never go: the snapshots are the
			// way back to it.
			if f := foreignFinalizers(old); len(f) > 0 && (marked || rolledBack || selected) {
				bad = append(bad, fmt.Sprintf("%s: being deleted, held by finalizer %s, not Inrun's: let its controller remove it, or remove it yourself if that controller is gone, then run inrun clean again (clean deletes the snapshots a rollback would need)", name, strings.Join(f, ", ")))
			} else {
				res.Remaining = append(res.Remaining, name+" (being deleted)")
			}
			continue
		}
		switch {
		case rolledBack && (selected || k.Selection == nil):
			bad = append(bad, fmt.Sprintf("%s: rolled back by inrun rollback: move it again with inrun migrate apply; or, to give the move up, delete its snapshots and ledger (kubectl delete secret,configmap -n %s -l %s=%s)", name, opts.Namespace, LabelID, k.ID))
		case selected:
			bad = append(bad, fmt.Sprintf("%s: selected and not moved yet (created or changed since the apply?): run inrun migrate apply", name))
		default:
			res.Remaining = append(res.Remaining, name)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("%w (%d of %d objects); nothing was written:\n  %s", ErrNotMigrated, len(bad), len(olds)+res.Moved, strings.Join(bad, "\n  "))
	}
	if head == nil && res.Moved == 0 {
		return nil, fmt.Errorf("migration %s has no ledger in namespace %s, and no %s carries its marker: it was never applied here; nothing was written", k.ID, opts.Namespace, k.To.Kind)
	}

	if head != nil {
		n, err := s.drop(ctx, cleaning)
		res.Deleted = n
		if err != nil {
			return res, err
		}
	}
	if res.CRDGone {
		return res, nil
	}
	return res, k.deleteCRD(ctx, opts, crd, res)
}

// deleteCRD deletes the old kind's CRD, when Inrun alone wrote it and no
// custom resource of the kind, nor a child of one, is left; otherwise it
// says why in res.CRDLeft.
func (k *KindMove) deleteCRD(ctx context.Context, opts CleanOptions, crd *unstructured.Unstructured, res *KindCleanResult) error {
	c := opts.Client
	if ok, why := inrunsAlone(crd, opts.CRDManager); opts.CRDManager != "" && !ok {
		res.CRDLeft = fmt.Sprintf("CRD %s %s, so it is left as it is", res.CRD, why)
		if len(res.Remaining) == 0 {
			res.CRDLeft += fmt.Sprintf(": no %s is left, so once nothing else needs the kind, delete it (kubectl delete crd %s) where it was installed from", k.From.Kind, res.CRD)
		} else {
			res.CRDLeft += fmt.Sprintf("; the %d %s objects left (listed above) still need it", len(res.Remaining), k.From.Kind)
		}
		return nil
	}
	// Listed again just before the delete, which would take every custom
	// resource of the kind with it.
	if len(res.Remaining) == 0 {
		left, err := listKind(ctx, c, k.From.GroupVersionKind, "")
		if err != nil && !meta.IsNoMatchError(err) {
			return err
		}
		for _, o := range left {
			res.Remaining = append(res.Remaining, objectKey(o.GetNamespace(), o.GetName())+" (created since)")
		}
	}
	if len(res.Remaining) > 0 {
		res.CRDLeft = fmt.Sprintf("CRD %s stays: %d %s objects are left, which the move does not select (listed above), and deleting the CRD would delete them; move them too (another migrate.selection, applied and cleaned), or delete them, then run inrun clean again to delete the CRD", res.CRD, len(res.Remaining), k.From.Kind)
		return nil
	}
	// Garbage collection deletes the children of a custom resource
	// deleted since only while it can still resolve the owner's kind:
	// once the CRD is gone, they would stay for ever.
	children, err := k.leftChildren(ctx, c)
	if err != nil {
		return err
	}
	if len(children) > 0 {
		res.CRDLeft = fmt.Sprintf("CRD %s stays: %d children of %s objects deleted since are not garbage-collected yet (%s), and garbage collection cannot delete them once the kind is gone; run inrun clean again once they are", res.CRD, len(children), k.From.Kind, strings.Join(children, ", "))
		return nil
	}
	uid, rv := crd.GetUID(), crd.GetResourceVersion()
	if err := c.Delete(ctx, crd, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil {
		if apierrors.IsNotFound(err) {
			res.CRDGone = true
			return nil
		}
		return fmt.Errorf("deleting CRD %s: %w", res.CRD, err)
	}
	res.CRDDeleted = true
	return nil
}

// leftChildren names the objects labelled with the old kind's Blueprint
// that still have an owner reference to a custom resource of the old
// kind: garbage collection has not deleted them yet.
func (k *KindMove) leftChildren(ctx context.Context, c client.Client) ([]string, error) {
	if k.From.Blueprint == "" {
		return nil, nil
	}
	var out []string
	for _, ck := range k.Children {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(ck.GroupVersion().WithKind(ck.Kind + "List"))
		if err := c.List(ctx, list, client.MatchingLabels{ir.LabelBlueprint: k.From.Blueprint}); err != nil {
			return nil, fmt.Errorf("listing %s children: %w", ck.Kind, err)
		}
		for _, item := range list.Items {
			for _, ref := range item.GetOwnerReferences() {
				if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == k.From.Group && ref.Kind == k.From.Kind {
					out = append(out, ck.Kind+" "+objectKey(item.GetNamespace(), item.GetName()))
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
