package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
)

// ConflictError says a child's object already exists and was not created
// for this custom resource: Inrun leaves it as it is.
type ConflictError struct {
	// Object names the existing object, as "Kind namespace/name".
	Object string
	// Owner says who the object belongs to, as far as its metadata tells.
	Owner string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s already exists and was not created for this custom resource (%s); Inrun never adopts, overwrites or deletes an object it did not create: delete or rename that object, or give the child another name", e.Object, e.Owner)
}

// ReasonConflict is the reason of the Warning Event a conflict records.
const ReasonConflict = "OwnershipConflict"

// createdFor reports whether obj carries this custom resource's inventory:
// only such objects are written, adopted back after a rename, or pruned.
func (p *pass) createdFor(obj *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	return l[LabelOwnerUID] == string(p.cr.GetUID()) && l[LabelBlueprint] == p.bp.Name
}

// claim checks, when a child's first write found an object of its
// identity, that the object was created by this custom resource and by no
// one else. The caches hold only Inrun's objects, so the API server is
// asked. It reports a conflict and returns false when one does; it
// returns false too when the check itself fails. When the object exists
// and is this custom resource's, it returns it too: the cache has not
// shown it yet.
func (p *pass) claim(ctx context.Context, c *ir.Child, desired *unstructured.Unstructured) (mine *unstructured.Unstructured, ok bool) {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(desired.GroupVersionKind())
	err := p.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		return nil, true
	case err != nil:
		p.apiError(ctx, c, err, "get")
		return nil, false
	case p.createdFor(existing):
		// Labels can be copied onto an object of someone else's: Inrun
		// must have written it too.
		err := p.wroteIt(ctx, existing)
		var notOurs *NotWrittenError
		switch {
		case err == nil:
			return existing, true
		case errors.As(err, &notOurs):
			p.notWritten(c, existing, notOurs)
		default: // deleted since, too: created on the retry
			p.apiError(ctx, c, err, "get")
		}
		return nil, false
	}
	conflict := &ConflictError{Object: keyOf(existing).String(), Owner: describeOwner(existing, p.cr, p.bp.Name, p.opts.FieldOwner)}
	p.conflict(c, existing, conflict)
	return nil, false
}

// CreateOnly is the resourceVersion of a child's first apply. An apply
// that names a resourceVersion is refused with a Conflict unless the
// object it changes has that version, and creates the object, ignoring the
// version, when none of its name exists. No object has this one: etcd
// numbers its revisions up from 1 and would need 2^64 writes to reach it.
// So one request both claims the child's name and writes it, where a GET
// first would be two, and no object made between the two, by anyone, is
// written over. Children's kinds are built in or served from CRDs (the
// compiler knows no others): their storage is the API server's own, which
// checks the version.
const CreateOnly = "18446744073709551615"

// applyFirst writes the child c's object when none of its identity
// exists, and returns it, or nil when the write failed for another reason,
// already reported. done is false when an object of that identity exists:
// claim then asks whose it is.
func (p *pass) applyFirst(ctx context.Context, c *ir.Child, desired *unstructured.Unstructured) (obj *unstructured.Unstructured, done bool) {
	first := desired.DeepCopy()
	first.SetResourceVersion(CreateOnly)
	obj, err := p.send(ctx, c, first)
	switch {
	case apierrors.IsConflict(err):
		return nil, false
	case err != nil:
		p.apiError(ctx, c, err, "patch")
		return nil, true
	}
	return obj, true
}

// conflict reports that the child c cannot be written over existing, which
// is not Inrun's, and keeps the child as it is until a retry finds the
// object gone.
func (p *pass) conflict(c *ir.Child, existing *unstructured.Unstructured, why error) {
	err := fmt.Errorf("child %q: %w", c.ID, why)
	p.keep[c.ID] = true
	p.failed[c.ID] = true
	p.rep.Errors = append(p.rep.Errors, err)
	p.opts.Recorder.Eventf(p.cr, existing, corev1.EventTypeWarning, ReasonConflict, "Apply", "%v", err)
	// Retried with backoff: once the object is gone, the child is created.
	if p.transient == nil {
		p.transient = err
	}
}

// notWritten reports that the child c's object carries this custom
// resource's labels but that Inrun never wrote it: not overwritten.
func (p *pass) notWritten(c *ir.Child, existing *unstructured.Unstructured, err *NotWrittenError) {
	p.conflict(c, existing, fmt.Errorf("%w; Inrun does not overwrite it: delete it to have the child created, or give the child another name", err))
}

// ensure makes the child c hold desired, and returns its live object, or
// nil when it could not be written. current is the child's object in the
// cache, nil when the cache shows none. Such a child is written by an
// apply that only creates (CreateOnly), and claimed when an object of its
// identity exists: an object of this custom resource's that the cache has
// not shown yet (it lags behind a write: this runtime's, just before, or a
// predecessor's killed after it) and already holds desired is not written
// again.
func (p *pass) ensure(ctx context.Context, c *ir.Child, desired, current *unstructured.Unstructured) *unstructured.Unstructured {
	if current != nil && p.upToDate(desired, current) {
		return current
	}
	if current != nil && !p.controls(current) {
		// Only its labels say it is a child (in another namespace, or
		// cluster-scoped): before writing it, ask the API server whether
		// Inrun wrote it, as prune does before deleting it.
		err := p.wroteIt(ctx, current)
		var notOurs *NotWrittenError
		switch {
		case errors.As(err, &notOurs):
			p.notWritten(c, current, notOurs)
			return nil
		case apierrors.IsNotFound(err):
			current = nil // gone since the cache saw it: claimed below
		case err != nil:
			p.apiError(ctx, c, err, "get")
			return nil
		}
	}
	if current == nil {
		if obj, done := p.applyFirst(ctx, c, desired); done {
			return obj
		}
		mine, ok := p.claim(ctx, c, desired)
		if !ok {
			return nil
		}
		if mine != nil && p.upToDate(desired, mine) {
			return mine
		}
	}
	return p.apply(ctx, c, desired)
}

