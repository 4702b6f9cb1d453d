package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/migrate"
)

// These tests run the planner, the store and the three-way rollback
// against controller-runtime's fake client; cluster_test.go runs them on
// the real local control plane.

func migration(t testing.TB, acceptLoss bool) *migrate.Migration {
	t.Helper()
	bp, err := compiler.CompileFile("testdata/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if acceptLoss {
		bp.Serve.Field("repository").Migrate.AcceptLoss = true
	}
	m, err := migrate.FromBlueprint(bp)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func app(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "migrate.inrun.dev/v1", "kind": "App",
		"metadata": map[string]any{"name": name, "namespace": "apps", "uid": "uid-" + name},
		"spec":     spec,
	}}
	return u
}

// newClient is a fake client holding the test Blueprint's CRD and objs.
func newClient(t testing.TB, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, testCRD(t, nil))...).Build()
}

// testCRD is the test Blueprint's CRD, changed by edit when it is set.
func testCRD(t testing.TB, edit func(*apiextensionsv1.CustomResourceDefinition)) *unstructured.Unstructured {
	t.Helper()
	bp, err := compiler.CompileFile("testdata/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	crd := bp.Resource.CRD.DeepCopy()
	if edit != nil {
		edit(crd)
	}
	return crdObject(t, crd)
}

// TestPlanChecksTheInstalledCRD refuses to plan when the installed CRD has
// dropped an old path: its values would be pruned, not moved.
func TestPlanChecksTheInstalledCRD(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	crd := testCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
		delete(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties, "size")
	})
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(crd, app("a", map[string]any{"repo": "o/a"})).Build()
	_, err := migration(t, false).Plan(context.Background(), migrate.Options{Client: c})
	if err == nil || !strings.Contains(err.Error(), "the installed CRD apps.migrate.inrun.dev has no spec.size") {
		t.Errorf("Plan: %v", err)
	}
	c = fake.NewClientBuilder().WithScheme(s).Build()
	if _, err := migration(t, false).Plan(context.Background(), migrate.Options{Client: c}); err == nil || !strings.Contains(err.Error(), "CRD apps.migrate.inrun.dev is not installed") {
		t.Errorf("Plan without the CRD: %v", err)
	}
}

