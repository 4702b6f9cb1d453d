package clustertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/inrun/inrun/localcluster"
	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
)

// EnvRequireAssets names the environment variable that, set to "1", makes a
// test fail rather than skip when the control plane binaries are missing.
const EnvRequireAssets = "INRUN_REQUIRE_ASSETS"

// shared is the package's cluster, set up by Main and started by Shared.
var shared struct {
	mu      sync.Mutex
	opts    *localcluster.Options
	cluster *localcluster.Cluster
	err     error
}

// Main runs the package's tests with one cluster shared among them, then
// stops it and exits. Call it from TestMain. The cluster starts when a test
// first calls Shared, so a run that selects none of those tests starts
// none.
func Main(m *testing.M, opts localcluster.Options) {
	os.Exit(run(m, opts))
}

func run(m *testing.M, opts localcluster.Options) int {
	shared.mu.Lock()
	shared.opts = &opts
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "clustertest: stopping the shared cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the package's shared cluster, starting it on first use.
// It needs Main in TestMain. If the cluster failed to start, or has failed
// since, every test that asks for it fails with the reason.
func Shared(t testing.TB) *localcluster.Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.opts == nil {
		t.Fatal("clustertest.Shared needs TestMain to call clustertest.Main")
	}
	RequireAssets(t, *shared.opts)
	if shared.cluster == nil && shared.err == nil {
		shared.cluster, shared.err = localcluster.Start(context.Background(), *shared.opts)
	}
	if shared.err != nil {
		t.Fatalf("starting the shared %s cluster: %v", shared.opts.Mode, shared.err)
	}
	select {
	case <-shared.cluster.Done():
		t.Fatalf("the shared cluster is down: %v", shared.cluster.Err())
	default:
	}
	return shared.cluster
}

// Start starts a cluster for t alone and stops it when t ends.
func Start(t testing.TB, opts localcluster.Options) *localcluster.Cluster {
	t.Helper()
	RequireAssets(t, opts)
	c, err := localcluster.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting a %s cluster: %v", opts.Mode, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	return c
}

// RequireAssets skips t when the binaries opts.Mode needs are missing, or
// fails it when $INRUN_REQUIRE_ASSETS is "1". Either way the message says
// how to build them.
func RequireAssets(t testing.TB, opts localcluster.Options) {
	t.Helper()
	err := localcluster.CheckAssets(opts)
	if err == nil {
		return
	}
	if os.Getenv(EnvRequireAssets) == "1" {
		t.Fatalf("%v (%s=1 makes this a failure)", err, EnvRequireAssets)
	}
	t.Skipf("skipping: %v", err)
}

// FreePort returns a loopback port that was free a moment ago, for a
// process a test starts (a reconciler, say), so that tests running at the
// same time, go test runs packages in parallel, do not meet each other's.
func FreePort(t testing.TB) string {
	t.Helper()
	addr, err := localcluster.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// NewNamespace creates a namespace with a unique name derived from the
// test's, and deletes it when t ends.
func NewNamespace(t testing.TB, c *localcluster.Cluster) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		select {
		case <-c.Done():
			return // nothing left to delete from
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Without a namespace controller (a Minimal cluster) the namespace
		// stays Terminating; its name is never reused, so that is harmless.
		err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namePrefix turns a test name into a GenerateName prefix: a DNS label
// short enough to leave room for the random suffix.
func namePrefix(testName string) string {
	p := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(p) > 40 {
		p = strings.TrimRight(p[:40], "-")
	}
	if p == "" {
		p = "test"
	}
	return p + "-"
}

// Metrics reads the samples a process serves at http://addr/metrics, by
// series as the Prometheus text format writes them: name{label="value",...},
// the labels sorted by name. Counters, gauges and untyped samples only.
func Metrics(ctx context.Context, addr string) (map[string]float64, error) {
	families, err := runtimecontroller.ScrapeMetrics(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue
			}
			series := name
			if labels := m.GetLabel(); len(labels) > 0 {
				pairs := make([]string, len(labels))
				for i, l := range labels {
					pairs[i] = l.GetName() + "=" + strconv.Quote(l.GetValue())
				}
				sort.Strings(pairs)
				series += "{" + strings.Join(pairs, ",") + "}"
			}
			out[series] = v
		}
	}
	return out, nil
}
