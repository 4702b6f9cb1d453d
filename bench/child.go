package main

import (
	"context"
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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/inrun/inrun/bench/handwritten"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// operatorCommand is the hidden subcommand that runs one operator, so that
// the benchmark can measure it as a process of its own.
const operatorCommand = "operator"

// readyLine starts the line the subcommand prints once its caches are in
// sync, followed by the URL of its figures.
const readyLine = "ready "

// runOperator runs an operator until SIGTERM. Its figures are on its
// metrics endpoint, as they are for the compiled operator: writes counted by
// runtime-lib's write metrics, reconciles by controller-runtime's. Once its
// caches are in sync it prints the URL where it serves heap profiles.
func runOperator(args []string) error {
	var s operatorSettings
	fs := flag.NewFlagSet(operatorCommand, flag.ContinueOnError)
	fs.StringVar(&s.kind, "kind", "", "handwritten or interpreted")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster")
	fs.StringVar(&s.blueprint, "blueprint", "", "the Blueprint (interpreted)")
	fs.IntVar(&s.workers, "workers", 8, "workers")
	fs.Float64Var(&s.qps, "qps", -1, "client-side rate limit; -1 for none")
	fs.BoolVar(&s.headless, "headless", false, "headless Services (hand-written)")
	fs.StringVar(&s.cpuprofile, "cpuprofile", "", "write a CPU profile here")
	fs.StringVar(&s.metricsAddr, "metrics-addr", "", "where to serve metrics")
	fs.StringVar(&s.namespace, "namespace", "", "reconcile only the Websites in this namespace")
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
			Namespaces:  namespaces(s.namespace),
			MetricsAddr: s.metricsAddr,
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
		// Counted as the interpreted runtime and generated operators count.
		runtimecontroller.CountWrites(cfg)
		mgr, err := manager.New(cfg, manager.Options{
			Scheme:                 scheme,
			Logger:                 log,
			Metrics:                metricsserver.Options{BindAddress: s.metricsAddr},
			HealthProbeBindAddress: "0",
			Cache:                  cache.Options{DefaultNamespaces: cacheNamespaces(s.namespace)},
		})
		if err != nil {
			return err
		}
		if err := handwritten.Setup(mgr, handwritten.Options{Workers: s.workers, Headless: s.headless}); err != nil {
			return err
		}
		if err := runner.OnCacheSync(mgr, ready); err != nil {
			return err
		}
		return mgr.Start(ctx)
	}
	return fmt.Errorf("unknown operator kind %q", s.kind)
}

// namespaces is the runtime's namespaces: ns alone, or all when it is "".
func namespaces(ns string) []string {
	if ns == "" {
		return nil
	}
	return []string{ns}
}

// cacheNamespaces confines a manager's caches to ns, unless it is "".
func cacheNamespaces(ns string) map[string]cache.Config {
	if ns == "" {
		return nil
	}
	return map[string]cache.Config{ns: {}}
}