func getApp(t testing.TB, c client.Client, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("migrate.inrun.dev/v1")
	u.SetKind("App")
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestFromBlueprint(t *testing.T) {
	m := migration(t, false)
	want := []migrate.Move{
		{To: "spec.repository", From: []string{"spec.repo", "spec.source.url"}, Field: "repository"},
		{To: "spec.replicas", From: []string{"spec.size"}, Field: "replicas"},
	}
	if diff := cmp.Diff(want, m.Moves); diff != "" {
		t.Errorf("Moves (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(m.ID, "app-") || len(m.ID) != len("app-")+10 {
		t.Errorf("ID %q", m.ID)
	}
	// The IR carries migrate.from (into generated operators' gateways too).
	bp, err := compiler.CompileFile("testdata/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := ir.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ir.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if m2, err := migrate.FromBlueprint(back); err != nil || m2.ID != m.ID || !cmp.Equal(m2.Moves, m.Moves) {
		t.Errorf("after ir.Marshal and Unmarshal: %v %+v", err, m2)
	}
	// AcceptLoss does not change the ID: a plan's acknowledgement does not
	// start a new migration.
	if m2 := migration(t, true); m2.ID != m.ID {
		t.Errorf("ID changed with acceptLoss: %s, %s", m.ID, m2.ID)
	}
}

func TestPlan(t *testing.T) {
	m := migration(t, false)
	marked := app("done", map[string]any{"repository": "o/done"})
	marked.SetAnnotations(map[string]string{migrate.AnnotationID: m.ID})
	rewritten := app("rewritten", map[string]any{"repository": "o/r", "repo": "o/old-writer"})
	rewritten.SetAnnotations(map[string]string{migrate.AnnotationID: m.ID})
	c := newClient(t,
		app("a", map[string]any{"repo": "o/a", "size": int64(2)}),
		app("b", map[string]any{"source": map[string]any{"url": "o/b"}}),
		app("new", map[string]any{"repository": "o/new", "replicas": int64(1)}),
		app("same", map[string]any{"repo": "o/same", "repository": "o/same"}),
		app("conflict", map[string]any{"repo": "o/old", "repository": "o/new"}),
		app("two", map[string]any{"repo": "o/first", "source": map[string]any{"url": "o/second"}}),
		marked, rewritten,
	)
	p, err := m.Plan(context.Background(), migrate.Options{Client: c, Samples: 10})
	if err != nil {
		t.Fatal(err)
	}
	if p.Objects != 8 || p.ToMove != 5 || p.Migrated != 2 || p.Untouched != 1 {
		t.Errorf("Objects %d ToMove %d Migrated %d Untouched %d, want 8 5 2 1", p.Objects, p.ToMove, p.Migrated, p.Untouched)
	}
	if diff := cmp.Diff([]string{"apps/rewritten"}, p.Rewritten); diff != "" {
		t.Errorf("Rewritten (-want +got):\n%s", diff)
	}
	type loss struct{ Object, From, Dropped, Kept string }
	var got []loss
	for _, l := range p.Losses {
		got = append(got, loss{l.Object, l.From, migrate.Show(l.Dropped, true), migrate.Show(l.Kept, true)})
		if l.Accepted {
			t.Errorf("loss %+v accepted without acceptLoss", l)
		}
	}
	want := []loss{
		{"apps/conflict", "spec.repo", `"o/old"`, `"o/new"`},
		{"apps/two", "spec.source.url", `"o/second"`, `"o/first"`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Losses (-want +got):\n%s", diff)
	}
	if !p.Refused() {
		t.Error("a plan with unacknowledged losses is not refused")
	}
	wantA := migrate.Diff{Object: "apps/a", Fields: []migrate.FieldDiff{
		{Path: "spec.repository", Before: "(absent)", After: `"o/a"`},
		{Path: "spec.repo", Before: `"o/a"`, After: "(absent)"},
		{Path: "spec.replicas", Before: "(absent)", After: "2"},
		{Path: "spec.size", Before: "2", After: "(absent)"},
	}}
	if len(p.Samples) != 5 {
		t.Fatalf("%d samples, want 5", len(p.Samples))
	}
	if diff := cmp.Diff(wantA, p.Samples[0]); diff != "" {
		t.Errorf("sample (-want +got):\n%s", diff)
	}
	p, err = migration(t, true).Plan(context.Background(), migrate.Options{Client: c})
	if err != nil || p.Refused() || len(p.Losses) != 2 {
		t.Errorf("with acceptLoss: %v, refused %v, %d losses", err, p.Refused(), len(p.Losses))
	}
}

// writes counts the writes a client makes, by kind and name.
type writes struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *writes) add(obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	switch obj.(type) {
	case *corev1.Secret:
		kind = "Secret"
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	}
	w.n[kind+"/"+obj.GetName()]++
}

func (w *writes) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.n {
		n += v
	}
	return n
}

// counting wraps c: every Create and Update is counted, and after limit of
// them (when limit > 0) cancel is called, so the writes that follow fail as
// a killed process's would.
func counting(c client.WithWatch, w *writes, limit int, cancel context.CancelFunc) client.WithWatch {
	count := 0
	var mu sync.Mutex
	tick := func() {
		mu.Lock()
		defer mu.Unlock()
		count++
		if limit > 0 && count == limit {
			cancel()
		}
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			err := c.Create(ctx, obj, opts...)
			if err == nil {
				w.add(obj)
			}
			tick()
			return err
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			err := c.Update(ctx, obj, opts...)
			if err == nil {
				w.add(obj)
			}
			tick()
			return err
		},
	})
}

func TestApplyRefusesLoss(t *testing.T) {
	m := migration(t, false)
	c := newClient(t, app("a", map[string]any{"repo": "o/a"}), app("conflict", map[string]any{"repo": "o/old", "repository": "o/new"}))
	w := &writes{}
	_, _, err := m.Apply(context.Background(), migrate.Options{Client: counting(c, w, 0, nil)})
	if !errors.Is(err, migrate.ErrRefused) {
		t.Fatalf("Apply: %v, want ErrRefused", err)
	}
	for _, s := range []string{"apps/conflict", "spec.repo \"o/old\" would be dropped", "acceptLoss: true"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q:\n%v", s, err)
		}
	}
	if w.total() != 0 {
		t.Errorf("a refused apply wrote %v", w.n)
	}
}

