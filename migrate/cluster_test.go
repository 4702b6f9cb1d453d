package migrate_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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

// clusterObjects is how many custom resources the cluster test moves: 50,
// or $INRUN_MIGRATE_OBJECTS (make migrate-scale runs 1,000).
func clusterObjects(t testing.TB) int {
	v := os.Getenv("INRUN_MIGRATE_OBJECTS")
	if v == "" {
		return 50
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 10 {
		t.Fatalf("INRUN_MIGRATE_OBJECTS=%q: want a number of at least 10", v)
	}
	return n
}

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
// the apply at several points and resuming it; then edits 1% of them (at
// least five) and rolls back.
func TestClusterApplyResumeRollback(t *testing.T) {
	clusterApps := clusterObjects(t)
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
	startRuntime(t, cfg, ns, bp)

	names := make([]string, clusterApps)
	for i := range clusterApps {
		names[i] = fmt.Sprintf("app-%04d", i)
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
		for deadline := time.Now().Add(60*time.Second + time.Duration(clusterApps)*100*time.Millisecond); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
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

	opts := migrate.Options{Client: c, Namespace: snapNS, Only: ns, Workers: 4}
	p, err := m.Plan(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.ToMove != clusterApps || p.Refused() {
		t.Fatalf("plan: %d to move, refused %v", p.ToMove, p.Refused())
	}

	// Interrupt the apply three times: after 5 writes (while it saves
	// snapshots), then after a quarter of the objects are moved, twice;
	// each cancels the context in the middle of a batch's steps, in-flight
	// requests included.
	w := &writes{}
	for _, limit := range []struct{ writes, moves int }{{5, 0}, {0, clusterApps / 4}, {0, clusterApps / 4}} {
		actx, cancel := context.WithCancel(ctx)
		o := opts
		o.Client = counting(c, w, limit.writes, cancel)
		if limit.moves > 0 {
			o.Client = countingMoves(c, limit.moves, cancel)
		}
		_, res, err := m.Apply(actx, o)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("apply interrupted after %+v: %v (result %+v)", limit, err, res)
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

	// Edit 1% of the Apps' repository (at least five) after the migration.
	edited := map[string]bool{}
	step := clusterApps / max(5, clusterApps/100)
	for i := 3; i < clusterApps; i += step {
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

// countingMoves cancels after limit objects of the kind are updated.
func countingMoves(c client.WithWatch, limit int, cancel context.CancelFunc) client.WithWatch {
	var mu sync.Mutex
	count := 0
	return interceptor.NewClient(c, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			err := c.Update(ctx, obj, opts...)
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "App" && err == nil {
				mu.Lock()
				if count++; count == limit {
					cancel()
				}
				mu.Unlock()
			}
			return err
		},
	})
}

func runtimeCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// BenchmarkClusterMigrate measures the objects Apply moves per second
// beside the API server's rate for a plain update (a read, then an update
// adding an annotation) of the same number of objects in the same shape,
// with as many workers, in the same run: read the ratio. It moves 50
// objects per iteration, or $INRUN_MIGRATE_OBJECTS (make migrate-bench).
func BenchmarkClusterMigrate(b *testing.B) {
	n := clusterObjects(b)
	cl := clustertest.Shared(b)
	cfg := cl.RESTConfig()
	ctx := context.Background()
	bp, err := compiler.CompileFile("testdata/blueprint.yaml", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{bp}); err != nil {
		b.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	m, err := migrate.FromBlueprint(bp)
	if err != nil {
		b.Fatal(err)
	}
	const workers = 4
	// each runs f over 0..n-1 with the workers.
	each := func(f func(i int) error) {
		idx := make(chan int)
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range idx {
					if err := f(i); err != nil {
						errs <- err
					}
				}
			}()
		}
		for i := range n {
			idx <- i
		}
		close(idx)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	var plain, moved time.Duration
	snapNS := clustertest.NewNamespace(b, cl)
	for b.Loop() {
		b.StopTimer()
		var nss [2]string
		for k := range nss {
			nss[k] = clustertest.NewNamespace(b, cl)
			each(func(i int) error {
				// The first namespace's objects, for the plain updates, are
				// already in the new shape: Apply leaves them.
				spec := map[string]any{"repo": fmt.Sprintf("org/repo-%d", i), "size": int64(i % 5)}
				if k == 0 {
					spec = map[string]any{"repository": fmt.Sprintf("org/repo-%d", i), "replicas": int64(i % 5)}
				}
				u := app(fmt.Sprintf("app-%05d", i), spec)
				u.SetNamespace(nss[k])
				u.SetUID("")
				return c.Create(ctx, u)
			})
		}
		b.StartTimer()
		start := time.Now()
		each(func(i int) error {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(m.Kind)
			if err := c.Get(ctx, client.ObjectKey{Namespace: nss[0], Name: fmt.Sprintf("app-%05d", i)}, u); err != nil {
				return err
			}
			u.SetAnnotations(map[string]string{"bench.inrun.dev/touched": "true"})
			return c.Update(ctx, u)
		})
		plain += time.Since(start)
		start = time.Now()
		_, res, err := m.Apply(ctx, migrate.Options{Client: c, Namespace: snapNS, Only: nss[1], Workers: workers, Samples: -1})
		moved += time.Since(start)
		if err != nil || len(res.Failed) > 0 || res.Moved != n {
			b.Fatalf("apply: %v, %+v", err, res)
		}
	}
	b.StopTimer()
	plainRate := float64(n*b.N) / plain.Seconds()
	movedRate := float64(n*b.N) / moved.Seconds()
	b.ReportMetric(movedRate, "moved/s")
	b.ReportMetric(plainRate, "updates/s")
	b.ReportMetric(movedRate/plainRate, "moved/update")
}

// TestClusterKill9 kills inrun migrate apply with SIGKILL twice, as soon as
// it reports progress, then runs it to the end: every object ends moved
// exactly once.
func TestClusterKill9(t *testing.T) {
	const n = 60
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
	c, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.FromBlueprint(bp)
	if err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, cl)
	snapNS := clustertest.NewNamespace(t, cl)
	before := map[string]string{}
	for i := range n {
		u := app(fmt.Sprintf("app-%02d", i), map[string]any{"repo": fmt.Sprintf("org/repo-%d", i), "size": int64(i)})
		u.SetNamespace(ns)
		u.SetUID("")
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		before[u.GetName()] = projection(u)
	}
	bin := filepath.Join(t.TempDir(), "inrun")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/inrun").CombinedOutput(); err != nil {
		t.Fatalf("building inrun: %v\n%s", err, out)
	}
	args := []string{"migrate", "apply", "-f", "testdata/blueprint.yaml", "--kubeconfig", cl.KubeconfigPath(),
		"--snapshot-namespace", snapNS, "-n", ns, "--workers", "2"}
	moved := func() int {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(m.Kind.GroupVersion().WithKind("AppList"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, u := range list.Items {
			if u.GetAnnotations()[migrate.AnnotationID] == m.ID {
				k++
			}
		}
		return k
	}
	for round := range 2 {
		if round > 0 && moved() == n {
			// On a busy machine the first kill can come after the
			// last object: nothing is left to interrupt.
			t.Logf("round %d: every object moved before the kill; nothing left to interrupt", round)
			break
		}
		cmd := exec.Command(bin, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The first progress line comes after the first object.
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		t.Logf("round %d: killed after %q (%v); %d of %d moved", round, strings.TrimSpace(line), err, moved(), n)
		if !strings.Contains(line, "objects moved") {
			t.Fatalf("round %d: inrun migrate apply said %q before it was killed", round, line)
		}
	}
	if k := moved(); k == 0 || k == n {
		t.Logf("the kills fell at the edges: %d of %d moved", k, n)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("inrun migrate apply after the kills: %v\n%s", err, out)
	}
	for i := range n {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(m.Kind)
		name := fmt.Sprintf("app-%02d", i)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			t.Fatal(err)
		}
		if u.GetAnnotations()[migrate.AnnotationID] != m.ID || u.GetGeneration() != 2 || projection(u) != before[name] {
			t.Errorf("%s: marker %q, generation %d (want 2: moved once), spec %v", name, u.GetAnnotations()[migrate.AnnotationID], u.GetGeneration(), u.Object["spec"])
		}
		if _, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "repo"); ok {
			t.Errorf("%s still holds spec.repo", name)
		}
	}
	// Every moved object's snapshot verifies: a rollback restores all.
	_, rb, err := migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: migrate.Options{Client: c, Namespace: snapNS, Only: ns}})
	if err != nil || rb.Restored != n || len(rb.Drift) != 0 {
		t.Fatalf("rollback: %v %+v", err, rb)
	}
}
