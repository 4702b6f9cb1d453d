package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clean ends a migration once it is done: it verifies that every object is
// moved, removes the old paths from the installed CRD, drops the versions
// no object is stored in any more from the CRD's status.storedVersions, and
// deletes the snapshots and the ledger. It is the step after which a
// rollback is no longer possible, so it refuses, writing nothing, while any
// object is not verified moved.

// CleanOptions are Options and how Clean drops stored versions.
type CleanOptions struct {
	Options
	// CRDManager is the field manager that marks a CRD as installed by
	// Inrun: Clean edits, or deletes, only a CRD it alone wrote (any other
	// is its owner's, and Clean says what to change in it). Empty means
	// any CRD is edited.
	CRDManager string
	// PickupTimeout is how long a StorageVersionMigration may stay without
	// a condition before Clean takes it that no controller runs it, deletes
	// it and rewrites the objects itself; 30s when zero.
	PickupTimeout time.Duration
}

// CleanResult is what Clean did.
type CleanResult struct {
	// Objects is the number of custom resources verified.
	Objects int
	// RemovedPaths are the old paths removed from the CRD's schema now;
	// empty when an earlier run removed them.
	RemovedPaths []string
	// CRDLeft, when not empty, says why the CRD was left as it is and what
	// its owner should change.
	CRDLeft string
	// DroppedVersions are the versions dropped from status.storedVersions.
	DroppedVersions []string
	// StorageMigration says how the objects were rewritten to the storage
	// version before the drop: "" (no drop), "StorageVersionMigration
	// <name>", or why Clean rewrote them itself.
	StorageMigration string
	// Rewritten is the number of objects Clean rewrote itself.
	Rewritten int
	// Deleted is the number of snapshots and ledger ConfigMaps deleted.
	Deleted int
	// NoLedger is true when there was no ledger to delete (cleaned
	// before, or never applied here).
	NoLedger bool
}

// ErrNotMigrated is returned, wrapped, by Clean when an object is not
// verified moved; nothing is written.
var ErrNotMigrated = errors.New("clean refused: not every object is migrated")

