package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// The gateway benchmark measures the intent gateway (package gateway) on a
// Minimal local control plane: requests per second and p50/p99 latency of
// a create (POST of an intent of the intent pack's app target, which the
// gateway validates, maps and applies as an App) and of a get-view (GET of
// one intent's view), each beside its baseline measured in the same run
// with the same client settings: a direct server-side apply of the very
// App the gateway would make, and a direct GET of it. The gateway's own
// overhead per request is the difference of the medians, and the ratio
// x-apply (x-get) the create's (get-view's) median over its baseline's.
//
// No runtime runs: what is measured is the gateway's work, not the
// reconcile. Run it with make bench-gateway, or
//
//	go test ./bench -run '^$' -bench '^BenchmarkGateway$' -benchtime 2000x -gateway-workers 4

var gatewayWorkers = flag.Int("gateway-workers", 4, "requests in flight at once in BenchmarkGateway")

// gatewayBench is a gateway in front of a local control plane, with a
// token, and a client to the API server for the baselines.
type gatewayBench struct {
	c      client.Client
	calls  *apiCalls
	target *gateway.Target
	srv    *httptest.Server
	http   *http.Client
	token  string
	caller string
}

// newGatewayBench starts a Minimal control plane for tb alone, installs the
// intent pack's App CRD and its staging namespace, and serves the app
// target with the rate limit off.
func newGatewayBench(tb testing.TB, workers int) *gatewayBench {
	tb.Helper()
	lc := clustertest.Start(tb, localcluster.Options{Mode: localcluster.Minimal})
	cfg := rest.CopyConfig(lc.RESTConfig())
	// No client-side rate limit, as controller-runtime's GetConfig and the
	// gateway tests have it: the API server sets the pace.
	cfg.QPS, cfg.Burst = -1, 0
	direct, err := client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		tb.Fatal(err)
	}
	calls := &apiCalls{}
	c := calls.wrap(direct)
	bp, err := compiler.CompileFile("../packs/intent/blueprint.yaml", compiler.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{bp}); err != nil {
		tb.Fatal(err)
	}
	for _, ns := range []string{"apps-staging", gateway.DefaultNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			tb.Fatal(err)
		}
	}
	gw, err := gateway.New(gateway.Options{Blueprints: []*ir.Blueprint{bp}, Client: c, RateLimit: -1, Audit: io.Discard})
	if err != nil {
		tb.Fatal(err)
	}
	tokens := &gateway.Tokens{Client: c, Namespace: gateway.DefaultNamespace}
	// Scope deploy may use staging only: a get-view reads one namespace.
	tok, _, err := tokens.Create(ctx, gateway.CreateOptions{Name: "bench", Scopes: []string{"deploy"}})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler())
	tb.Cleanup(srv.Close)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * workers, MaxIdleConnsPerHost: 2 * workers}}
	return &gatewayBench{c: c, calls: calls, target: gw.Targets()[0], srv: srv, http: hc, token: tok, caller: "bench"}
}

// apiCalls counts the calls to the API server of the gateway and the
// baselines, which share one client.
type apiCalls struct{ reads, writes atomic.Int64 }

func (a *apiCalls) wrap(c client.WithWatch) client.WithWatch {
	read := func() { a.reads.Add(1) }
	write := func() { a.writes.Add(1) }
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			read()
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			read()
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			write()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			write()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			write()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			write()
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			write()
			return c.Delete(ctx, obj, opts...)
		},
	})
}

// take returns the calls counted since the last take.
func (a *apiCalls) take() (reads, writes int64) {
	return a.reads.Swap(0), a.writes.Swap(0)
}

// latencies are the durations of one measurement's requests, and the
// wall time they took together.
type latencies struct {
	d    []time.Duration
	wall time.Duration
}

