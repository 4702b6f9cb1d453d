package migrate_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// The kind-move cluster test moves Sites to WebApps on the real local
// control plane, with garbage collection on and the runtime reconciling
// both kinds throughout, interrupting the apply after every single write.

var (
	siteKind   = schema.GroupVersionKind{Group: "migrate.inrun.dev", Version: "v1", Kind: "Site"}
	webAppKind = schema.GroupVersionKind{Group: "platform.inrun.dev", Version: "v1", Kind: "WebApp"}
)

// kindWrites counts the writes a client makes by verb, kind and name;
// after limit of them (when limit > 0) it calls cancel, so that every
// write that follows fails as a killed process's would.
type kindWrites struct {
	mu    sync.Mutex
	n     map[string]int
	count int
}

func (w *kindWrites) client(c client.WithWatch, limit int, cancel context.CancelFunc) client.WithWatch {
	w.mu.Lock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	w.count = 0
	w.mu.Unlock()
	done := func(verb string, obj client.Object, err error) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err == nil {
			kind := obj.GetObjectKind().GroupVersionKind().Kind
			switch obj.(type) {
			case *corev1.Secret:
				kind = "Secret"
			case *corev1.ConfigMap:
				kind = "ConfigMap"
			}
			w.n[verb+" "+kind+" "+obj.GetNamespace()+"/"+obj.GetName()]++
		}
		if err != nil {
			return err // nothing changed
		}
		w.count++
		if limit > 0 && w.count == limit {
			cancel()
		}
		return nil
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return done("create", obj, c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return done("update", obj, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return done("patch", obj, c.Patch(ctx, obj, patch, opts...))
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return done("delete", obj, c.Delete(ctx, obj, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return done("update/"+sub, obj, c.SubResource(sub).Update(ctx, obj, opts...))
		},
	})
}

func (w *kindWrites) get(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[key]
}

func TestClusterKindMove(t *testing.T) {
	ctx := t.Context()
	f := newKindFixture(t, "")
	c, ns, snapNS, k := f.c, f.ns, f.snapNS, f.k

	// Four Sites move (tier=web, replicas > 0); one is not web, one has no
	// replicas.
	type siteSpec struct {
		name, tier string
		replicas   int64
	}
	sites := []siteSpec{{"a", "web", 1}, {"b", "web", 2}, {"c", "web", 3}, {"d", "web", 1}, {"db", "db", 1}, {"idle", "web", 0}}
	moving := []string{"a", "b", "c", "d"}
	for _, s := range sites {
		spec := map[string]any{"image": "nginx:" + s.name, "replicas": s.replicas}
		if s.name == "c" {
			spec["legacyNote"] = "dropped by the move"
		}
		f.createSite(t, s.name, map[string]string{"tier": s.tier}, spec, map[string]string{"example.com/note": "kept"})
	}
	get := func(gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, error) {
		return f.get(ctx, gvk, name)
	}
	// children waits until every Site's children (its ConfigMap and
	// ClusterRole) are owned by the custom resource of kind gvk of that
	// name, and the runtime has written its status: it returns their UIDs.
	children := func(gvk schema.GroupVersionKind, blueprint string, names []string) map[string]types.UID {
		t.Helper()
		var last string
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			uids := map[string]types.UID{}
			last = ""
			for _, n := range names {
				owner, err := get(gvk, n)
				if err != nil {
					last = fmt.Sprintf("%s %s: %v", gvk.Kind, n, err)
					break
				}
				if img, _, _ := unstructured.NestedString(owner.Object, "status", "image"); img != "nginx:"+n {
					last = fmt.Sprintf("%s %s: status.image %q", gvk.Kind, n, img)
					break
				}
				var cm corev1.ConfigMap
				var role rbacv1.ClusterRole
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &cm); err != nil {
					last = fmt.Sprintf("ConfigMap %s: %v", n, err)
					break
				}
				if err := c.Get(ctx, client.ObjectKey{Name: ns + "-" + n}, &role); err != nil {
					last = fmt.Sprintf("ClusterRole %s: %v", n, err)
					break
				}
				refs := cm.GetOwnerReferences()
				if len(refs) != 1 || refs[0].UID != owner.GetUID() || refs[0].Kind != gvk.Kind {
					last = fmt.Sprintf("ConfigMap %s is owned by %v, not %s %s", n, refs, gvk.Kind, owner.GetUID())
					break
				}
				for _, l := range []map[string]string{cm.Labels, role.Labels} {
					if l[ir.LabelOwnerUID] != string(owner.GetUID()) || l[ir.LabelBlueprint] != blueprint {
						last = fmt.Sprintf("a child of %s carries %v", n, l)
					}
				}
				if last != "" {
					break
				}
				uids["ConfigMap "+n] = cm.UID
				uids["ClusterRole "+n] = role.UID
			}
			if last == "" {
				return uids
			}
		}
		t.Fatalf("the children are not the %ss': %s", gvk.Kind, last)
		return nil
	}
	all := []string{"a", "b", "c", "d", "db", "idle"}
	childUIDs := children(siteKind, "site", all)
	oldUIDs := map[string]types.UID{}
	for _, n := range all {
		u, _ := get(siteKind, n)
		oldUIDs[n] = u.GetUID()
		if n == "a" && !strings.Contains(strings.Join(u.GetFinalizers(), ","), ir.Finalizer) {
			t.Fatalf("Site a has no %s finalizer (it has a cluster-scoped child): %v", ir.Finalizer, u.GetFinalizers())
		}
	}
	opts := migrate.Options{Client: c, Namespace: snapNS, Only: ns, Workers: 1}

	// A WebApp of a moving Site's name, made by someone else: the plan
	// names it, and apply refuses, writing nothing.
	squatter := &unstructured.Unstructured{}
	squatter.SetGroupVersionKind(webAppKind)
	squatter.SetNamespace(ns)
	squatter.SetName("b")
	squatter.Object["spec"] = map[string]any{"image": "nginx:b"}
	if err := c.Create(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	p, err := k.Plan(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.Selected != 4 || p.ToMove != 3 || len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0], ns+"/b: WebApp "+ns+"/b already exists") {
		t.Fatalf("plan with a WebApp in the way: %+v", p)
	}
	if len(p.Losses) != 1 || p.Losses[0].Path != "spec.legacyNote" || p.Losses[0].Object != ns+"/c" {
		t.Errorf("losses: %+v", p.Losses)
	}
	if p.Children != 6 {
		t.Errorf("plan: %d children to re-parent, want 6 (b's are in the way)", p.Children)
	}
	if _, _, err := k.Apply(ctx, opts); !errors.Is(err, migrate.ErrRefused) || !strings.Contains(err.Error(), ns+"/b") {
		t.Fatalf("apply with a WebApp in the way: %v", err)
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(snapNS)); err != nil || len(secrets.Items) != 0 {
		t.Fatalf("a refused apply wrote %d snapshots (%v)", len(secrets.Items), err)
	}
	for _, n := range moving {
		if u, _ := get(siteKind, n); u.GetAnnotations()[migrate.AnnotationID] != "" {
			t.Fatalf("a refused apply marked Site %s", n)
		}
	}
	if err := c.Delete(ctx, squatter); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := get(webAppKind, "b"); apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Apply, killed after every single write and run again, until done.
	w := &kindWrites{}
	runs := 0
	for ; ; runs++ {
		if runs > 200 {
			t.Fatal("apply did not finish in 200 runs")
		}
		actx, cancel := context.WithCancel(ctx)
		o := opts
		// Killed after each write, until a run of 1 write cannot get
		// further (a snapshot rewritten since the runtime changed the
		// object): then after 2, 3, ... writes.
		o.Client = w.client(c, 1+runs/40, cancel)
		_, res, err := k.Apply(actx, o)
		cancel()
		if testing.Verbose() {
			t.Logf("run %d: %v %+v", runs, err, res)
		}
		if err == nil && len(res.Failed) == 0 {
			break
		}
		if !errors.Is(err, context.Canceled) && !(res != nil && len(res.Failed) > 0) {
			t.Fatalf("apply run %d: %v", runs, err)
		}
	}
	if runs < 4*8 {
		t.Errorf("the apply finished in %d runs: it was not interrupted at every step", runs)
	}
	for _, n := range moving {
		if got := w.get("create WebApp " + ns + "/" + n); got != 1 {
			t.Errorf("WebApp %s created %d times, want once", n, got)
		}
		if got := w.get("delete Site " + ns + "/" + n); got != 1 {
			t.Errorf("Site %s deleted %d times, want once", n, got)
		}
		if _, err := get(siteKind, n); !apierrors.IsNotFound(err) {
			t.Errorf("Site %s still there after the move: %v", n, err)
		}
		nu, err := get(webAppKind, n)
		if err != nil {
			t.Fatal(err)
		}
		if nu.GetAnnotations()[migrate.AnnotationFromUID] != string(oldUIDs[n]) || nu.GetLabels()["tier"] != "web" || nu.GetAnnotations()["example.com/note"] != "kept" {
			t.Errorf("WebApp %s: %v %v", n, nu.GetLabels(), nu.GetAnnotations())
		}
		if _, has, _ := unstructured.NestedFieldNoCopy(nu.Object, "spec", "legacyNote"); has {
			t.Errorf("WebApp %s holds spec.legacyNote", n)
		}
	}
	for _, n := range []string{"db", "idle"} {
		if u, err := get(siteKind, n); err != nil || u.GetAnnotations()[migrate.AnnotationID] != "" {
			t.Errorf("Site %s, not selected, was touched: %v", n, err)
		}
	}
	// The WebApps' runtime adopts the children: same UIDs, no others.
	after := children(webAppKind, "webapp", moving)
	for key, uid := range after {
		if childUIDs[key] != uid {
			t.Errorf("%s: UID %s after the move, %s before", key, uid, childUIDs[key])
		}
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(ns), client.HasLabels{ir.LabelOwnerUID}); err != nil || len(cms.Items) != len(all) {
		t.Errorf("%d child ConfigMaps, want %d (%v)", len(cms.Items), len(all), err)
	}
	p, err = k.Plan(ctx, opts)
	if err != nil || p.ToMove != 0 || p.InProgress != 0 || p.Moved != 4 {
		t.Errorf("plan after the move: %v %+v", err, p)
	}

	// Edit one WebApp after the move, then roll back.
	edited, _ := get(webAppKind, "d")
	_ = unstructured.SetNestedField(edited.Object, int64(9), "spec", "replicas")
	if err := c.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	// And a label of another, whose edit --force overrides.
	forced, _ := get(webAppKind, "a")
	forced.SetLabels(map[string]string{"tier": "edited"})
	if err := c.Update(ctx, forced); err != nil {
		t.Fatal(err)
	}
	_, rb, err := migrate.RollbackKind(ctx, k.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c, Namespace: snapNS, Workers: 2}, Force: []string{ns + "/a"}})
	if err != nil {
		t.Fatal(err)
	}
	if rb.Restored != 4 || len(rb.Failed) > 0 || len(rb.Gone) > 0 {
		t.Errorf("rollback: %+v", rb)
	}
	wantDrift := []migrate.Drift{
		{Object: ns + "/a", Field: "metadata.labels.tier", Before: `"web"`, Written: `"web"`, Live: `"edited"`, Forced: true},
		{Object: ns + "/d", Field: "spec.replicas", Before: "1", Written: "1", Live: "9"},
	}
	if fmt.Sprint(rb.Drift) != fmt.Sprint(wantDrift) {
		t.Errorf("drift:\n%+v\nwant\n%+v", rb.Drift, wantDrift)
	}
	if a, _ := get(siteKind, "a"); a.GetLabels()["tier"] != "web" {
		t.Errorf("Site a, forced: labels %v, want the snapshot's", a.GetLabels())
	}
	for _, n := range moving {
		if _, err := get(webAppKind, n); !apierrors.IsNotFound(err) {
			t.Errorf("WebApp %s still there after the rollback: %v", n, err)
		}
		old, err := get(siteKind, n)
		if err != nil {
			t.Fatal(err)
		}
		if old.GetAnnotations()[migrate.AnnotationRollbackOf] != string(oldUIDs[n]) {
			t.Errorf("Site %s: annotations %v", n, old.GetAnnotations())
		}
		r, _, _ := unstructured.NestedInt64(old.Object, "spec", "replicas")
		want := map[string]int64{"a": 1, "b": 2, "c": 3, "d": 9}[n] // d's edit is kept
		if r != want {
			t.Errorf("Site %s: replicas %d, want %d", n, r, want)
		}
	}
	if note, _, _ := unstructured.NestedString(func() *unstructured.Unstructured { u, _ := get(siteKind, "c"); return u }().Object, "spec", "legacyNote"); note != "dropped by the move" {
		t.Errorf("Site c: legacyNote %q after the rollback, want the snapshot's", note)
	}
	back := children(siteKind, "site", all)
	for key, uid := range back {
		if childUIDs[key] != uid {
			t.Errorf("%s: UID %s after the rollback, %s before the move", key, uid, childUIDs[key])
		}
	}
	// Run again: nothing left to do.
	_, rb, err = migrate.RollbackKind(ctx, k.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c, Namespace: snapNS}})
	if err != nil || rb.Restored != 0 || len(rb.Failed) > 0 {
		t.Errorf("second rollback: %v %+v", err, rb)
	}
}

