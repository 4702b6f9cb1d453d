package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/sdk"
)

var (
	shardN        = flag.Int("shard-n", 2000, "custom resources in BenchmarkShards")
	shardReplicas = flag.String("shard-replicas", "1,2,4", "replica counts BenchmarkShards runs, the first the baseline")
	// shardSelection "server" turns the API server's sharded list and
	// watch (KEP-5866) on, so that no bucket label is written.
	shardSelection = flag.String("shard-selection", "labels", "--shard-selection of the replicas in BenchmarkShards: labels or server")
)

var shardTaskGVK = schema.GroupVersionKind{Group: "bench.inrun.dev", Version: "v1", Kind: "ShardTask"}

// slowReconciler is a remote reconciler whose 50ms a call dominates a
// reconcile. Each replica calls its own path, so that its calls are
// counted apart; calls in flight at once for one custom resource are
// recorded, as the sharding promises there is never more than one.
type slowReconciler struct {
	latency time.Duration

	mu          sync.Mutex
	calls       map[string]int
	inflight    map[string]int
	maxInflight int
}

func (s *slowReconciler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := sdk.DecodeRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := (&unstructured.Unstructured{Object: req.Object}).GetName()
	s.mu.Lock()
	s.calls[strings.TrimPrefix(r.URL.Path, "/")]++
	s.inflight[name]++
	s.maxInflight = max(s.maxInflight, s.inflight[name])
	s.mu.Unlock()
	time.Sleep(s.latency)
	s.mu.Lock()
	s.inflight[name]--
	s.mu.Unlock()
	reply := map[string]any{"apiVersion": sdk.APIVersion, "kind": sdk.KindResult}
	if req.Finalizing {
		reply["done"] = true
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// take returns the calls by replica since the last take.
func (s *slowReconciler) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.calls
	s.calls = map[string]int{}
	return out
}

// shardBench is a Minimal control plane with n ShardTasks, an inrun
// binary, and the reconciler they call.
type shardBench struct {
	tb    testing.TB
	cfg   *rest.Config
	kube  string
	c     client.Client
	bin   string
	dir   string
	url   string
	rec   *slowReconciler
	ns    string
	names []string
	round int
}

func newShardBench(tb testing.TB, n int) *shardBench {
	tb.Helper()
	opts := localcluster.Options{Mode: localcluster.Minimal}
	if *shardSelection != "labels" {
		opts.FeatureGates = map[string]bool{"ShardedListAndWatch": true}
	}
	lc := clustertest.Start(tb, opts)
	cfg := rest.CopyConfig(lc.RESTConfig())
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	bin := filepath.Join(dir, "inrun")
	build := exec.Command("go", "build", "-o", bin, "github.com/inrun/inrun/cmd/inrun")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("building inrun: %v\n%s", err, out)
	}
	rec := &slowReconciler{latency: 50 * time.Millisecond, calls: map[string]int{}, inflight: map[string]int{}}
	srv := httptest.NewServer(rec)
	tb.Cleanup(srv.Close)
	bp, err := compiler.CompileFile("testdata/shard/blueprint.yaml", compiler.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{bp}); err != nil {
		tb.Fatal(err)
	}
	b := &shardBench{tb: tb, cfg: cfg, kube: lc.KubeconfigPath(), c: c, bin: bin, dir: dir, url: srv.URL, rec: rec, ns: "shard-bench"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}}); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		b.names = append(b.names, fmt.Sprintf("task-%05d", i))
	}
	b.each(func(name string) error {
		t := &unstructured.Unstructured{}
		t.SetGroupVersionKind(shardTaskGVK)
		t.SetNamespace(b.ns)
		t.SetName(name)
		t.Object["spec"] = map[string]any{"note": "new"}
		return c.Create(ctx, t)
	})
	return b
}

// each runs fn on every ShardTask, 16 at once.
func (b *shardBench) each(fn func(name string) error) {
	b.tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(b.names))
	next := make(chan string)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				if err := fn(name); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, n := range b.names {
		next <- n
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.tb.Fatal(err)
	}
}

// shardRound is what one replica count measured.
type shardRound struct {
	replicas int
	toReady  time.Duration
	// peakRSS is each replica's peak resident memory, in bytes.
	peakRSS []int64
	// calls are the reconciler calls each replica made.
	calls map[string]int
	// heap is each replica's Go heap in use once every ShardTask is
	// Ready, in bytes: mostly its caches.
	heap []float64
	// cached is each replica's cached ShardTasks then
	// (inrun_shard_cached_objects).
	cached []float64
}