// objects are the fixture of the apply and rollback tests.
func objects() []client.Object {
	return []client.Object{
		app("a", map[string]any{"repo": "o/a", "size": int64(2), "owner": "ann"}),
		app("b", map[string]any{"source": map[string]any{"url": "o/b"}}),
		app("c", map[string]any{"repo": "o/c"}),
		app("d", map[string]any{"size": int64(5)}),
		app("new", map[string]any{"repository": "o/new"}),
	}
}

func TestApplyAndRollback(t *testing.T) {
	ctx := context.Background()
	m := migration(t, false)
	c := newClient(t, objects()...)
	before := map[string]map[string]any{}
	for _, n := range []string{"a", "b", "c", "d", "new"} {
		before[n] = getApp(t, c, n).Object["spec"].(map[string]any)
	}
	w := &writes{}
	var seen []migrate.Progress
	p, res, err := m.Apply(ctx, migrate.Options{Client: counting(c, w, 0, nil), Workers: 2, Progress: func(p migrate.Progress) { seen = append(seen, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if p.ToMove != 4 || res.Moved != 4 || res.Skipped != 0 || len(res.Failed) != 0 {
		t.Fatalf("plan %d to move; result %+v", p.ToMove, res)
	}
	if len(seen) != 4 || seen[3].Done != 4 || seen[3].Total != 4 || seen[3].Changed != 4 {
		t.Errorf("progress %+v", seen)
	}
	wantSpecs := map[string]map[string]any{
		"a":   {"repository": "o/a", "replicas": int64(2), "owner": "ann"},
		"b":   {"repository": "o/b"},
		"c":   {"repository": "o/c"},
		"d":   {"replicas": int64(5)},
		"new": {"repository": "o/new"},
	}
	for n, want := range wantSpecs {
		got := getApp(t, c, n)
		if diff := cmp.Diff(want, got.Object["spec"]); diff != "" {
			t.Errorf("%s spec (-want +got):\n%s", n, diff)
		}
		if marked := got.GetAnnotations()[migrate.AnnotationID] == m.ID; marked != (n != "new") {
			t.Errorf("%s marked %v", n, marked)
		}
	}
	// One snapshot and one update per object moved; the ledger's head and
	// its shards besides.
	for _, n := range []string{"a", "b", "c", "d"} {
		if w.n["App/"+n] != 1 {
			t.Errorf("App %s written %d times, want once", n, w.n["App/"+n])
		}
		if w.n["Secret/"+migrate.SnapshotName(m.ID, "uid-"+n, 0)] != 1 {
			t.Errorf("snapshot of %s written %d times", n, w.n["Secret/"+migrate.SnapshotName(m.ID, "uid-"+n, 0)])
		}
	}
	if w.n["App/new"] != 0 {
		t.Errorf("App new, with nothing to move, was written")
	}

	// Again: nothing to do, nothing written.
	w2 := &writes{}
	p, res, err = m.Apply(ctx, migrate.Options{Client: counting(c, w2, 0, nil)})
	if err != nil || p.ToMove != 0 || p.Migrated != 4 || res.Moved != 0 || w2.total() != 0 {
		t.Fatalf("second apply: err %v, plan %+v, result %+v, writes %v", err, p, res, w2.n)
	}

	// Edit b's repository and a's owner (a field the migration did not
	// write) after the migration.
	b := getApp(t, c, "b")
	_ = unstructured.SetNestedField(b.Object, "o/b-edited", "spec", "repository")
	if err := c.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	a := getApp(t, c, "a")
	_ = unstructured.SetNestedField(a.Object, "bob", "spec", "owner")
	if err := c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}

	_, rb, err := migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c}})
	if err != nil {
		t.Fatal(err)
	}
	wantDrift := []migrate.Drift{
		{Object: "apps/b", Field: "spec.repository", Before: "(absent)", Written: `"o/b"`, Live: `"o/b-edited"`},
	}
	if diff := cmp.Diff(wantDrift, rb.Drift); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	if rb.Restored != 4 || rb.Unchanged != 0 || len(rb.Gone) != 0 || len(rb.Failed) != 0 {
		t.Errorf("rollback %+v", rb)
	}
	for _, n := range []string{"c", "d"} {
		if diff := cmp.Diff(before[n], getApp(t, c, n).Object["spec"]); diff != "" {
			t.Errorf("%s not restored (-before +now):\n%s", n, diff)
		}
	}
	// a: the moved fields are back; owner, edited since, stays bob.
	wantA := map[string]any{"repo": "o/a", "size": int64(2), "owner": "bob"}
	if diff := cmp.Diff(wantA, getApp(t, c, "a").Object["spec"]); diff != "" {
		t.Errorf("a (-want +got):\n%s", diff)
	}
	// b: the old path is back, the edited new path is not overwritten.
	wantB := map[string]any{"source": map[string]any{"url": "o/b"}, "repository": "o/b-edited"}
	if diff := cmp.Diff(wantB, getApp(t, c, "b").Object["spec"]); diff != "" {
		t.Errorf("b (-want +got):\n%s", diff)
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if _, ok := getApp(t, c, n).GetAnnotations()[migrate.AnnotationID]; ok {
			t.Errorf("%s still carries the marker", n)
		}
	}

	// Again: b's drift is reported again, and nothing is written.
	_, rb, err = migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c}})
	if err != nil || rb.Restored != 0 || rb.Unchanged != 4 || len(rb.Drift) != 1 {
		t.Fatalf("second rollback: %v %+v", err, rb)
	}
	// Forced, b's new path goes too.
	_, rb, err = migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c}, Force: []string{"apps/b"}})
	if err != nil || rb.Restored != 1 || len(rb.Drift) != 1 || !rb.Drift[0].Forced {
		t.Fatalf("forced rollback: %v %+v", err, rb)
	}
	if diff := cmp.Diff(before["b"], getApp(t, c, "b").Object["spec"]); diff != "" {
		t.Errorf("forced b (-before +now):\n%s", diff)
	}
	if _, _, err := migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c}, Force: []string{"apps/zz"}}); err == nil || !strings.Contains(err.Error(), "apps/zz") {
		t.Errorf("--force of an unknown object: %v", err)
	}
}