// annotationCleaning marks a ledger's head once Clean has verified every
// object and started deleting: a run interrupted after that resumes the
// deletion without the ledger entries it already deleted.
const annotationCleaning = "migrate.inrun.dev/cleaning"

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// Clean verifies and cleans migration m, whose ledger is in opts.Namespace.
// It considers the kind's objects in every namespace (opts.Only must be
// empty: the ledger is shared).
func (m *Migration) Clean(ctx context.Context, opts CleanOptions) (*CleanResult, error) {
	opts.defaults()
	if opts.Only != "" {
		return nil, fmt.Errorf("clean verifies the objects of every namespace, since they share the ledger: run it without a namespace")
	}
	if opts.PickupTimeout == 0 {
		opts.PickupTimeout = 30 * time.Second
	}
	c := opts.Client
	s := &store{c: c, ns: opts.Namespace, id: m.ID}
	res := &CleanResult{}

	head, cleaning, entries, err := s.cleanState(ctx)
	if err != nil {
		return nil, err
	}
	res.NoLedger = head == nil

	// Verify: no object holds a value at an old path, and each one
	// carrying the marker has its ledger entry.
	objs, err := m.list(ctx, c, "")
	if err != nil {
		return nil, err
	}
	res.Objects = len(objs)
	var bad []string
	for _, obj := range objs {
		key := objectKey(obj.GetNamespace(), obj.GetName())
		marked := obj.GetAnnotations()[AnnotationID] == m.ID
		if held := m.held(obj); len(held) > 0 {
			why := "not moved yet: run inrun migrate apply"
			if marked {
				// Apply leaves it: its snapshot is the state before the
				// migration, which a move again would not keep.
				why = "written in the old shape after it was moved (an old writer is still at work), which apply leaves: stop that writer, then move the value yourself: " + m.movePatch(obj)
			}
			bad = append(bad, fmt.Sprintf("%s: holds %s, %s", key, strings.Join(held, ", "), why))
			continue
		}
		if marked && entries != nil {
			if _, ok := entries[string(obj.GetUID())]; !ok {
				bad = append(bad, fmt.Sprintf("%s: carries the marker of migration %s, but the ledger has no entry for it (UID %s)", key, m.ID, obj.GetUID()))
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, fmt.Errorf("%w (%d of %d objects); nothing was written:\n  %s", ErrNotMigrated, len(bad), len(objs), strings.Join(bad, "\n  "))
	}

	if err := m.cleanCRD(ctx, opts, objs, res); err != nil {
		return res, err
	}
	if head != nil {
		n, err := s.drop(ctx, cleaning)
		res.Deleted = n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// Recorded returns migration id as its ledger, in opts.Namespace, records
// it.
func Recorded(ctx context.Context, id string, opts Options) (*Migration, error) {
	opts.defaults()
	return (&store{c: opts.Client, ns: opts.Namespace, id: id}).head(ctx)
}

// held returns the old paths at which obj holds a value.
func (m *Migration) held(obj *unstructured.Unstructured) []string {
	var out []string
	for _, mv := range m.Moves {
		for _, from := range mv.From {
			if _, ok := get(obj.Object, from); ok {
				out = append(out, from)
			}
		}
	}
	return out
}

// cleanState reads what a clean starts from: the ledger's head (nil when
// there is none), whether an earlier clean began deleting, and, when none
// did, the ledger's entries. A damaged ledger is refused before anything is
// written.
func (s *store) cleanState(ctx context.Context) (head *corev1.ConfigMap, cleaning bool, entries map[string]Entry, err error) {
	if head, cleaning, err = s.cleanHead(ctx); err != nil || head == nil || cleaning {
		return head, cleaning, nil, err
	}
	entries, problems, err := s.entries(ctx)
	if err != nil {
		return nil, false, nil, err
	}
	if len(problems) > 0 {
		return nil, false, nil, fmt.Errorf("%w; nothing was written: the ledger is damaged:\n  %s", ErrNotMigrated, strings.Join(problems, "\n  "))
	}
	return head, cleaning, entries, nil
}

// cleanHead reads the ledger's head: nil when there is none, and whether
// an earlier Clean started deleting it.
func (s *store) cleanHead(ctx context.Context) (*corev1.ConfigMap, bool, error) {
	var cm corev1.ConfigMap
	err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: headName(s.id)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case !s.ours(&cm):
		return nil, false, fmt.Errorf("ConfigMap %s/%s was not made by inrun migrate; it is left alone", s.ns, cm.Name)
	}
	return &cm, cm.Annotations[annotationCleaning] == "true", nil
}

// drop deletes the migration's snapshots and ledger: the head is marked
// first and deleted last, so that an interrupted run resumes.
func (s *store) drop(ctx context.Context, cleaning bool) (int, error) {
	if !cleaning {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cm corev1.ConfigMap
			if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: headName(s.id)}, &cm); err != nil {
				return err
			}
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[annotationCleaning] = "true"
			return s.c.Update(ctx, &cm)
		})
		if err != nil {
			return 0, fmt.Errorf("marking the ledger as being cleaned: %w", err)
		}
	}
	n := 0
	var secrets corev1.SecretList
	if err := s.c.List(ctx, &secrets, client.InNamespace(s.ns), client.MatchingLabels(s.labels())); err != nil {
		return n, err
	}
	for i := range secrets.Items {
		if err := s.c.Delete(ctx, &secrets.Items[i]); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("deleting snapshot %s/%s: %w", s.ns, secrets.Items[i].Name, err)
		}
		n++
	}
	var cms corev1.ConfigMapList
	if err := s.c.List(ctx, &cms, client.InNamespace(s.ns), client.MatchingLabels(s.labels())); err != nil {
		return n, err
	}
	// The head goes last.
	sort.SliceStable(cms.Items, func(i, j int) bool { return cms.Items[j].Name == headName(s.id) })
	for i := range cms.Items {
		if err := s.c.Delete(ctx, &cms.Items[i]); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("deleting ledger ConfigMap %s/%s: %w", s.ns, cms.Items[i].Name, err)
		}
		n++
	}
	return n, nil
}