// TestClusterKindMoveScale moves $INRUN_MIGRATE_KIND_OBJECTS Sites (20 by
// default; make migrate-kind-scale runs 1,000) with the apply interrupted
// three times and resumed; then edits 1% of the WebApps (at least two)
// and rolls back, interrupted twice and resumed: exactly the edited fields
// are drift, and no child's UID changes on the way there or back.
func TestClusterKindMoveScale(t *testing.T) {
	n := 20
	if v := os.Getenv("INRUN_MIGRATE_KIND_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			t.Fatalf("INRUN_MIGRATE_KIND_OBJECTS=%q: want a number of at least 10", v)
		}
	}
	ctx := t.Context()
	f := newKindFixture(t, "")
	c, ns, snapNS, k := f.c, f.ns, f.snapNS, f.k
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("site-%05d", i)
		f.createSite(t, names[i], map[string]string{"tier": "web"}, map[string]any{"image": "nginx:" + names[i], "replicas": int64(1 + i%3)})
	}
	before := siteChildren(t, c, ns, siteKind, "site", n)
	opts := migrate.Options{Client: c, Namespace: snapNS, Only: ns, Workers: 4}

	// Each object takes about nine writes.
	w := &kindWrites{}
	for _, limit := range []int{5, n*9/4 + 1, n*9/2 + 2} {
		actx, cancel := context.WithCancel(ctx)
		o := opts
		o.Client = w.client(c, limit, cancel)
		_, res, err := k.Apply(actx, o)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("apply interrupted after %d writes: %v (result %+v)", limit, err, res)
		}
	}
	o := opts
	o.Client = w.client(c, 0, nil)
	p, res, err := k.Apply(ctx, o)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("resumed apply: %v %+v", err, res)
	}
	if p.Moved == 0 || p.Moved+p.ToMove+p.InProgress != n {
		t.Errorf("resumed plan: %d moved before, %d to move, %d begun", p.Moved, p.ToMove, p.InProgress)
	}
	// A create in flight when the context ended may have succeeded
	// unseen, so the count is at most one; that every WebApp exists is
	// checked with their children next.
	for _, name := range names {
		if got := w.get("create WebApp " + ns + "/" + name); got > 1 {
			t.Errorf("WebApp %s created %d times, want once", name, got)
		}
	}
	if after := siteChildren(t, c, ns, webAppKind, "webapp", n); !mapsEqual(after, before) {
		t.Errorf("child UIDs changed by the move")
	}

	edited := map[string]bool{}
	step := n / max(2, n/100)
	for i := 1; i < n; i += step {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(webAppKind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[i]}, u); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, "nginx:edited", "spec", "image")
		if err := c.Update(ctx, u); err != nil {
			t.Fatal(err)
		}
		edited[ns+"/"+names[i]] = true
	}
	drift := map[string]bool{}
	rbOpts := func(cl client.Client) migrate.RollbackOptions {
		return migrate.RollbackOptions{Options: migrate.Options{Client: cl, Namespace: snapNS, Workers: 4}}
	}
	for _, limit := range []int{3, n * 2} {
		actx, cancel := context.WithCancel(ctx)
		_, rb, err := migrate.RollbackKind(actx, k.ID, rbOpts(w.client(c, limit, cancel)))
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("rollback interrupted after %d writes: %v (result %+v)", limit, err, rb)
		}
		for _, d := range rb.Drift {
			drift[d.Object] = true
		}
	}
	_, rb, err := migrate.RollbackKind(ctx, k.ID, rbOpts(c))
	if err != nil || len(rb.Failed) > 0 || len(rb.Gone) > 0 {
		t.Fatalf("resumed rollback: %v %+v", err, rb)
	}
	for _, d := range rb.Drift {
		if d.Field != "spec.image" || d.Live != `"nginx:edited"` {
			t.Errorf("drift %+v", d)
		}
		drift[d.Object] = true
	}
	if !mapsEqual(drift, edited) {
		t.Errorf("drift on %v, want exactly %v", drift, edited)
	}
	if back := siteChildren(t, c, ns, siteKind, "site", n); !mapsEqual(back, before) {
		t.Errorf("child UIDs changed by the rollback")
	}
	for i, name := range names {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(siteKind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			t.Fatal(err)
		}
		img, _, _ := unstructured.NestedString(u.Object, "spec", "image")
		if want := map[bool]string{true: "nginx:edited", false: "nginx:" + name}[edited[ns+"/"+name]]; img != want {
			t.Errorf("Site %s: image %q after the rollback, want %q (%d)", name, img, want, i)
		}
	}
}