func (l *latencies) quantile(q float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func (l *latencies) perSecond() float64 {
	if l.wall <= 0 {
		return 0
	}
	return float64(len(l.d)) / l.wall.Seconds()
}

// measure runs op(i) for i in [0, n) on workers goroutines and returns
// each call's duration. The first error stops the measurement.
func measure(n, workers int, op func(i int) error) (*latencies, error) {
	out := &latencies{d: make([]time.Duration, n)}
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				err := op(i)
				out.d[i] = time.Since(t0)
				if err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	out.wall = time.Since(start)
	return out, first
}

// intent is the body of the i-th create of a run.
func intentBody(run string, i int) []byte {
	b, _ := json.Marshal(map[string]any{"repository": fmt.Sprintf("bench/%s-%d", run, i), "environment": "staging"})
	return b
}

// post sends an intent, optionally under an Idempotency-Key, and wants a
// 201.
func (g *gatewayBench) post(body []byte, key string) error {
	req, _ := http.NewRequest("POST", g.srv.URL+"/v1/targets/app/intents", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", strconv.Quote(key))
	}
	return g.send(req, http.StatusCreated)
}

// getView reads an intent's view and wants a 200.
func (g *gatewayBench) getView(name string) error {
	req, _ := http.NewRequest("GET", g.srv.URL+"/v1/targets/app/intents/"+name, nil)
	req.Header.Set("Authorization", "Bearer "+g.token)
	return g.send(req, http.StatusOK)
}

func (g *gatewayBench) send(req *http.Request, want int) error {
	resp, err := g.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, data)
	}
	return nil
}

// apply makes, with a direct server-side apply under the gateway's field
// manager, the App the gateway would make of the i-th intent of a run.
func (g *gatewayBench) apply(run string, i int) error {
	in, p := g.target.Validate(intentBody(run, i))
	if p != nil {
		return p
	}
	name, p := g.target.NameFrom(in)
	if p != nil {
		return p
	}
	obj := g.target.Map(in, name, g.caller)
	return g.c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(gateway.DefaultFieldManager), client.ForceOwnership)
}

// get reads an App directly.
func (g *gatewayBench) get(name string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(g.target.BP.Resource.GroupVersionKind)
	return g.c.Get(context.Background(), client.ObjectKey{Namespace: "apps-staging", Name: name}, u)
}

// count counts the Apps whose repository starts with bench/<run>-.
func (g *gatewayBench) count(run string) (int, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(g.target.BP.Resource.GroupVersionKind.GroupVersion().WithKind("AppList"))
	if err := g.c.List(context.Background(), l, client.InNamespace("apps-staging")); err != nil {
		return 0, err
	}
	n := 0
	prefix := "bench/" + run + "-"
	for _, it := range l.Items {
		repo, _, _ := unstructured.NestedString(it.Object, "spec", "repository")
		if len(repo) > len(prefix) && repo[:len(prefix)] == prefix {
			n++
		}
	}
	return n, nil
}

// gatewayOps are the measurements, in the order they run: each baseline
// before what it is the baseline of. run names a fresh set of intents per
// call, so that every create makes a new App.
func (g *gatewayBench) ops(existing string) []struct {
	name, baseline string
	op             func(run string) func(i int) error
} {
	return []struct {
		name, baseline string
		op             func(run string) func(i int) error
	}{
		{"direct-apply", "", func(run string) func(int) error {
			return func(i int) error { return g.apply(run, i) }
		}},
		{"create", "direct-apply", func(run string) func(int) error {
			return func(i int) error { return g.post(intentBody(run, i), "") }
		}},
		{"create-idempotent", "direct-apply", func(run string) func(int) error {
			return func(i int) error { return g.post(intentBody(run, i), run+"-"+strconv.Itoa(i)) }
		}},
		{"direct-get", "", func(string) func(int) error {
			return func(int) error { return g.get(existing) }
		}},
		{"get-view", "direct-get", func(string) func(int) error {
			return func(int) error { return g.getView(existing) }
		}},
	}
}

var gatewayRuns atomic.Int64

func nextRun(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().Unix()%100000, gatewayRuns.Add(1))
}

