package migrate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// The cluster test runs a migration on the real local control plane, with
// garbage collection on and the interpreted runtime reconciling the custom
// resources throughout.

func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
}

const clusterApps = 50

// projection is what a move must keep: each served field's value, wherever
// the object stores it.
func projection(obj *unstructured.Unstructured) string {
	first := func(paths ...string) any {
		for _, p := range paths {
			if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(p, ".")...); ok && v != nil {
				return v
			}
		}
		return nil
	}
	data, _ := json.Marshal([]any{first("spec.repository", "spec.repo", "spec.source.url"), first("spec.replicas", "spec.size"), first("spec.owner")})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// TestClusterApplyResumeRollback moves 50 custom resources, interrupting
// the apply at several points and resuming it; then edits five and rolls
// back.
func TestClusterApplyResumeRollback(t *testing.T) {
	cl := clustertest.Shared(t)
	cfg := cl.RESTConfig()
	ctx := t.Context()
	bp, err := compiler.CompileFile("testdata/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, cl)
	snapNS := clustertest.NewNamespace(t, cl)
	m, err := migrate.FromBlueprint(bp)
	if err != nil {
		t.Fatal(err)
	}

	// The runtime reconciles the Apps all along: each becomes a ConfigMap
	// that names its repository, wherever the App stores it.
	rctx, stopRuntime := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(rctx, runner.Options{Config: cfg, Blueprints: []*ir.Blueprint{bp}, Namespaces: []string{ns},
			MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true, Log: zap.New(zap.WriteTo(io.Discard))})
	}()
	t.Cleanup(func() {
		stopRuntime()
		if err := <-done; err != nil {
			t.Errorf("runtime: %v", err)
		}
	})

	names := make([]string, clusterApps)
	for i := range clusterApps {
		names[i] = fmt.Sprintf("app-%02d", i)
		spec := map[string]any{"owner": "team-" + fmt.Sprint(i%4)}
		switch i % 3 {
		case 0:
			spec["repo"] = fmt.Sprintf("org/repo-%d", i)
		case 1:
			spec["source"] = map[string]any{"url": fmt.Sprintf("org/url-%d", i)}
		case 2:
			spec["repo"] = fmt.Sprintf("org/repo-%d", i)
			spec["size"] = int64(i % 5)
		}
		u := app(names[i], spec)
		u.SetNamespace(ns)
		u.SetUID("")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	getNS := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(m.Kind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	// children waits until every App's ConfigMap says its repository,
	// and returns their UIDs.
	children := func() map[string]types.UID {
		t.Helper()
		var last string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			uids := map[string]types.UID{}
			last = ""
			for _, n := range names {
				var cm corev1.ConfigMap
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &cm); err != nil {
					last = fmt.Sprintf("ConfigMap %s: %v", n, err)
					break
				}
				obj := getNS(n)
				want, _, _ := unstructured.NestedString(obj.Object, "spec", "repository")
				if want == "" {
					want, _, _ = unstructured.NestedString(obj.Object, "spec", "repo")
				}
				if want == "" {
					want, _, _ = unstructured.NestedString(obj.Object, "spec", "source", "url")
				}
				if cm.Data["repository"] != want {
					last = fmt.Sprintf("ConfigMap %s says %q, want %q", n, cm.Data["repository"], want)
					break
				}
				uids[n] = cm.UID
			}
			if last == "" {
				return uids
			}
		}
		t.Fatalf("the runtime did not reconcile every App: %s", last)
		return nil
	}
	childUIDs := children()
	before := map[string]*unstructured.Unstructured{}
	for _, n := range names {
		before[n] = getNS(n)
	}

	opts := migrate.Options{Client: c, Namespace: snapNS, Workers: 4}
	p, err := m.Plan(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.ToMove != clusterApps || p.Refused() {
		t.Fatalf("plan: %d to move, refused %v", p.ToMove, p.Refused())
	}

	// Interrupt the apply after 5, 40 and 90 writes (of about 3 per
	// object): each cancels the context in the middle of an object's
	// steps, in-flight requests included.
	w := &writes{}
	for _, limit := range []int{5, 40, 90} {
		actx, cancel := context.WithCancel(ctx)
		o := opts
		o.Client = counting(c, w, limit, cancel)
		_, res, err := m.Apply(actx, o)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("apply interrupted after %d writes: %v (result %+v)", limit, err, res)
		}
	}
	p, res, err := m.Apply(ctx, opts)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("resumed apply: %v %v", err, res)
	}
	if p.Migrated+p.ToMove != clusterApps || p.Migrated == 0 || p.ToMove == 0 {
		t.Errorf("resumed plan: %d moved before, %d to move", p.Migrated, p.ToMove)
	}

	for _, n := range names {
		obj := getNS(n)
		if obj.GetAnnotations()[migrate.AnnotationID] != m.ID {
			t.Errorf("%s is not marked", n)
		}
		// The API server bumps generation once per spec change: 1 at
		// creation, 2 after exactly one move.
		if g := obj.GetGeneration(); g != 2 {
			t.Errorf("%s: generation %d, want 2 (moved exactly once)", n, g)
		}
		for _, old := range []string{"repo", "size", "source"} {
			if _, ok := obj.Object["spec"].(map[string]any)[old]; ok {
				t.Errorf("%s still holds spec.%s", n, old)
			}
		}
		if projection(obj) != projection(before[n]) {
			t.Errorf("%s: moved values differ: %v, before %v", n, obj.Object["spec"], before[n].Object["spec"])
		}
	}
	if got := children(); !mapsEqual(got, childUIDs) {
		t.Errorf("child UIDs changed by the migration")
	}

	// Edit five Apps' repository after the migration.
	edited := map[string]bool{}
	for _, i := range []int{3, 11, 22, 37, 48} {
		obj := getNS(names[i])
		_ = unstructured.SetNestedField(obj.Object, "org/edited-"+fmt.Sprint(i), "spec", "repository")
		if err := c.Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
		edited[objectName(ns, names[i])] = true
	}
	_, rb, err := migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range rb.Drift {
		if d.Field != "spec.repository" || d.Before != "(absent)" || !strings.HasPrefix(d.Live, `"org/edited-`) || d.Forced {
			t.Errorf("drift %+v", d)
		}
		got[d.Object] = true
	}
	if !mapsEqual(got, edited) || len(rb.Drift) != len(edited) {
		t.Errorf("drift on %v, want exactly %v", got, edited)
	}
	if rb.Restored != clusterApps || len(rb.Failed) > 0 || len(rb.Gone) > 0 {
		t.Errorf("rollback: %+v", rb)
	}
	for i, n := range names {
		obj := getNS(n)
		want := before[n].Object["spec"].(map[string]any)
		if edited[objectName(ns, n)] {
			// The old paths are back; the edit is not overwritten.
			if r, _, _ := unstructured.NestedString(obj.Object, "spec", "repository"); r != "org/edited-"+fmt.Sprint(i) {
				t.Errorf("%s: the edited repository was overwritten: %q", n, r)
			}
			want = runtimeCopy(want)
			want["repository"] = "org/edited-" + fmt.Sprint(i)
		}
		if !equalJSON(want, obj.Object["spec"]) {
			t.Errorf("%s after rollback: %v, want %v", n, obj.Object["spec"], want)
		}
		if _, ok := obj.GetAnnotations()[migrate.AnnotationID]; ok {
			t.Errorf("%s still carries the marker", n)
		}
	}
	if got := children(); !mapsEqual(got, childUIDs) {
		t.Errorf("child UIDs changed by the rollback")
	}

	// A snapshot changed after the fact: rollback refuses and names it.
	var sec corev1.Secret
	key := client.ObjectKey{Namespace: snapNS, Name: migrate.SnapshotName(m.ID, string(before[names[7]].GetUID()), 0)}
	if err := c.Get(ctx, key, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["object"] = append(sec.Data["object"], ' ')
	if err := c.Update(ctx, &sec); err != nil {
		t.Fatal(err)
	}
	if _, _, err := migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: opts}); !errors.Is(err, migrate.ErrTampered) || !strings.Contains(err.Error(), objectName(ns, names[7])+": snapshot "+key.String()) {
		t.Errorf("rollback with a tampered snapshot: %v", err)
	}
}

func objectName(ns, name string) string { return ns + "/" + name }

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func runtimeCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