// siteChildren waits until every child (a ConfigMap, a ClusterRole) of
// the n custom resources in ns carries the inventory of the custom
// resource of kind gvk of its name, and returns the children's UIDs.
func siteChildren(t *testing.T, c client.Client, ns string, gvk schema.GroupVersionKind, blueprint string, n int) map[string]types.UID {
	t.Helper()
	ctx := t.Context()
	var last string
	for deadline := time.Now().Add(2*time.Minute + time.Duration(n)*100*time.Millisecond); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		owners := map[string]types.UID{}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			owners[o.GetName()] = o.GetUID()
		}
		var cms corev1.ConfigMapList
		var roles rbacv1.ClusterRoleList
		if err := c.List(ctx, &cms, client.InNamespace(ns), client.HasLabels{ir.LabelOwnerUID}); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &roles, client.HasLabels{ir.LabelOwnerUID}); err != nil {
			t.Fatal(err)
		}
		out := map[string]types.UID{}
		last = ""
		for _, cm := range cms.Items {
			if cm.Labels[ir.LabelOwnerUID] != string(owners[cm.Name]) || cm.Labels[ir.LabelBlueprint] != blueprint {
				last = fmt.Sprintf("ConfigMap %s carries %v", cm.Name, cm.Labels)
			}
			out["ConfigMap "+cm.Name] = cm.UID
		}
		for _, r := range roles.Items {
			name, ok := strings.CutPrefix(r.Name, ns+"-")
			if !ok {
				continue
			}
			if r.Labels[ir.LabelOwnerUID] != string(owners[name]) || r.Labels[ir.LabelBlueprint] != blueprint {
				last = fmt.Sprintf("ClusterRole %s carries %v", r.Name, r.Labels)
			}
			out["ClusterRole "+name] = r.UID
		}
		if last == "" && len(owners) == n && len(out) == 2*n {
			return out
		}
		if last == "" {
			last = fmt.Sprintf("%d %ss, %d children", len(owners), gvk.Kind, len(out))
		}
	}
	t.Fatalf("the children are not the %ss': %s", gvk.Kind, last)
	return nil
}

