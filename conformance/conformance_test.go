package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/conformance"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

func TestMain(m *testing.M) {
	// The interpreted runtime's client logs through controller-runtime's
	// root logger before it sets one.
	ctrllog.SetLogger(logr.Discard())
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
}

const pack = "../packs/website"

// TestWebsite builds the website pack's operator with inrun build, then runs
// the pack's test/e2e.yaml against the binary, and has it take over from
// the interpreted runtime.
func TestWebsite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an operator and runs it on a local control plane")
	}
	cluster := clustertest.Shared(t)
	bp, err := compiler.CompileFile(filepath.Join(pack, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "website-operator")
	start := time.Now()
	if _, err := codegen.Build(context.Background(), bp, os.DirFS(pack), codegen.BuildOptions{
		Out: filepath.Join(dir, "project"), Binary: bin, SkipTests: true,
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the operator in %s", time.Since(start).Round(time.Millisecond))

	t.Run("e2e", func(t *testing.T) {
		out := &logWriter{t: t}
		rep, err := e2e.Run(context.Background(), e2e.Options{
			Blueprint: bp,
			File:      filepath.Join(pack, "test", "e2e.yaml"),
			Config:    cluster.RESTConfig(),
			Runtime:   &conformance.Binary{Path: bin, Blueprint: bp},
			Out:       out,
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed() > 0 {
			t.Error(rep.Summary())
		}
	})

	t.Run("takes over from the interpreter without a write", func(t *testing.T) {
		takeover(t, cluster, bp, bin)
	})
}

func takeover(t *testing.T, cluster *localcluster.Cluster, bp *ir.Blueprint, bin string) {
	ctx := context.Background()
	cfg := cluster.RESTConfig()
	ns := clustertest.NewNamespace(t, cluster)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	interpreted := &e2e.InProcess{Blueprints: []*ir.Blueprint{bp}}
	stopInterpreted, err := interpreted.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stopInterpreted()
		}
	}()
	cr, err := simulate.ReadObject(filepath.Join(pack, "manifests", "cr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crs := dyn.Resource(bp.Resource.GroupVersionResource()).Namespace(ns)
	if _, err := crs.Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Converged: Ready, and nothing the runtime writes changes for a second.
	var before map[string]string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		live, err := crs.Get(ctx, cr.GetName(), metav1.GetOptions{})
		if err != nil || !isReady(live) {
			return false, nil
		}
		now, err := written(ctx, dyn, bp, ns, cr.GetName())
		if err != nil {
			return false, nil
		}
		if reflect.DeepEqual(now, before) {
			return true, nil
		}
		before = now
		return false, nil
	})
	if err != nil {
		t.Fatalf("the interpreted runtime did not converge: %v", err)
	}
	stopped = true
	if err := stopInterpreted(); err != nil {
		t.Fatal(err)
	}

	op := &conformance.Binary{Path: bin, Blueprint: bp, Output: &logWriter{t: t}}
	stop, err := op.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	// Wait until the operator has reconciled the Website at least once.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return reconciled(ctx, op.MetricsAddr, bp.Name) > 0, nil
	})
	if err != nil {
		t.Fatalf("the operator did not reconcile: %v", err)
	}
	after, err := written(ctx, dyn, bp, ns, cr.GetName())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the compiled operator wrote what the interpreter had written:\nbefore %v\nafter  %v", before, after)
	}
}

func isReady(cr *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(cr.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == reconciler.ConditionReady && m["status"] == "True" {
			return true
		}
	}
	return false
}

// written is what the runtime wrote: the custom resource's resourceVersion
// (only the runtime writes it once created), and each child's applied hash
// and the time of the runtime's field-manager entry.
func written(ctx context.Context, dyn dynamic.Interface, bp *ir.Blueprint, ns, name string) (map[string]string, error) {
	out := map[string]string{}
	cr, err := dyn.Resource(bp.Resource.GroupVersionResource()).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out["cr"] = cr.GetResourceVersion()
	for _, c := range bp.Children {
		gvr := schema.GroupVersionResource{Group: c.Group, Version: c.Version, Resource: c.Plural}
		obj, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out[c.ID] = obj.GetLabels()[reconciler.LabelAppliedHash]
		for _, mf := range obj.GetManagedFields() {
			if mf.Manager == reconciler.ManagedBy && mf.Time != nil {
				out[c.ID+" applied"] = mf.Time.String()
			}
		}
	}
	return out, nil
}

// reconciled reads controller-runtime's count of the controller's
// reconciles from the operator's metrics.
func reconciled(ctx context.Context, addr, controller string) int {
	samples, err := clustertest.Metrics(ctx, addr)
	if err != nil {
		return 0
	}
	total := 0
	prefix := `controller_runtime_reconcile_total{controller="` + controller + `"`
	for series, v := range samples {
		if strings.HasPrefix(series, prefix) {
			total += int(v)
		}
	}
	return total
}

// logWriter logs what it is written, line by line.
type logWriter struct {
	t   *testing.T
	mu  sync.Mutex
	buf []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.t.Log(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}