// cleanCRD removes the old paths from the installed CRD's schema of the
// migration's version, then drops the versions no object is stored in any
// more from status.storedVersions.
func (m *Migration) cleanCRD(ctx context.Context, opts CleanOptions, objs []*unstructured.Unstructured, res *CleanResult) error {
	c := opts.Client
	name := m.Plural + "." + m.Kind.Group
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := getCRD(ctx, c, name, crd); err != nil {
		return fmt.Errorf("reading CRD %s: %w", name, err)
	}
	var old []string
	for _, mv := range m.Moves {
		old = append(old, mv.From...)
	}
	if ok, why := inrunsAlone(crd, opts.CRDManager); opts.CRDManager != "" && !ok {
		var still []string
		for _, p := range old {
			if root := versionSchema(crd, m.Kind.Version); root != nil && schemaHasProps(root, p) {
				still = append(still, p)
			}
		}
		var reasons []string
		if len(still) > 0 {
			reasons = append(reasons, fmt.Sprintf("remove %s from the schema of version %s", strings.Join(still, ", "), m.Kind.Version))
		}
		if others := otherStoredVersions(crd); len(others) > 0 {
			reasons = append(reasons, fmt.Sprintf("drop the versions other than the storage version from status.storedVersions (%s), after a StorageVersionMigration", strings.Join(others, ", ")))
		}
		if len(reasons) > 0 {
			res.CRDLeft = fmt.Sprintf("CRD %s %s, so it is left as it is: %s", name, why, strings.Join(reasons, "; "))
		}
		return nil
	}

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		res.RemovedPaths = nil
		if err := getCRD(ctx, c, name, crd); err != nil {
			return err
		}
		root := versionSchema(crd, m.Kind.Version)
		if root == nil {
			return nil
		}
		for _, p := range old {
			if removeProp(root, strings.Split(p, ".")) {
				res.RemovedPaths = append(res.RemovedPaths, p)
			}
		}
		if len(res.RemovedPaths) == 0 {
			return nil
		}
		return updateCRD(ctx, c, crd, false)
	})
	if err != nil {
		return fmt.Errorf("removing the old paths from CRD %s: %w", name, err)
	}
	return m.dropStoredVersions(ctx, opts, crd, objs, res)
}

// getCRD reads a CRD through unstructured, so that the client's scheme
// need not know apiextensions.
func getCRD(ctx context.Context, c client.Client, name string, crd *apiextensionsv1.CustomResourceDefinition) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(crdGVK)
	if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return err
	}
	*crd = apiextensionsv1.CustomResourceDefinition{}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd)
}

// updateCRD writes crd, or its status.
func updateCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, status bool) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(crdGVK)
	if status {
		return c.Status().Update(ctx, u, client.FieldOwner(FieldManager))
	}
	return c.Update(ctx, u, client.FieldOwner(FieldManager))
}

// inrunsAlone reports whether Inrun alone wrote obj, a CRD: manager (its
// install) wrote it, and every other writer is Inrun's too (a clean's
// edit); the status subresource's writers aside, since the API server
// writes a CRD's conditions. It returns why not. A CRD someone else
// applied is theirs, even after Inrun applied it again.
func inrunsAlone(obj metav1.Object, manager string) (bool, string) {
	installed := false
	var others []string
	for _, f := range obj.GetManagedFields() {
		switch {
		case f.Subresource == "status":
		case f.Manager == manager:
			installed = true
		case f.Manager != FieldManager && !slices.Contains(others, f.Manager):
			others = append(others, f.Manager)
		}
	}
	switch {
	case !installed:
		return false, fmt.Sprintf("was not installed by Inrun (no field manager %s)", manager)
	case len(others) > 0:
		return false, fmt.Sprintf("is not Inrun's alone (field managers %s wrote it too)", strings.Join(others, ", "))
	}
	return true, ""
}

func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.JSONSchemaProps {
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Name == version && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	return nil
}