// TestClusterKindKill9 kills inrun migrate apply of a kind move with
// SIGKILL twice, as soon as it reports progress, then runs it to the end;
// then kills inrun rollback once and runs it to the end. Every Site moves
// and comes back, and no child's UID changes.
func TestClusterKindKill9(t *testing.T) {
	const n = 30
	ctx := t.Context()
	f := newKindFixture(t, "")
	c, ns, snapNS, cl := f.c, f.ns, f.snapNS, f.cl
	for i := range n {
		f.createSite(t, fmt.Sprintf("site-%02d", i), map[string]string{"tier": "web"}, map[string]any{"image": "nginx", "replicas": int64(1)})
	}
	before := siteChildren(t, c, ns, siteKind, "site", n)
	bin := filepath.Join(t.TempDir(), "inrun")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/inrun").CombinedOutput(); err != nil {
		t.Fatalf("building inrun: %v\n%s", err, out)
	}
	flags := []string{"-f", "testdata/kind/site.yaml", "--kubeconfig", cl.KubeconfigPath(), "--snapshot-namespace", snapNS, "-n", ns, "--workers", "2"}
	count := func(gvk schema.GroupVersionKind) int {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	kill := func(what string, args []string, rounds int) {
		for round := range rounds {
			cmd := exec.Command(bin, args...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(stderr).ReadString('\n')
			_ = cmd.Process.Signal(syscall.SIGKILL)
			err = cmd.Wait()
			t.Logf("%s, round %d: killed after %q (%v); %d Sites, %d WebApps", what, round, strings.TrimSpace(line), err, count(siteKind), count(webAppKind))
			if !strings.Contains(line, "objects") {
				t.Fatalf("%s, round %d: inrun said %q before it was killed", what, round, line)
			}
		}
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("inrun %s after the kills: %v\n%s", what, err, out)
		}
	}
	out, err := exec.Command(bin, append([]string{"migrate", "plan"}, flags...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d Site objects, %d selected: %d to move", n, n, n)) || !strings.Contains(string(out), fmt.Sprintf("%d children to re-parent", 2*n)) {
		t.Fatalf("inrun migrate plan: %v\n%s", err, out)
	}
	kill("migrate apply", append([]string{"migrate", "apply"}, flags...), 2)
	if s, w := count(siteKind), count(webAppKind); s != 0 || w != n {
		t.Errorf("after the move: %d Sites, %d WebApps", s, w)
	}
	if after := siteChildren(t, c, ns, webAppKind, "webapp", n); !mapsEqual(after, before) {
		t.Errorf("child UIDs changed by the move")
	}
	kill("rollback", append([]string{"rollback"}, flags...), 1)
	if s, w := count(siteKind), count(webAppKind); s != n || w != 0 {
		t.Errorf("after the rollback: %d Sites, %d WebApps", s, w)
	}
	if back := siteChildren(t, c, ns, siteKind, "site", n); !mapsEqual(back, before) {
		t.Errorf("child UIDs changed by the rollback")
	}
}

// TestClusterKindClean ends a kind move with clean on the real local
// control plane, the runtime reconciling both kinds: clean refuses,
// writing nothing, before the apply and while a move is begun and not
// finished; then it deletes the snapshots and the ledger, and keeps the
// old kind's CRD while a Site the selection does not pick is left; once
// that one is deleted, it deletes the CRD, and the WebApps and their
// children stay as they are.
func TestClusterKindClean(t *testing.T) {
	ctx := t.Context()
	// The Sites in a group of their own: clean deletes their CRD.
	f := newKindFixture(t, "kindclean.migrate.inrun.dev")
	c, ns, k := f.c, f.ns, f.k
	crdName := "sites." + f.siteKind.Group
	web := map[string]string{"tier": "web"}
	for _, n := range []string{"a", "b"} {
		f.createSite(t, n, web, map[string]any{"image": "nginx:" + n, "replicas": int64(1)})
	}
	f.createSite(t, "db", map[string]string{"tier": "db"}, map[string]any{"image": "nginx:db", "replicas": int64(1)})
	before := siteChildren(t, c, ns, f.siteKind, "site", 3)

	opts := migrate.Options{Client: c, Namespace: f.snapNS}
	cleanOpts := migrate.CleanOptions{Options: opts, CRDManager: reconciler.ManagedBy}
	snapshots := func() int {
		var secs corev1.SecretList
		var cms corev1.ConfigMapList
		if err := c.List(ctx, &secs, client.InNamespace(f.snapNS), client.MatchingLabels{migrate.LabelID: k.ID}); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &cms, client.InNamespace(f.snapNS), client.MatchingLabels{migrate.LabelID: k.ID}); err != nil {
			t.Fatal(err)
		}
		return len(secs.Items) + len(cms.Items)
	}
	crdVersion := func() string {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: crdName}, &crd); err != nil {
			t.Fatal(err)
		}
		return crd.ResourceVersion
	}

	// inrun clean, on the Blueprint in its group of its own.
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/kind/webapp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "webapp.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if src, err = os.ReadFile("testdata/kind/site.yaml"); err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), "group: "+siteKind.Group, "group: "+f.siteKind.Group, 1))
	if err := os.WriteFile(filepath.Join(dir, "site.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "inrun")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/inrun").CombinedOutput(); err != nil {
		t.Fatalf("building inrun: %v\n%s", err, out)
	}
	inrunClean := func() (string, error) {
		out, err := exec.Command(bin, "clean", "-f", filepath.Join(dir, "site.yaml"), "--kubeconfig", f.cl.KubeconfigPath(), "--snapshot-namespace", f.snapNS).CombinedOutput()
		return string(out), err
	}

	// Nothing moved yet: refused, naming both selected Sites.
	out, err := inrunClean()
	if err == nil || !strings.Contains(out, "clean refused: not every object is migrated (2 of 3 objects); nothing was written") ||
		!strings.Contains(out, ns+"/a: selected and not moved yet") || !strings.Contains(out, ns+"/b: selected and not moved yet") || strings.Contains(out, ns+"/db") {
		t.Fatalf("inrun clean before apply: %v\n%s", err, out)
	}
	if _, res, err := k.Apply(ctx, opts); err != nil || len(res.Failed) > 0 || res.Moved != 2 {
		t.Fatalf("apply: %v %+v", err, res)
	}

	// A Site made since, whose move is begun (snapshot, ledger entry,
	// marker) and interrupted.
	late := f.createSite(t, "late", web, map[string]any{"image": "nginx:late", "replicas": int64(2)})
	f.waitOwned(t, late)
	w := &kindWrites{}
	for limit := 1; ; limit++ {
		if limit > 10 {
			t.Fatal("no interrupted apply marked Site late")
		}
		actx, cancel := context.WithCancel(ctx)
		o := opts
		o.Client = w.client(c, limit, cancel)
		_, _, err := k.Apply(actx, o)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("apply interrupted after %d writes: %v", limit, err)
		}
		if u, err := f.get(ctx, f.siteKind, "late"); err == nil && u.GetAnnotations()[migrate.AnnotationID] == k.ID {
			break
		}
	}
	stored, rv := snapshots(), crdVersion()
	_, err = k.Clean(ctx, cleanOpts)
	if !errors.Is(err, migrate.ErrNotMigrated) || !strings.Contains(err.Error(), "(1 of 4 objects)") || !strings.Contains(err.Error(), ns+"/late: its move was begun and not finished") {
		t.Fatalf("clean with a move begun: %v", err)
	}
	if snapshots() != stored || crdVersion() != rv {
		t.Fatalf("the refused clean wrote: %d → %d snapshots and ledger ConfigMaps, CRD resourceVersion %s → %s", stored, snapshots(), rv, crdVersion())
	}
	if _, res, err := k.Apply(ctx, opts); err != nil || len(res.Failed) > 0 || res.Moved != 1 {
		t.Fatalf("apply again: %v %+v", err, res)
	}

	// Site db, not selected, is left: the snapshots and the ledger go,
	// the CRD stays, and so does db.
	stored = snapshots()
	res, err := k.Clean(ctx, cleanOpts)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	t.Logf("clean: %+v", res)
	if res.Moved != 3 || strings.Join(res.Remaining, ",") != ns+"/db" || res.Deleted != stored || res.CRDDeleted || !strings.Contains(res.CRDLeft, "CRD "+crdName+" stays: 1 Site objects are left") {
		t.Errorf("clean with Site db left: %+v (%d snapshots and ledger ConfigMaps before)", res, stored)
	}
	if n := snapshots(); n != 0 {
		t.Errorf("%d snapshots and ledger ConfigMaps left after clean", n)
	}
	crdVersion() // still there
	db, err := f.get(ctx, f.siteKind, "db")
	if err != nil {
		t.Fatalf("Site db after clean: %v", err)
	}

	// A child of db that garbage collection has not deleted yet (a
	// finalizer holds it): it keeps the CRD, since once the kind is gone
	// garbage collection could not delete it.
	straggler := &corev1.ConfigMap{}
	straggler.Namespace, straggler.Name = ns, "straggler"
	straggler.Labels = map[string]string{ir.LabelBlueprint: "site"}
	straggler.Finalizers = []string{"test.inrun.dev/hold"}
	straggler.OwnerReferences = []metav1.OwnerReference{{APIVersion: f.siteKind.GroupVersion().String(), Kind: "Site", Name: "db", UID: db.GetUID()}}
	if err := c.Create(ctx, straggler); err != nil {
		t.Fatal(err)
	}

	// db deleted, clean again: no ledger, and the CRD goes.
	if err := c.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := f.get(ctx, f.siteKind, "db"); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Site db is not gone")
		}
	}
	// Its ConfigMap, which garbage collection deletes, is gone too.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &corev1.ConfigMap{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Site db's ConfigMap is not garbage-collected")
		}
	}
	res, err = k.Clean(ctx, cleanOpts)
	if err != nil || !res.NoLedger || res.CRDDeleted || !strings.Contains(res.CRDLeft, "1 children of Site objects deleted since are not garbage-collected yet (ConfigMap "+ns+"/straggler)") {
		t.Fatalf("clean with a child left: %v %+v", err, res)
	}
	crdVersion() // still there
	if err := c.Get(ctx, client.ObjectKeyFromObject(straggler), straggler); err != nil {
		t.Fatal(err)
	}
	straggler.Finalizers = nil
	if err := c.Update(ctx, straggler); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, straggler); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(straggler), &corev1.ConfigMap{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the straggler ConfigMap is not gone")
		}
	}
	res, err = k.Clean(ctx, cleanOpts)
	if err != nil || !res.NoLedger || !res.CRDDeleted || len(res.Remaining) > 0 {
		t.Fatalf("clean once db is gone: %v %+v", err, res)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: crdName}, &crd); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s is not gone", crdName)
		}
	}
	// The WebApps and the children they took over stay as they were.
	after := siteChildren(t, c, ns, webAppKind, "webapp", 3)
	for key, uid := range before {
		if strings.HasSuffix(key, " db") {
			continue
		}
		if after[key] != uid {
			t.Errorf("%s: UID %s after clean, %s before the move", key, after[key], uid)
		}
	}
	// Again: nothing left to do.
	res, err = k.Clean(ctx, cleanOpts)
	if err != nil || !res.CRDGone || res.CRDDeleted || !res.NoLedger {
		t.Errorf("clean again: %v %+v", err, res)
	}
	if out, err := inrunClean(); err != nil || !strings.Contains(out, "CRD "+crdName+" is gone already.") || !strings.Contains(out, "Verified: 3 WebApp objects made by the move") {
		t.Errorf("inrun clean again: %v\n%s", err, out)
	}
}
