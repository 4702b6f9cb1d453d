package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// TestCleanLeavesACRDItDidNotInstall checks that clean changes no CRD Inrun
// did not install: it says what to remove, and still deletes the
// snapshots and the ledger, which are its own; and that Recorded finds the
// migration by its ID until then.
func TestCleanLeavesACRDItDidNotInstall(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, app("a", map[string]any{"repo": "o/a"}), app("b", map[string]any{"repository": "o/b"}))
	m := migration(t, false)
	opts := migrate.Options{Client: c}
	if _, res, err := m.Apply(ctx, opts); err != nil || res.Moved != 1 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	back, err := migrate.Recorded(ctx, m.ID, opts)
	if err != nil || back.ID != m.ID || len(back.Moves) != len(m.Moves) {
		t.Fatalf("Recorded: %v %+v", err, back)
	}
	res, err := m.Clean(ctx, migrate.CleanOptions{Options: opts, CRDManager: "inrun"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.CRDLeft, "CRD apps.migrate.inrun.dev was not installed by Inrun") || !strings.Contains(res.CRDLeft, "remove spec.repo, spec.source.url, spec.size from the schema of version v1") || len(res.RemovedPaths) > 0 {
		t.Errorf("CRD: left %q, removed %v", res.CRDLeft, res.RemovedPaths)
	}
	var secs corev1.SecretList
	var cms corev1.ConfigMapList
	_ = c.List(ctx, &secs, client.MatchingLabels{migrate.LabelID: m.ID})
	_ = c.List(ctx, &cms, client.MatchingLabels{migrate.LabelID: m.ID})
	if len(secs.Items)+len(cms.Items) != 0 || res.Deleted != 3 {
		t.Errorf("%d snapshots and %d ledger ConfigMaps left, %d deleted (want the snapshot, a shard and the head)", len(secs.Items), len(cms.Items), res.Deleted)
	}
	if _, err := migrate.Recorded(ctx, m.ID, opts); err == nil {
		t.Error("Recorded finds a cleaned migration")
	}
	if _, err := m.Clean(ctx, migrate.CleanOptions{Options: migrate.Options{Client: c, Only: "apps"}}); err == nil || !strings.Contains(err.Error(), "every namespace") {
		t.Errorf("clean of one namespace: %v", err)
	}
}

// TestKindCleanDeletesOnlyACRDItInstalled: after a kind move, clean deletes
// the old kind's CRD only when Inrun alone wrote it; any other is left,
// even one a team applied and Inrun applied again, and clean says what to
// remove.
func TestKindCleanDeletesOnlyACRDItInstalled(t *testing.T) {
	bp, k := siteKindMove(t)
	// A WebApp the move made; no Site is left, and the ledger is gone (an
	// earlier clean was interrupted before the CRD).
	moved := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.inrun.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "a", "namespace": "apps", "uid": "uid-new-a",
			"annotations": map[string]any{migrate.AnnotationID: k.ID, migrate.AnnotationFromUID: "uid-a"}},
	}}
	entry := func(manager, subresource string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apiextensions.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}, Subresource: subresource}
	}
	// The API server writes every CRD's status: not a writer of the CRD.
	status := entry("kube-apiserver", "status")
	for _, installer := range []string{"kubectl-client-side-apply", reconciler.ManagedBy, "kubectl-client-side-apply+" + reconciler.ManagedBy} {
		crd := crdObject(t, bp.Resource.CRD)
		var fields []metav1.ManagedFieldsEntry
		for _, m := range strings.Split(installer, "+") {
			fields = append(fields, entry(m, ""))
		}
		crd.SetManagedFields(append(fields, status))
		s := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(s); err != nil {
			t.Fatal(err)
		}
		c := fake.NewClientBuilder().WithScheme(s).WithReturnManagedFields().WithObjects(crd, crdObject(t, bp.Uses[0].CRD), moved.DeepCopy()).Build()
		res, err := k.Clean(context.Background(), migrate.CleanOptions{Options: migrate.Options{Client: c}, CRDManager: reconciler.ManagedBy})
		if err != nil {
			t.Fatalf("installed by %s: %v", installer, err)
		}
		gone := apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKey{Name: "sites.migrate.inrun.dev"}, crd))
		if installer == reconciler.ManagedBy {
			if !res.CRDDeleted || !gone || res.CRDLeft != "" {
				t.Errorf("a CRD Inrun installed: deleted %v, gone %v, left %q", res.CRDDeleted, gone, res.CRDLeft)
			}
			continue
		}
		why := "CRD sites.migrate.inrun.dev was not installed by Inrun"
		if strings.Contains(installer, "+") {
			// Applied by a team, and again by inrun run --install-crds.
			why = "CRD sites.migrate.inrun.dev is not Inrun's alone (field managers kubectl-client-side-apply wrote it too), so it is left as it is"
		}
		if res.CRDDeleted || gone || !strings.Contains(res.CRDLeft, why) || !strings.Contains(res.CRDLeft, "kubectl delete crd sites.migrate.inrun.dev") {
			t.Errorf("a CRD installed by %s: deleted %v, gone %v, left %q", installer, res.CRDDeleted, gone, res.CRDLeft)
		}
	}
}