func schemaHasProps(s *apiextensionsv1.JSONSchemaProps, path string) bool {
	for _, seg := range strings.Split(path, ".") {
		next, ok := s.Properties[seg]
		if !ok {
			return false
		}
		s = &next
	}
	return true
}

// removeProp removes the property at segs, and the objects above it under
// spec that it leaves without properties; it reports whether it was there.
func removeProp(s *apiextensionsv1.JSONSchemaProps, segs []string) bool {
	next, ok := s.Properties[segs[0]]
	if !ok {
		return false
	}
	if len(segs) == 1 {
		delete(s.Properties, segs[0])
		s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == segs[0] })
		return true
	}
	if !removeProp(&next, segs[1:]) {
		return false
	}
	if len(next.Properties) == 0 && len(segs) > 1 && segs[0] != "spec" && (next.XPreserveUnknownFields == nil || !*next.XPreserveUnknownFields) {
		delete(s.Properties, segs[0])
		s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == segs[0] })
		return true
	}
	s.Properties[segs[0]] = next
	return true
}

// dropStoredVersions rewrites every object in the storage version, when
// status.storedVersions lists others, and then drops those. It prefers a
// StorageVersionMigration (storagemigration.k8s.io/v1); when the cluster
// does not serve that API, or no controller picks the migration up, it
// rewrites the objects itself and says so.
func (m *Migration) dropStoredVersions(ctx context.Context, opts CleanOptions, crd *apiextensionsv1.CustomResourceDefinition, objs []*unstructured.Unstructured, res *CleanResult) error {
	c := opts.Client
	storage := storageVersion(crd)
	drop := otherStoredVersions(crd)
	if len(drop) == 0 || storage == "" {
		return nil
	}
	how, why, err := m.storageMigration(ctx, opts, crd)
	if err != nil {
		return err
	}
	if how == "" {
		n, err := m.rewrite(ctx, c, objs)
		res.Rewritten = n
		if err != nil {
			return err
		}
		how = fmt.Sprintf("%s, so Inrun rewrote the %d objects itself", why, n)
	}
	res.StorageMigration = how
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := getCRD(ctx, c, crd.Name, crd); err != nil {
			return err
		}
		crd.Status.StoredVersions = []string{storage}
		return updateCRD(ctx, c, crd, true)
	})
	if err != nil {
		return fmt.Errorf("dropping %s from the stored versions of CRD %s: %w", strings.Join(drop, ", "), crd.Name, err)
	}
	res.DroppedVersions = drop
	return nil
}

// storageVersion is the CRD's storage version; "" when none is marked.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// otherStoredVersions are the versions status.storedVersions lists
// besides the storage version: objects may still be stored in them.
func otherStoredVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	storage := storageVersion(crd)
	var out []string
	for _, v := range crd.Status.StoredVersions {
		if v != storage {
			out = append(out, v)
		}
	}
	return out
}

var svmGVK = schema.GroupVersionKind{Group: "storagemigration.k8s.io", Version: "v1", Kind: "StorageVersionMigration"}

// storageMigration runs a StorageVersionMigration of the CRD's resource
// and waits for it to succeed: it returns how. When the cluster cannot run
// one, it returns "" and why.
func (m *Migration) storageMigration(ctx context.Context, opts CleanOptions, crd *apiextensionsv1.CustomResourceDefinition) (how, why string, err error) {
	c := opts.Client
	if _, err := c.RESTMapper().RESTMapping(svmGVK.GroupKind(), svmGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return "", "the cluster does not serve " + svmGVK.GroupVersion().String() + " (StorageVersionMigration)", nil
		}
		return "", "", err
	}
	svm := &unstructured.Unstructured{}
	svm.SetGroupVersionKind(svmGVK)
	svm.SetGenerateName("inrun-" + crd.Name + "-")
	svm.SetLabels(map[string]string{LabelID: m.ID, labelManagedBy: managedBy})
	_ = unstructured.SetNestedMap(svm.Object, map[string]any{"group": crd.Spec.Group, "resource": crd.Spec.Names.Plural}, "spec", "resource")
	if err := c.Create(ctx, svm); err != nil {
		return "", "", fmt.Errorf("creating a StorageVersionMigration of %s: %w", crd.Name, err)
	}
	start := time.Now()
	var outcome string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(svm), svm); err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(svm.Object, "status", "conditions")
		for _, cd := range conds {
			cm, _ := cd.(map[string]any)
			if cm["status"] != "True" {
				continue
			}
			switch cm["type"] {
			case "Succeeded":
				outcome = "StorageVersionMigration " + svm.GetName()
				return true, nil
			case "Failed":
				return false, fmt.Errorf("StorageVersionMigration %s failed: %v", svm.GetName(), cm["message"])
			}
		}
		if len(conds) == 0 && time.Since(start) > opts.PickupTimeout {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return "", "", err
	}
	if outcome != "" {
		return outcome, "", nil
	}
	// No controller runs it: take it back.
	if err := c.Delete(ctx, svm); client.IgnoreNotFound(err) != nil {
		return "", "", err
	}
	return "", fmt.Sprintf("no controller picked up StorageVersionMigration %s within %s (it was deleted)", svm.GetName(), opts.PickupTimeout), nil
}