// BenchmarkGateway: see the comment at the top of this file. Each
// sub-benchmark reports req/s, p50-ms and p99-ms, and the calls it made to
// the API server, reads/op and writes/op; create, create-idempotent
// and get-view also their overhead-ms (the median's excess over their
// baseline's) and x-apply or x-get (the ratio of the medians).
func BenchmarkGateway(b *testing.B) {
	workers := max(1, *gatewayWorkers)
	g := newGatewayBench(b, workers)
	existing := "bench-existing"
	if err := g.post([]byte(`{"repository": "bench/existing"}`), ""); err != nil {
		b.Fatal(err)
	}
	p50 := map[string]time.Duration{}
	for _, m := range g.ops(existing) {
		b.Run(m.name, func(b *testing.B) {
			run := nextRun(m.name)
			g.calls.take()
			b.ResetTimer()
			l, err := measure(b.N, workers, m.op(run))
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			reads, writes := g.calls.take()
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
			p50[m.name] = l.quantile(0.5)
			b.ReportMetric(l.perSecond(), "req/s")
			b.ReportMetric(ms(l.quantile(0.5)), "p50-ms")
			b.ReportMetric(ms(l.quantile(0.99)), "p99-ms")
			if base, ok := p50[m.baseline]; ok && base > 0 {
				unit := "x-apply"
				if m.baseline == "direct-get" {
					unit = "x-get"
				}
				b.ReportMetric(ms(p50[m.name]-base), "overhead-ms")
				b.ReportMetric(float64(p50[m.name])/float64(base), unit)
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TestGatewayBenchmark runs BenchmarkGateway's measurements with a few
// requests each, so that make bench-gateway keeps working, and checks
// what does not depend on the machine: every request answered as it
// should be, one App per create, and figures for every measurement.
func TestGatewayBenchmark(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	const n, workers = 12, 3
	g := newGatewayBench(t, workers)
	existing := "bench-existing"
	if err := g.post([]byte(`{"repository": "bench/existing"}`), ""); err != nil {
		t.Fatal(err)
	}
	// What each request costs the API server: a create reads the token's
	// Secret and the App (is it there, and the gateway's?), applies the
	// App and records an Event; under an Idempotency-Key it also creates
	// the key's Lease and writes the answer into it. A get-view reads the
	// Secret and the App.
	calls := map[string][2]int64{
		"direct-apply":      {0, 1},
		"create":            {2, 2},
		"create-idempotent": {2, 4},
		"direct-get":        {1, 0},
		"get-view":          {2, 0},
	}
	for _, m := range g.ops(existing) {
		run := nextRun(m.name)
		g.calls.take()
		l, err := measure(n, workers, m.op(run))
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if reads, writes := g.calls.take(); [2]int64{reads, writes} != [2]int64{calls[m.name][0] * n, calls[m.name][1] * n} {
			t.Errorf("%s: %d requests made %d reads and %d writes, want %d and %d each", m.name, n, reads, writes, calls[m.name][0], calls[m.name][1])
		}
		if l.perSecond() <= 0 || l.quantile(0.5) <= 0 || l.quantile(0.99) < l.quantile(0.5) {
			t.Errorf("%s: %.1f req/s, p50 %s, p99 %s", m.name, l.perSecond(), l.quantile(0.5), l.quantile(0.99))
		}
		want := 0
		if m.name == "direct-apply" || m.name == "create" || m.name == "create-idempotent" {
			want = n
		}
		got, err := g.count(run)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %d Apps for %d requests, want %d", m.name, got, n, want)
		}
	}
	// The same intents again under the same keys are replays: no new App.
	run := nextRun("replay")
	for i := range 3 {
		if err := g.post(intentBody(run, i), run+"-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if err := g.post(intentBody(run, i), run+"-"+strconv.Itoa(i)); err != nil {
			t.Fatalf("a replay: %v", err)
		}
	}
	if got, err := g.count(run); err != nil || got != 3 {
		t.Errorf("3 intents sent twice under their keys made %d Apps (%v), want 3", got, err)
	}
}
