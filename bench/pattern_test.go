package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/localregistry"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/gate"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// The pattern benchmark measures inrun run NAME@VERSION from the process's
// start to its first reconcile: the time until the Deployment of a Website
// that is already there exists. The pattern is the Website pack, pushed to
// a real Distribution registry; the cluster a Minimal local control plane.
// Each run is the inrun binary as a user starts it, stopped once the
// Deployment is there, which is then deleted for the next run.
//
//   - cold: an empty pattern cache (--pattern-cache), so the pattern's
//     manifest, files and proof are fetched from the registry, verified,
//     and saved;
//   - warm: the cache of an earlier run, so what it holds by digest is
//     read from it (the index, the version's digest and the proofs list
//     still come from the registry).
//
// The warm sub-benchmark reports x-cold, the cold median over the warm
// one, both measured in the same run. Run it with make bench-registry, or
//
//	go test ./bench -run '^$' -bench '^BenchmarkRunPattern$' -benchtime 10x

// patternBench is a registry holding the Website pattern, a cluster with
// its CRD and one Website, and the inrun binary to run it with.
type patternBench struct {
	c          client.Client
	kubeconfig string
	keys       string
	ref        string
	inrun      string
}

func newPatternBench(tb testing.TB) *patternBench {
	tb.Helper()
	lc := clustertest.Start(tb, localcluster.Options{Mode: localcluster.Minimal})
	reg, err := localregistry.Start(context.Background(), localregistry.Options{})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		tb.Skipf("skipping: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { reg.Stop() })

	dir := tb.TempDir()
	pb := &patternBench{kubeconfig: lc.KubeconfigPath(), keys: filepath.Join(dir, "keys"), ref: reg.Host + "/bench/website@1.0.0"}
	bin, err := buildInrun()
	if err != nil {
		tb.Fatal(err)
	}
	pb.inrun = bin
	priv, _, err := registry.CreateKey(pb.keys, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	sign, err := registry.LoadSigner(priv)
	if err != nil {
		tb.Fatal(err)
	}
	pack := filepath.Join(dir, "website")
	if err := packs.Copy("website", pack, packs.CopyOptions{}); err != nil {
		tb.Fatal(err)
	}
	files, err := gate.Collect(filepath.Join(pack, "blueprint.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	// A passing result made up for the benchmark: what is measured is
	// running the pattern, not its gate (cli's TestRegistryWalkthrough
	// runs that).
	results := registry.Results{InrunVersion: "bench", KubernetesVersion: assets.KubernetesVersion,
		Simulate: registry.Suite{File: "test/simulate.yaml", Cases: 4, Passed: 4, Duration: "1s"},
		E2E:      registry.Suite{File: "test/e2e.yaml", Cases: 1, Passed: 1, Duration: "1m"}}
	ref, err := registry.ParseReference(reg.Host + "/bench/website:1.0.0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &registry.Pattern{Name: "website", Version: "1.0.0", Files: files}
	if _, err := registry.Push(context.Background(), registry.NewRemote(reg.Host), ref, p, registry.PushOptions{Signer: sign, Results: results}); err != nil {
		tb.Fatal(err)
	}

	pb.c, err = client.New(lc.RESTConfig(), client.Options{Scheme: runner.Scheme()})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	cr := &unstructured.Unstructured{}
	for file, obj := range map[string]any{"manifests/crd.yaml": crd, "manifests/cr.yaml": &cr.Object} {
		if err := yaml.Unmarshal(files[file], obj); err != nil {
			tb.Fatal(err)
		}
	}
	if err := pb.c.Create(ctx, crd); err != nil {
		tb.Fatal(err)
	}
	// The Website is created once the CRD is served.
	cr.SetNamespace("default")
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := pb.c.Create(ctx, cr.DeepCopy())
		return err == nil, nil
	}); err != nil {
		tb.Fatalf("creating the Website: %v", err)
	}
	return pb
}

// buildInrun builds the inrun binary once per test binary.
var buildInrun = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "inrun-bench-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "inrun")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/inrun").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// run starts inrun run on the pattern with the cache at cache, returns the
// time until the Website's Deployment exists, stops inrun, and deletes
// the Deployment and the Service for the next run. out is what inrun
// printed.
func (pb *patternBench) run(ctx context.Context, cache string) (d time.Duration, out string, err error) {
	var buf syncBuffer
	cmd := exec.Command(pb.inrun, "run", pb.ref, "--pattern-cache", cache, "--kubeconfig", pb.kubeconfig,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	cmd.Env = append(os.Environ(), "INRUN_KEYS_DIR="+pb.keys)
	cmd.Stdout, cmd.Stderr = &buf, &buf
	done := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	go func() { done <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	dep := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: "default", Name: "hello-website"}
	for {
		err := pb.c.Get(ctx, key, dep)
		if err == nil {
			d = time.Since(start)
			break
		}
		if !apierrors.IsNotFound(err) {
			stop()
			return 0, buf.String(), err
		}
		select {
		case err := <-done:
			return 0, buf.String(), fmt.Errorf("inrun run exited before its first reconcile: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Since(start) > 2*time.Minute {
			stop()
			return 0, buf.String(), fmt.Errorf("no first reconcile in 2m")
		}
	}
	stop()
	for _, obj := range []client.Object{dep, &corev1.Service{}} {
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		if err := pb.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return d, buf.String(), err
		}
	}
	return d, buf.String(), nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runs measures n runs of one kind: cold with a new cache each, warm with
// warmCache, which an earlier run filled.
func (pb *patternBench) runs(tb testing.TB, n int, cold bool, warmCache string) []time.Duration {
	tb.Helper()
	var ds []time.Duration
	for range n {
		cache := warmCache
		if cold {
			cache = filepath.Join(tb.TempDir(), "cache")
		}
		d, out, err := pb.run(context.Background(), cache)
		if err != nil {
			tb.Fatalf("%v\n%s", err, out)
		}
		ds = append(ds, d)
	}
	return ds
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkRunPattern: see the comment at the top of this file. Each
// sub-benchmark reports ms/run, its median; warm also x-cold.
func BenchmarkRunPattern(b *testing.B) {
	pb := newPatternBench(b)
	warmCache := filepath.Join(b.TempDir(), "cache")
	if _, out, err := pb.run(context.Background(), warmCache); err != nil {
		b.Fatalf("filling the cache: %v\n%s", err, out)
	}
	medians := map[string]time.Duration{}
	for _, kind := range []string{"cold", "warm"} {
		b.Run(kind, func(b *testing.B) {
			b.ResetTimer()
			ds := pb.runs(b, b.N, kind == "cold", warmCache)
			b.StopTimer()
			medians[kind] = medianOf(ds)
			b.ReportMetric(ms(medians[kind]), "ms/run")
			if kind == "warm" && medians["cold"] > 0 {
				b.ReportMetric(float64(medians["cold"])/float64(medians["warm"]), "x-cold")
			}
		})
	}
}

// TestRunPatternBenchmark runs BenchmarkRunPattern's measurement once
// each, so that make bench-registry keeps working, and checks what does
// not depend on the machine: each run resolved the pattern, verified,
// and reached its first reconcile; a cold run filled its cache, which a
// warm run then used.
func TestRunPatternBenchmark(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and a registry")
	}
	pb := newPatternBench(t)
	cache := filepath.Join(t.TempDir(), "cache")
	for _, kind := range []string{"cold", "warm"} {
		d, out, err := pb.run(context.Background(), cache)
		if err != nil {
			t.Fatalf("%s: %v\n%s", kind, err, out)
		}
		if d <= 0 || !strings.Contains(out, "Pattern "+strings.Replace(pb.ref, "@", ":", 1)+": sha256:") || !strings.Contains(out, "verified, signed by") {
			t.Errorf("%s: %s\n%s", kind, d, out)
		}
		if _, err := os.Stat(filepath.Join(cache, "index.json")); err != nil {
			t.Errorf("%s: the run left no cache: %v", kind, err)
		}
	}
}
