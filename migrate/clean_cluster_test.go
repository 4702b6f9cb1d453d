package migrate_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// TestClusterClean runs inrun clean on the real local control plane: it
// refuses, writing nothing, while an object holds a value at an old path;
// once every object is moved, it removes the old paths from the CRD, has
// the objects stored in the new storage version and drops the old one from
// status.storedVersions, and deletes the snapshots and the ledger; run
// again, it finds nothing left to do.
func TestClusterClean(t *testing.T) {
	cl := clustertest.Shared(t)
	cfg := cl.RESTConfig()
	ctx := t.Context()
	// The test Blueprint in a group of its own: clean changes the CRD.
	src, err := os.ReadFile("testdata/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), "group: migrate.inrun.dev", "group: clean.migrate.inrun.dev", 1))
	bp, err := compiler.Compile(load.Bytes("testdata/clean.yaml", src), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, cl)
	snapNS := clustertest.NewNamespace(t, cl)
	m, err := migrate.FromBlueprint(bp)
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	uids := map[string]types.UID{}
	for i := range n {
		spec := map[string]any{"repo": fmt.Sprintf("org/repo-%d", i)}
		if i%4 == 1 {
			spec = map[string]any{"repository": fmt.Sprintf("org/new-%d", i)} // nothing to move
		}
		u := app(fmt.Sprintf("app-%02d", i), spec)
		u.SetAPIVersion("clean.migrate.inrun.dev/v1")
		u.SetNamespace(ns)
		u.SetUID("")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		uids[u.GetName()] = u.GetUID()
	}

	// The storage version changes: v2 is stored from now on, the objects
	// are still stored in v1.
	crdName := "apps.clean.migrate.inrun.dev"
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	v2 := *crd.Spec.Versions[0].DeepCopy()
	v2.Name = "v2"
	crd.Spec.Versions[0].Storage = false
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	// Written as Inrun installs the Blueprint's next CRD: clean changes
	// only a CRD Inrun alone wrote.
	if err := c.Update(ctx, crd, client.FieldOwner(reconciler.ManagedBy)); err != nil {
		t.Fatal(err)
	}

	opts := migrate.Options{Client: c, Namespace: snapNS}
	// The local control plane serves storagemigration.k8s.io but runs no
	// controller for it: clean waits this long before rewriting itself.
	cleanOpts := migrate.CleanOptions{Options: opts, CRDManager: reconciler.ManagedBy, PickupTimeout: 3 * time.Second}
	// Nothing moved yet: clean refuses and names every object to move.
	_, err = m.Clean(ctx, cleanOpts)
	if !errors.Is(err, migrate.ErrNotMigrated) || strings.Count(err.Error(), "not moved yet") != n-n/4 || !strings.Contains(err.Error(), ns+"/app-00: holds spec.repo") {
		t.Fatalf("clean before apply: %v", err)
	}
	if _, res, err := m.Apply(ctx, opts); err != nil || len(res.Failed) > 0 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	// An old writer writes app-02 in the old shape after its move.
	obj := get(t, c, m, ns, "app-02")
	_ = unstructured.SetNestedField(obj.Object, "org/old-writer", "spec", "repo")
	if err := c.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	snapshots := func() int {
		var secs corev1.SecretList
		var cms corev1.ConfigMapList
		if err := c.List(ctx, &secs, client.InNamespace(snapNS), client.MatchingLabels{migrate.LabelID: m.ID}); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &cms, client.InNamespace(snapNS), client.MatchingLabels{migrate.LabelID: m.ID}); err != nil {
			t.Fatal(err)
		}
		return len(secs.Items) + len(cms.Items)
	}
	stored := snapshots()
	if stored < n-n/4+1 {
		t.Fatalf("%d snapshots and ledger ConfigMaps after apply", stored)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	rv := crd.ResourceVersion
	_, err = m.Clean(ctx, cleanOpts)
	if !errors.Is(err, migrate.ErrNotMigrated) || !strings.Contains(err.Error(), "(1 of 12 objects)") ||
		!strings.Contains(err.Error(), ns+"/app-02: holds spec.repo, written in the old shape after it was moved") {
		t.Fatalf("clean with an object written in the old shape: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.ResourceVersion != rv || snapshots() != stored {
		t.Fatalf("the refused clean wrote: CRD resourceVersion %s → %s, %d → %d snapshots and ledger ConfigMaps", rv, crd.ResourceVersion, stored, snapshots())
	}

	// The old writer stops; app-02 is moved by hand. Now clean goes.
	obj = get(t, c, m, ns, "app-02")
	_ = unstructured.SetNestedField(obj.Object, "org/old-writer", "spec", "repository")
	unstructured.RemoveNestedField(obj.Object, "spec", "repo")
	if err := c.Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("app-%02d", i)
		versions[name] = get(t, c, m, ns, name).GetResourceVersion()
	}
	res, err := m.Clean(ctx, cleanOpts)
	if err != nil {
		t.Fatalf("clean: %v (%+v)", err, res)
	}
	t.Logf("clean: %+v", res)
	if strings.Join(res.RemovedPaths, ",") != "spec.repo,spec.source.url,spec.size" || res.CRDLeft != "" {
		t.Errorf("removed %v from the CRD (left: %q)", res.RemovedPaths, res.CRDLeft)
	}
	if strings.Join(res.DroppedVersions, ",") != "v1" || res.StorageMigration == "" {
		t.Errorf("dropped stored versions %v, via %q", res.DroppedVersions, res.StorageMigration)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
		t.Fatal(err)
	}
	if strings.Join(crd.Status.StoredVersions, ",") != "v2" {
		t.Errorf("status.storedVersions = %v, want [v2]", crd.Status.StoredVersions)
	}
	for _, v := range crd.Spec.Versions {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		_, repo := spec.Properties["repo"]
		_, source := spec.Properties["source"]
		_, repository := spec.Properties["repository"]
		if v.Name == "v1" && (repo || source || !repository) || v.Name == "v2" && !repo {
			t.Errorf("version %s's spec properties after clean: repo %v, source %v, repository %v", v.Name, repo, source, repository)
		}
	}
	if left := snapshots(); left != 0 || res.Deleted != stored {
		t.Errorf("after clean: %d snapshots and ledger ConfigMaps left; %d deleted, want %d", left, res.Deleted, stored)
	}
	for i := range n {
		name := fmt.Sprintf("app-%02d", i)
		obj := get(t, c, m, ns, name)
		r, _, _ := unstructured.NestedString(obj.Object, "spec", "repository")
		want := fmt.Sprintf("org/repo-%d", i)
		switch {
		case i%4 == 1:
			want = fmt.Sprintf("org/new-%d", i)
		case i == 2:
			want = "org/old-writer"
		}
		if r != want || obj.GetUID() != uids[name] {
			t.Errorf("%s after clean: repository %q (want %q), UID %s (want %s)", name, r, want, obj.GetUID(), uids[name])
		}
		// The API server skips a write that stores the same bytes. The
		// objects apply moved were stored in v2 already; the others were
		// still stored in v1, and a new resourceVersion shows they were
		// stored again, in v2.
		if again := obj.GetResourceVersion() != versions[name]; again != (i%4 == 1) {
			t.Errorf("%s: stored again by clean %v, want %v", name, again, i%4 == 1)
		}
	}

	// Again: nothing left to do, and no error.
	res, err = m.Clean(ctx, cleanOpts)
	if err != nil || !res.NoLedger || len(res.RemovedPaths) > 0 || len(res.DroppedVersions) > 0 || res.Deleted != 0 {
		t.Errorf("clean again: %v %+v", err, res)
	}
}

func get(t *testing.T, c client.Client, m *migrate.Migration, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.Kind)
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}