// TestResume interrupts Apply after each of its writes in turn, then runs
// it again: every object ends moved, and no object is updated twice.
func TestResume(t *testing.T) {
	m := migration(t, false)
	// 4 objects to move: a head, then per object a snapshot, a ledger
	// write, an update; the first run of a shard creates it.
	for limit := 1; limit <= 14; limit++ {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			c := newClient(t, objects()...)
			w := &writes{}
			ctx, cancel := context.WithCancel(context.Background())
			_, _, err := m.Apply(ctx, migrate.Options{Client: counting(c, w, limit, cancel), Workers: 1})
			cancel()
			if err == nil && w.total() > limit {
				t.Fatalf("apply was not interrupted after %d writes (%d)", limit, w.total())
			}
			_, res, err := m.Apply(context.Background(), migrate.Options{Client: counting(c, w, 0, nil), Workers: 3})
			if err != nil || len(res.Failed) > 0 {
				t.Fatalf("resumed apply: %v %v", err, res.Failed)
			}
			for _, n := range []string{"a", "b", "c", "d"} {
				if w.n["App/"+n] != 1 {
					t.Errorf("App %s updated %d times, want once", n, w.n["App/"+n])
				}
				if getApp(t, c, n).GetAnnotations()[migrate.AnnotationID] != m.ID {
					t.Errorf("App %s not marked", n)
				}
			}
			// The snapshots are the state before the move.
			_, rb, err := migrate.Rollback(context.Background(), m.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c}})
			if err != nil || rb.Restored != 4 || len(rb.Drift) != 0 {
				t.Fatalf("rollback: %v %+v", err, rb)
			}
			for _, o := range objects() {
				want := o.(*unstructured.Unstructured).Object["spec"]
				if diff := cmp.Diff(want, getApp(t, c, o.GetName()).Object["spec"]); diff != "" {
					t.Errorf("%s after rollback (-want +got):\n%s", o.GetName(), diff)
				}
			}
		})
	}
}

