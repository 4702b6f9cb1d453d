package operatortest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/ir"
	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// E2E runs the cases of the e2e file at path on the cluster cfg reaches,
// with the controller setup adds to a manager started for the run, and the
// Blueprints bp uses (ir.Use.Compiled) interpreted beside it.
func E2E(t *testing.T, cfg *rest.Config, bp *ir.Blueprint, path string, setup func(ctrl.Manager) error) {
	t.Helper()
	if data, err := os.ReadFile(path); err == nil {
		var top map[string]any
		if yaml.Unmarshal(data, &top) == nil && top["reconciler"] != nil {
			// e2e points only its in-process runtime at the reconciler
			// process it starts.
			t.Skipf("%s starts a reconciler process, which e2e can point only the interpreted runtime at", path)
		}
	}
	out := &testWriter{t: t}
	var runtime e2e.Runtime = &Manager{Blueprint: bp, Setup: setup}
	// The Blueprints bp uses run interpreted beside the operator, as inrun
	// run would run them.
	if all := ir.WithUsed([]*ir.Blueprint{bp}); len(all) > 1 {
		runtime = e2e.Together{&e2e.InProcess{Blueprints: all[:len(all)-1], SkipNameValidation: true}, runtime}
	}
	rep, err := e2e.Run(context.Background(), e2e.Options{
		Blueprint: bp,
		File:      path,
		Config:    cfg,
		Runtime:   runtime,
		Out:       out,
	})
	out.flush()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed() > 0 {
		t.Error(rep.Summary())
	}
}

// Manager is an e2e.Runtime that runs a generated controller in this
// process: it installs the Blueprint's CRD, then starts a manager shaped as
// the operator's main does, with metrics and probes off.
type Manager struct {
	Blueprint *ir.Blueprint
	// Setup adds the controller to the manager.
	Setup func(ctrl.Manager) error
	// Log receives the manager's logs; discarded when unset.
	Log logr.Logger
}

var _ e2e.Runtime = (*Manager)(nil)

// Start implements e2e.Runtime.
func (m *Manager) Start(ctx context.Context, cfg *rest.Config) (func() error, error) {
	bps := []*ir.Blueprint{m.Blueprint}
	if err := runner.InstallCRDs(ctx, cfg, bps); err != nil {
		return nil, err
	}
	opts, err := runtimecontroller.ManagerOptions(bps)
	if err != nil {
		return nil, err
	}
	log := m.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	// client-go's informers and the work queues log through the root logger.
	ctrllog.SetLogger(log)
	opts.Logger = log
	opts.Scheme = runner.Scheme()
	opts.Metrics = metricsserver.Options{BindAddress: "0"}
	opts.HealthProbeBindAddress = "0"
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), opts)
	if err != nil {
		return nil, err
	}
	if err := m.Setup(mgr); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	syncCtx, stopWaiting := context.WithTimeout(ctx, time.Minute)
	defer stopWaiting()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		if err := <-done; err != nil {
			return nil, fmt.Errorf("the manager stopped before its caches synced: %w", err)
		}
		return nil, errors.New("the manager's caches did not sync within a minute")
	}
	var once sync.Once
	var stopErr error
	return func() error {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				stopErr = err
			}
		})
		return stopErr
	}, nil
}

// testWriter logs e2e's output line by line.
type testWriter struct {
	t   *testing.T
	mu  sync.Mutex
	buf strings.Builder
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	s := w.buf.String()
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		w.t.Log(s[:i])
		s = s[i+1:]
	}
	w.buf.Reset()
	w.buf.WriteString(s)
	return len(p), nil
}

func (w *testWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() > 0 {
		w.t.Log(w.buf.String())
		w.buf.Reset()
	}
}