func mean(v []float64) float64 {
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

func (r shardRound) meanRSS() float64 {
	var sum int64
	for _, v := range r.peakRSS {
		sum += v
	}
	return float64(sum) / float64(len(r.peakRSS))
}

// run edits every ShardTask, so that each needs a reconcile, then starts k
// replicas of inrun run --shards at once and measures the time until every
// ShardTask is Ready for its new generation, and each replica's peak RSS.
func (b *shardBench) run(k int) shardRound {
	b.tb.Helper()
	ctx := context.Background()
	b.round++
	note := fmt.Sprintf("round-%d", b.round)
	b.each(func(name string) error {
		t := &unstructured.Unstructured{}
		t.SetGroupVersionKind(shardTaskGVK)
		t.SetNamespace(b.ns)
		t.SetName(name)
		raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"note": note}})
		return b.c.Patch(ctx, t, client.RawPatch("application/merge-patch+json", raw))
	})
	b.rec.take()
	start := time.Now()
	var procs []*exec.Cmd
	var metrics []string
	for i := 0; i < k; i++ {
		p, addr := b.start(fmt.Sprintf("r%d", i))
		procs = append(procs, p)
		metrics = append(metrics, addr)
	}
	defer func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = p.Process.Kill()
				<-done
			}
		}
	}()
	deadline := start.Add(10*time.Minute + time.Duration(len(b.names))*100*time.Millisecond)
	for {
		ready, err := b.ready(ctx)
		if err != nil {
			b.tb.Fatal(err)
		}
		if ready == len(b.names) {
			break
		}
		if time.Now().After(deadline) {
			b.tb.Fatalf("%d replicas: %d of %d ShardTasks Ready after %s", k, ready, len(b.names), time.Since(start))
		}
		for _, p := range procs {
			if p.ProcessState != nil {
				b.tb.Fatalf("a replica exited: %v", p.ProcessState)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	r := shardRound{replicas: k, toReady: time.Since(start), calls: b.rec.take()}
	for i, p := range procs {
		rss, err := peakRSS(p.Process.Pid)
		if err != nil {
			b.tb.Fatal(err)
		}
		r.peakRSS = append(r.peakRSS, rss)
		m, err := clustertest.Metrics(ctx, metrics[i])
		if err != nil {
			b.tb.Fatal(err)
		}
		r.heap = append(r.heap, m["go_memstats_heap_inuse_bytes"])
		r.cached = append(r.cached, m[`inrun_shard_cached_objects{kind="ShardTask.bench.inrun.dev",shard="r`+strconv.Itoa(i)+`"}`])
	}
	return r
}

// freeAddr is a local address no one listens on now.
func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs one replica, calling the reconciler at its own path, and
// returns it and the address of its metrics.
func (b *shardBench) start(id string) (*exec.Cmd, string) {
	b.tb.Helper()
	dir := filepath.Join(b.dir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.tb.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/shard/blueprint.yaml")
	if err != nil {
		b.tb.Fatal(err)
	}
	bp := strings.Replace(string(raw), "http://127.0.0.1:1/reconcile", b.url+"/"+id, 1)
	crd, err := os.ReadFile("testdata/shard/crd.yaml")
	if err != nil {
		b.tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blueprint.yaml"), []byte(bp), 0o644); err != nil {
		b.tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crd.yaml"), crd, 0o644); err != nil {
		b.tb.Fatal(err)
	}
	log, err := os.Create(filepath.Join(b.dir, fmt.Sprintf("%s-round%d.log", id, b.round)))
	if err != nil {
		b.tb.Fatal(err)
	}
	metrics := freeAddr(b.tb)
	cmd := exec.Command(b.bin, "run", filepath.Join(dir, "blueprint.yaml"), "--kubeconfig", b.kube,
		"--shards", "--shard-id", id, "--shard-selection", *shardSelection, "--leader-election-namespace", b.ns,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", "0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.tb.Fatal(err)
	}
	go func() { <-time.After(time.Hour); log.Close() }()
	return cmd, metrics
}

// ready counts the ShardTasks Ready for their generation.
func (b *shardBench) ready(ctx context.Context) (int, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(shardTaskGVK.GroupVersion().WithKind("ShardTaskList"))
	if err := b.c.List(ctx, list, client.InNamespace(b.ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, t := range list.Items {
		og, _, _ := unstructured.NestedInt64(t.Object, "status", "observedGeneration")
		if og != t.GetGeneration() {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(t.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
				n++
				break
			}
		}
	}
	return n, nil
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for process %d", pid)
}

func parseReplicas(tb testing.TB, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			tb.Fatalf("-shard-replicas %q: %q is not a replica count", s, f)
		}
		out = append(out, k)
	}
	return out
}

// BenchmarkShards runs 1, 2 and 4 replicas of inrun run --shards (by
// default; -shard-replicas) in turn on the same -shard-n ShardTasks, each
// reconciled by a remote reconciler that takes 50ms a call, and reports
// for each the time from starting the replicas to every ShardTask Ready
// and the mean peak RSS of a replica, and both as ratios to the first
// replica count, measured in the same run; and each replica's Go heap in
// use and cached ShardTasks once all are Ready, likewise.
func BenchmarkShards(b *testing.B) {
	ks := parseReplicas(b, *shardReplicas)
	sb := newShardBench(b, *shardN)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var base shardRound
		for j, k := range ks {
			r := sb.run(k)
			if j == 0 {
				base = r
			}
			tag := fmt.Sprintf("k%d-", k)
			b.ReportMetric(r.toReady.Seconds(), tag+"s-to-ready")
			b.ReportMetric(r.toReady.Seconds()/base.toReady.Seconds(), tag+"x-time")
			b.ReportMetric(r.meanRSS()/(1<<20), tag+"rss-MiB")
			b.ReportMetric(r.meanRSS()/base.meanRSS(), tag+"x-rss")
			b.ReportMetric(mean(r.heap)/(1<<20), tag+"heap-MiB")
			b.ReportMetric(mean(r.heap)/mean(base.heap), tag+"x-heap")
			b.ReportMetric(mean(r.cached), tag+"cached")
			b.ReportMetric(mean(r.cached)/mean(base.cached), tag+"x-cached")
			b.Logf("%d replicas, %d ShardTasks: all Ready in %s (×%.2f of %d), peak RSS per replica %.0f MiB (×%.2f), heap in use %.1f MiB (×%.2f), ShardTasks cached %v (×%.2f), calls by replica %v",
				k, *shardN, r.toReady.Round(10*time.Millisecond), r.toReady.Seconds()/base.toReady.Seconds(), base.replicas,
				r.meanRSS()/(1<<20), r.meanRSS()/base.meanRSS(), mean(r.heap)/(1<<20), mean(r.heap)/mean(base.heap),
				r.cached, mean(r.cached)/mean(base.cached), r.calls)
		}
	}
	sb.rec.mu.Lock()
	defer sb.rec.mu.Unlock()
	if sb.rec.maxInflight != 1 {
		b.Errorf("a ShardTask had %d reconciler calls in flight at once", sb.rec.maxInflight)
	}
}

// TestShardBenchmark runs BenchmarkShards' rounds on a few ShardTasks, so
// that make bench-shards keeps working, and checks what does not depend on
// the machine: every ShardTask becomes Ready, both replicas of two take a
// share of the calls, and no ShardTask is ever called twice at once.
func TestShardBenchmark(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	sb := newShardBench(t, 24)
	one := sb.run(1)
	two := sb.run(2)
	if len(one.calls) != 1 || one.calls["r0"] < 24 {
		t.Errorf("one replica: calls %v, want r0 alone with at least 24", one.calls)
	}
	if len(two.calls) != 2 || two.calls["r0"] == 0 || two.calls["r1"] == 0 {
		t.Errorf("two replicas: calls %v, want both to take a share", two.calls)
	}
	for _, r := range []shardRound{one, two} {
		if r.toReady <= 0 || len(r.peakRSS) != r.replicas || r.meanRSS() <= 0 || mean(r.heap) <= 0 {
			t.Errorf("%d replicas: %s to Ready, peak RSS %v, heap %v", r.replicas, r.toReady, r.peakRSS, r.heap)
		}
	}
	// Each replica caches only its buckets' ShardTasks: one caches all 24,
	// two share them without overlap.
	if len(one.cached) != 1 || one.cached[0] != 24 {
		t.Errorf("one replica caches %v ShardTasks, want 24", one.cached)
	}
	if len(two.cached) != 2 || two.cached[0]+two.cached[1] != 24 || two.cached[0] == 0 || two.cached[1] == 0 {
		t.Errorf("two replicas cache %v ShardTasks, want a share each, 24 in all", two.cached)
	}
	sb.rec.mu.Lock()
	defer sb.rec.mu.Unlock()
	if sb.rec.maxInflight != 1 {
		t.Errorf("a ShardTask had %d reconciler calls in flight at once", sb.rec.maxInflight)
	}
}
