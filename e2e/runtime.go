package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// Runtime is what reconciles the Blueprint's custom resources while the
// cases run: the interpreted runtime in this process (InProcess), or
// nothing when an operator already runs on the cluster (NoRuntime). A
// compiled operator started as a process would be a third.
type Runtime interface {
	// Start prepares the cluster cfg reaches for the runtime (its CRDs),
	// starts the runtime and returns once it reconciles. ctx bounds the
	// start only; the runtime runs until stop is called. stop waits for the
	// runtime to end and returns why it failed, if it failed on its own;
	// calling it again returns the same.
	Start(ctx context.Context, cfg *rest.Config) (stop func() error, err error)
}

// NoRuntime starts nothing and installs nothing: an operator already
// reconciles on the cluster.
var NoRuntime Runtime = noRuntime{}

type noRuntime struct{}

func (noRuntime) Start(context.Context, *rest.Config) (func() error, error) {
	return func() error { return nil }, nil
}

// InProcess runs the interpreted runtime, runner.Run, in this process: it
// installs the Blueprints' CRDs, then runs their controllers with metrics
// and probes off, so that it listens on no port.
type InProcess struct {
	// Blueprints to run. Required.
	Blueprints []*ir.Blueprint
	// Workers per Blueprint; the runner's default when zero.
	Workers int
	// Log receives the runtime's logs; discarded when unset.
	Log logr.Logger
	// ReadyTimeout bounds the wait for the runtime's caches to sync, on
	// top of ctx. Default one minute.
	ReadyTimeout time.Duration
	// SkipNameValidation lets a Blueprint run again in the same process:
	// controller-runtime otherwise allows a controller name once. Tests
	// that run one Blueprint several times set it.
	SkipNameValidation bool
}

var _ Runtime = (*InProcess)(nil)

// Start installs the CRDs and starts the runtime.
func (p *InProcess) Start(ctx context.Context, cfg *rest.Config) (func() error, error) {
	if len(p.Blueprints) == 0 {
		return nil, errors.New("e2e: InProcess has no Blueprints")
	}
	log := p.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	timeout := p.ReadyTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	if err := runner.InstallCRDs(ctx, cfg, p.Blueprints); err != nil {
		return nil, err
	}

	// The runtime outlives ctx, which bounds the start only.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan struct{})
	var readyOnce sync.Once
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(runCtx, runner.Options{
			Config:             rest.CopyConfig(cfg),
			Blueprints:         p.Blueprints,
			Workers:            p.Workers,
			MetricsAddr:        "0",
			ProbeAddr:          "0",
			Log:                log,
			SkipNameValidation: p.SkipNameValidation,
			Ready:              func() { readyOnce.Do(func() { close(ready) }) },
		})
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("it stopped without an error")
		}
		return nil, fmt.Errorf("the interpreted runtime exited before it was ready: %w", err)
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	case <-timer.C:
		cancel()
		<-done
		return nil, fmt.Errorf("the interpreted runtime did not sync its caches within %s", timeout)
	}

	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			// A runtime that failed on its own has already sent its error.
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				stopErr = fmt.Errorf("the interpreted runtime failed: %w", err)
			}
		})
		return stopErr
	}
	return stop, nil
}

// Together runs several runtimes at once, each reconciling its own
// Blueprints: an operator inrun build compiled, say, and the interpreted
// runtime for the Blueprints its Blueprint uses, which that operator does
// not run. Start starts them in order; stop stops them in reverse order and
// returns the first error.
type Together []Runtime

var _ Runtime = Together(nil)

// Start implements Runtime.
func (t Together) Start(ctx context.Context, cfg *rest.Config) (func() error, error) {
	var stops []func() error
	stopAll := func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	for _, rt := range t {
		stop, err := rt.Start(ctx, cfg)
		if err != nil {
			_ = stopAll()
			return nil, err
		}
		stops = append(stops, stop)
	}
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = stopAll() })
		return err
	}, nil
}