// TestKindCleanVerifies: clean of a kind move refuses, naming each, a move
// begun and not finished, a custom resource rolled back, and one selected
// and not moved; one the selection does not pick is left. Read back from
// its ledger, the move does not know its selection: the one not moved
// counts as not selected.
func TestKindCleanVerifies(t *testing.T) {
	ctx := context.Background()
	bp, k := siteKindMove(t)
	site := func(name, tier string, ann map[string]any) client.Object {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "migrate.inrun.dev/v1", "kind": "Site",
			"metadata": map[string]any{"name": name, "namespace": "apps", "uid": "uid-" + name, "labels": map[string]any{"tier": tier}, "annotations": ann},
			"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
		}}
	}
	head, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{migrate.LabelID: k.ID, "app.kubernetes.io/managed-by": "inrun"}
	ledger := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "inrun-ledger-" + k.ID, Namespace: migrate.DefaultNamespace, Labels: labels}, Data: map[string]string{"migration": string(head)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "inrun-ledger-" + k.ID + "-0", Namespace: migrate.DefaultNamespace, Labels: labels},
			Data: map[string]string{"uid-old-back": `{"namespace":"apps","name":"back","uid":"uid-old-back","sha256":"00","chunks":1}`}},
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(append(ledger,
		crdObject(t, bp.Resource.CRD), crdObject(t, bp.Uses[0].CRD),
		site("begun", "web", map[string]any{migrate.AnnotationID: k.ID}),
		site("back", "web", map[string]any{migrate.AnnotationRollbackOf: "uid-old-back"}),
		site("fresh", "web", nil),
		site("db", "db", nil),
	)...).Build()
	opts := migrate.CleanOptions{Options: migrate.Options{Client: c}}
	_, err = k.Clean(ctx, opts)
	for _, want := range []string{
		"(3 of 4 objects)",
		"apps/back: rolled back by inrun rollback",
		"apps/begun: its move was begun and not finished",
		"apps/fresh: selected and not moved yet",
	} {
		if !errors.Is(err, migrate.ErrNotMigrated) || !strings.Contains(err.Error(), want) {
			t.Errorf("clean: %v; want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "apps/db") {
		t.Errorf("clean names Site db, which the selection does not pick: %v", err)
	}
	back, err := migrate.RecordedKind(ctx, k.ID, opts.Options)
	if err != nil {
		t.Fatal(err)
	}
	_, err = back.Clean(ctx, opts)
	if !errors.Is(err, migrate.ErrNotMigrated) || !strings.Contains(err.Error(), "(2 of 4 objects)") || strings.Contains(err.Error(), "apps/fresh") {
		t.Errorf("clean of the move read back from its ledger: %v", err)
	}
}

// TestCleanGivesTheMoveOfAnOldShapeWrite: an object written in the old
// shape after apply moved it is left by apply (its snapshot is the state
// before the migration), so clean's refusal gives the kubectl patch that
// moves the value by hand; applied, it keeps the value, and clean
// verifies the object.
func TestCleanGivesTheMoveOfAnOldShapeWrite(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, app("a", map[string]any{"repo": "o/a", "size": int64(2)}))
	m := migration(t, false)
	opts := migrate.Options{Client: c}
	if _, res, err := m.Apply(ctx, opts); err != nil || res.Moved != 1 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	// An old writer, still at work, writes both old paths again.
	a := getApp(t, c, "a")
	_ = unstructured.SetNestedField(a.Object, "it's/new", "spec", "source", "url")
	_ = unstructured.SetNestedField(a.Object, int64(5), "spec", "size")
	if err := c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, res, err := m.Apply(ctx, opts); err != nil || res.Moved != 0 {
		t.Fatalf("apply again: %v %+v; want it to leave the object", err, res)
	}
	cleanOpts := migrate.CleanOptions{Options: opts, CRDManager: "inrun"}
	_, err := m.Clean(ctx, cleanOpts)
	const cmd = "kubectl patch apps.migrate.inrun.dev -n apps a --type json -p '"
	if !errors.Is(err, migrate.ErrNotMigrated) || !strings.Contains(err.Error(), "apps/a: holds spec.source.url, spec.size, written in the old shape after it was moved (an old writer is still at work), which apply leaves: stop that writer, then move the value yourself: "+cmd) {
		t.Fatalf("clean: %v", err)
	}
	_, patch, _ := strings.Cut(err.Error(), cmd)
	patch, _, _ = strings.Cut(patch, "\n")
	patch = strings.ReplaceAll(strings.TrimSuffix(patch, "'"), `'\''`, "'")
	if err := c.Patch(ctx, getApp(t, c, "a"), client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
		t.Fatalf("the patch %s: %v", patch, err)
	}
	spec := getApp(t, c, "a").Object["spec"]
	if want := map[string]any{"repository": "it's/new", "replicas": int64(5), "source": map[string]any{}}; !equalJSON(spec, want) {
		t.Errorf("spec after the patch: %v, want %v", spec, want)
	}
	if _, err := m.Clean(ctx, cleanOpts); err != nil {
		t.Errorf("clean after the patch: %v", err)
	}
}

// TestCleanNamesTheStoredVersionsToDrop: of a CRD Inrun did not install,
// clean names the stored versions to drop, not the storage version.
func TestCleanNamesTheStoredVersionsToDrop(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	crd := testCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Status.StoredVersions = []string{"v1alpha1", "v1"}
	})
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(crd, app("a", map[string]any{"repository": "o/a"})).Build()
	res, err := migration(t, false).Clean(ctx, migrate.CleanOptions{Options: migrate.Options{Client: c}, CRDManager: "inrun"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.CRDLeft, "from status.storedVersions (v1alpha1), after") {
		t.Errorf("CRD left: %q; want it to name v1alpha1 alone", res.CRDLeft)
	}
}