func TestRollbackRefusesTampering(t *testing.T) {
	ctx := context.Background()
	m := migration(t, false)
	c := newClient(t, objects()...)
	if _, _, err := m.Apply(ctx, migrate.Options{Client: c}); err != nil {
		t.Fatal(err)
	}
	ns := migrate.DefaultNamespace
	// a's snapshot edited, c's deleted, d's ledger entry removed.
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: migrate.SnapshotName(m.ID, "uid-a", 0)}, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["object"] = []byte(strings.Replace(string(sec.Data["object"]), `"o/a"`, `"o/evil"`, 1))
	if err := c.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: migrate.SnapshotName(m.ID, "uid-c", 0)}}); err != nil {
		t.Fatal(err)
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if _, ok := cm.Data["uid-d"]; ok {
			delete(cm.Data, "uid-d")
			if err := c.Update(ctx, &cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	rv := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		rv[n] = getApp(t, c, n).GetResourceVersion()
	}
	_, _, err := migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c}})
	if !errors.Is(err, migrate.ErrTampered) {
		t.Fatalf("Rollback: %v, want ErrTampered", err)
	}
	for _, s := range []string{
		"apps/a: snapshot " + ns + "/" + migrate.SnapshotName(m.ID, "uid-a", 0) + " does not match the ledger",
		"apps/c: snapshot Secret " + ns + "/" + migrate.SnapshotName(m.ID, "uid-c", 0) + " is missing",
		"apps/d: carries the marker of migration " + m.ID + ", but the ledger has no entry for it",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q:\n%v", s, err)
		}
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if got := getApp(t, c, n).GetResourceVersion(); got != rv[n] {
			t.Errorf("a refused rollback wrote %s", n)
		}
	}
	if _, _, err := migrate.Rollback(ctx, "app-0000000000", migrate.RollbackOptions{Options: migrate.Options{Client: c}}); err == nil || !strings.Contains(err.Error(), "no ledger of migration app-0000000000") {
		t.Errorf("rollback of an unknown migration: %v", err)
	}
}

func TestReports(t *testing.T) {
	m := migration(t, false)
	c := newClient(t, app("a", map[string]any{"repo": "o/a"}), app("conflict", map[string]any{"repo": "o/old", "repository": "o/new"}))
	p, err := m.Plan(context.Background(), migrate.Options{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p.Report(&b)
	for _, s := range []string{
		"Migration " + m.ID + " of App.migrate.inrun.dev/v1:",
		"spec.repo, spec.source.url → spec.repository (field repository)",
		"2 App objects: 2 to move, 0 already moved, 0 with nothing to move.",
		"Lossy moves (1), NOT acknowledged",
		`apps/conflict: spec.repo "o/old" would be dropped; spec.repository keeps "o/new" [not acknowledged]`,
		"apps/a\n    spec.repository: (absent) → \"o/a\"\n    spec.repo: \"o/a\" → (absent)",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the plan does not say %q:\n%s", s, b.String())
		}
	}
	b.Reset()
	(&migrate.RollbackResult{Restored: 3, Drift: []migrate.Drift{{Object: "apps/b", Field: "spec.repository", Before: "(absent)", Written: `"o/b"`, Live: `"o/x"`}}}).Report(&b)
	if s := `apps/b spec.repository: before (absent), migration wrote "o/b", live "o/x": left as it is`; !strings.Contains(b.String(), s) {
		t.Errorf("the rollback report does not say %q:\n%s", s, b.String())
	}
}

// TestRollbackReportsOnlyPathsItWrote: a path the migration did not write
// (absent before it and after it) set since is no drift of the migration:
// rollback neither reports nor touches it.
func TestRollbackReportsOnlyPathsItWrote(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, app("a", map[string]any{"size": int64(2)}))
	m := migration(t, false)
	opts := migrate.Options{Client: c}
	if _, res, err := m.Apply(ctx, opts); err != nil || res.Moved != 1 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	a := getApp(t, c, "a")
	_ = unstructured.SetNestedField(a.Object, "edited/repo", "spec", "repository")
	if err := c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, res, err := migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: opts})
	if err != nil || res.Restored != 1 || len(res.Drift) != 0 {
		t.Fatalf("rollback: %v %+v; want a restored, no drift", err, res)
	}
	if spec := getApp(t, c, "a").Object["spec"]; !equalJSON(spec, map[string]any{"size": 2, "repository": "edited/repo"}) {
		t.Errorf("spec after the rollback: %v", spec)
	}
}
