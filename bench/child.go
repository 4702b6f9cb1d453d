package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	runtimepprof "runtime/pprof"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/inrun/inrun/bench/handwritten"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// operatorCommand is the hidden subcommand that runs one operator, so that
// the benchmark can measure it as a process of its own.
const operatorCommand = "operator"

// readyLine starts the line the subcommand prints once its caches are in
// sync, followed by the URL of its figures.
const readyLine = "ready "

// runOperator runs an operator until SIGTERM. It serves its figures (writes
// counted by its client, reconciles from controller-runtime's metrics) as
// JSON on a loopback port, which it prints once it is ready.
func runOperator(args []string) error {
	var s operatorSettings
	fs := flag.NewFlagSet(operatorCommand, flag.ContinueOnError)
	fs.StringVar(&s.kind, "kind", "", "handwritten or interpreted")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster")
	fs.StringVar(&s.blueprint, "blueprint", "", "the Blueprint (interpreted)")
	fs.IntVar(&s.workers, "workers", 8, "workers")
	fs.Float64Var(&s.qps, "qps", -1, "client-side rate limit; -1 for none")
	fs.StringVar(&s.cpuprofile, "cpuprofile", "", "write a CPU profile here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS = float32(s.qps)
	if s.qps > 0 {
		cfg.Burst = int(2 * s.qps)
	}
	// A user agent of its own says who sent what in the API server's logs.
	cfg.UserAgent = "inrun-bench-" + s.kind
	writes := newWriteCounter()
	writes.instrument(cfg)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := zap.New(zap.WriteTo(os.Stderr))
	ctrllog.SetLogger(log)

	if s.cpuprofile != "" {
		f, err := os.Create(s.cpuprofile)
		if err != nil {
			return err
		}
		if err := runtimepprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() {
			runtimepprof.StopCPUProfile()
			f.Close()
		}()
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		st, err := gatherStats(writes)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	// The benchmark takes a heap profile here when asked to (-memprofile).
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ready := func() { fmt.Printf("%shttp://%s/\n", readyLine, ln.Addr()) }

	switch s.kind {
	case kindInterpreted:
		bp, err := compiler.CompileFile(s.blueprint, compiler.Options{})
		if err != nil {
			return err
		}
		return runner.Run(ctx, runner.Options{
			Config:      cfg,
			Blueprints:  []*ir.Blueprint{bp},
			Workers:     s.workers,
			MetricsAddr: "0",
			ProbeAddr:   "0",
			Log:         log,
			Ready:       ready,
		})
	case kindHandwritten:
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := handwritten.AddToScheme(scheme); err != nil {
			return err
		}
		mgr, err := manager.New(cfg, manager.Options{
			Scheme:                 scheme,
			Logger:                 log,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		})
		if err != nil {
			return err
		}
		if err := handwritten.Setup(mgr, handwritten.Options{Workers: s.workers}); err != nil {
			return err
		}
		if err := runner.OnCacheSync(mgr, ready); err != nil {
			return err
		}
		return mgr.Start(ctx)
	}
	return fmt.Errorf("unknown operator kind %q", s.kind)
}

// gatherStats reads the writes counted so far and the reconciles
// controller-runtime has counted.
func gatherStats(writes *writeCounter) (wireStats, error) {
	c, last := writes.snapshot()
	st := wireStats{LastWrite: last}
	for k, v := range c {
		st.Writes = append(st.Writes, wireCount{requestKey: k, Count: v})
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return st, err
	}
	found := false
	for _, mf := range families {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		found = true
		for _, m := range mf.GetMetric() {
			st.Reconciles += int64(m.GetCounter().GetValue())
		}
	}
	if !found {
		return st, errors.New("controller_runtime_reconcile_total is not registered")
	}
	return st, nil
}