// rewrite writes every object back unchanged, so that the API server
// stores it in the storage version; a conflict retries from a fresh read.
func (m *Migration) rewrite(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) (int, error) {
	n := 0
	for _, o := range objs {
		err := retry.RetryOnConflict(conflictBackoff, func() error {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(m.Kind)
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), obj); err != nil {
				return client.IgnoreNotFound(err)
			}
			return c.Update(ctx, obj, client.FieldOwner(FieldManager))
		})
		if err != nil {
			return n, fmt.Errorf("rewriting %s in the storage version: %w", objectKey(o.GetNamespace(), o.GetName()), err)
		}
		n++
	}
	return n, nil
}

// movePatch returns the kubectl command that moves by hand what obj holds
// at old paths, written in the old shape after apply moved it: the new
// path set to the value the move takes (the first old path that holds
// one), every old path holding one removed, each checked first with a
// test, so that the patch fails on an object changed since.
func (m *Migration) movePatch(obj *unstructured.Unstructured) string {
	var ops []map[string]any
	var adds, removes []map[string]any
	for _, mv := range m.Moves {
		var v any
		found := false
		for _, from := range mv.From {
			fv, ok := get(obj.Object, from)
			if !ok {
				continue
			}
			if !found {
				v, found = fv, true
			}
			ops = append(ops, map[string]any{"op": "test", "path": pointer(from), "value": fv})
			removes = append(removes, map[string]any{"op": "remove", "path": pointer(from)})
		}
		if !found {
			continue
		}
		if cur, ok := get(obj.Object, mv.To); ok {
			ops = append(ops, map[string]any{"op": "test", "path": pointer(mv.To), "value": cur})
		}
		// The value goes in the first object missing on the way.
		segs := strings.Split(mv.To, ".")
		at := len(segs)
		for i := 1; i < len(segs); i++ {
			if _, ok, _ := unstructured.NestedMap(obj.Object, segs[:i]...); !ok {
				at = i
				break
			}
		}
		val := v
		for i := len(segs) - 1; i >= at; i-- {
			val = map[string]any{segs[i]: val}
		}
		adds = append(adds, map[string]any{"op": "add", "path": pointer(strings.Join(segs[:at], ".")), "value": val})
	}
	ops = append(append(ops, adds...), removes...)
	data, _ := json.Marshal(ops)
	cmd := "kubectl patch " + m.Plural + "." + m.Kind.Group
	if ns := obj.GetNamespace(); ns != "" {
		cmd += " -n " + ns
	}
	return cmd + " " + obj.GetName() + " --type json -p '" + strings.ReplaceAll(string(data), "'", `'\''`) + "'"
}

// pointer is the JSON pointer of a dotted path.
func pointer(path string) string {
	r := strings.NewReplacer("~", "~0", "/", "~1")
	segs := strings.Split(path, ".")
	for i, s := range segs {
		segs[i] = r.Replace(s)
	}
	return "/" + strings.Join(segs, "/")
}