// controls reports whether obj names this custom resource as its
// controller: an owner reference Inrun set, which labels copied by hand
// do not bring.
func (p *pass) controls(obj *unstructured.Unstructured) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == p.cr.GetUID() && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// describeOwner says who an object belongs to, from its metadata: cr
// itself by an owner reference left on a child whose labels were removed,
// a controller's owner reference, another custom resource's inventory, or
// the manager that created it.
func describeOwner(obj, cr *unstructured.Unstructured, blueprint, fieldOwner string) string {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == cr.GetUID() {
			if other := obj.GetLabels()[LabelBlueprint]; other != "" && other != blueprint && obj.GetLabels()[LabelOwnerUID] == string(cr.GetUID()) {
				return fmt.Sprintf("it names this %s as its owner, and was made by Blueprint %q, not %q: the Blueprint was renamed, or another Blueprint reconciles this kind; run the Blueprint under its old name (metadata.name %s), and the object stays", cr.GetKind(), other, blueprint, other)
			}
			managed := obj.GetManagedFields()
			if w := writer(managed); w != "" && !slices.ContainsFunc(managed, func(mf metav1.ManagedFieldsEntry) bool { return mf.Manager == fieldOwner }) {
				return fmt.Sprintf("it names this %s as its owner, but Inrun never wrote it (created by %s): another controller, the one before Inrun perhaps, made it for this %s", cr.GetKind(), w, cr.GetKind())
			}
			return fmt.Sprintf("it names this %s as its owner, but lacks the labels Inrun gives its children (%s, %s): they were removed by hand; put them back, or delete the object to have it created again", cr.GetKind(), LabelOwnerUID, LabelBlueprint)
		}
		if ref.Controller != nil && *ref.Controller {
			return fmt.Sprintf("it is controlled by %s %s", ref.Kind, ref.Name)
		}
	}
	if owner := obj.GetAnnotations()[AnnotationOwner]; owner != "" {
		return "it belongs to " + strings.ReplaceAll(strings.Trim(owner, "/"), "//", "/") + " of Blueprint " + obj.GetLabels()[LabelBlueprint]
	}
	if len(obj.GetOwnerReferences()) > 0 {
		ref := obj.GetOwnerReferences()[0]
		return fmt.Sprintf("it is owned by %s %s", ref.Kind, ref.Name)
	}
	if w := writer(obj.GetManagedFields()); w != "" {
		return fmt.Sprintf("it was created by %s, with no owner", w)
	}
	return "it has no owner: someone created it by hand"
}

// writer is the first manager that wrote an object's own fields, not its
// status: the one that made it, as far as the API server tells (the
// Deployment controller writes a Deployment's status, not the
// Deployment).
func writer(managed []metav1.ManagedFieldsEntry) string {
	var oldest *metav1.ManagedFieldsEntry
	for i, mf := range managed {
		if mf.Subresource != "" || mf.Manager == "" {
			continue
		}
		if oldest == nil || (mf.Time != nil && oldest.Time != nil && mf.Time.Before(oldest.Time)) {
			oldest = &managed[i]
		}
	}
	if oldest == nil {
		return ""
	}
	return oldest.Manager
}

// NotWrittenError says an object carries a custom resource's inventory
// labels but was never written by Inrun: someone copied the labels onto
// an object of their own (kubectl get -o yaml of a child, a new name,
// kubectl create). Inrun leaves it as it is.
type NotWrittenError struct {
	// Object names it, as "Kind namespace/name".
	Object string
	// Creator says who wrote it, as far as its managed fields tell.
	Creator string
}

func (e *NotWrittenError) Error() string {
	return fmt.Sprintf("%s carries this custom resource's labels, but Inrun never wrote it (%s): left as it is; remove the labels %s and %s from it to say it is not a child", e.Object, e.Creator, LabelOwnerUID, LabelChild)
}

// ReasonLeftAlone is the reason of the Warning Event recorded for an
// object Inrun would have deleted, had it written it.
const ReasonLeftAlone = "NotInrunsObject"

// wroteIt returns a *NotWrittenError unless Inrun wrote obj: the managed
// fields of the object, as the API server has it, name the field owner
// Inrun writes with. Labels prove nothing on their own; the API server
// records every writer. The caches keep no managed fields, so the API
// server is asked, for the object's metadata only: before an object is
// deleted, and before one only labels call a child is written.
func (p *pass) wroteIt(ctx context.Context, obj *unstructured.Unstructured) error {
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := p.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return err
	}
	if live.UID != obj.GetUID() {
		// Another object under its name: the observed one is gone.
		return apierrors.NewNotFound(schema.GroupResource{Group: obj.GroupVersionKind().Group, Resource: obj.GetKind()}, obj.GetName())
	}
	for _, mf := range live.ManagedFields {
		if mf.Manager == p.opts.FieldOwner {
			return nil
		}
	}
	creator := "no writer is recorded"
	if w := writer(live.ManagedFields); w != "" {
		creator = "written by " + w
	}
	return &NotWrittenError{Object: keyOf(obj).String(), Creator: creator}
}

// leftAlone reports an object Inrun would have deleted had it written it.
func (p *pass) leftAlone(obj *unstructured.Unstructured, err *NotWrittenError) {
	p.rep.LeftAlone = append(p.rep.LeftAlone, err.Object)
	p.opts.Recorder.Eventf(p.cr, obj, corev1.EventTypeWarning, ReasonLeftAlone, "Delete", "%v", err)
}
