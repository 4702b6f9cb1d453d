package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// Binary runs an operator built by inrun build as a process. Start installs
// the Blueprint's CRD, writes a kubeconfig for the cluster to a temporary
// file, starts the binary with it and waits until it reports ready; the
// stop function sends SIGTERM, waits for the manager's graceful shutdown,
// and removes the kubeconfig.
type Binary struct {
	// Path is the operator binary. Required.
	Path string
	// Blueprint is the Blueprint it was built from, whose CRD Start
	// installs. Required.
	Blueprint *ir.Blueprint
	// Args are passed after the kubeconfig, metrics and probe flags.
	Args []string
	// Output receives the operator's logs. Default: discarded.
	Output io.Writer
	// ReadyTimeout bounds the wait for the operator to answer /readyz.
	// Default one minute.
	ReadyTimeout time.Duration
	// StopTimeout is how long the operator may take to exit after SIGTERM
	// before it is killed. Default 30 seconds.
	StopTimeout time.Duration

	// MetricsAddr is where the running operator serves metrics; set by
	// Start.
	MetricsAddr string
}

var _ e2e.URLRuntime = (*Binary)(nil)

// WithReconcilerURL implements e2e.URLRuntime: the operator is started with
// --reconciler-url, which operators of Blueprints with a remote reconciler
// accept.
func (b *Binary) WithReconcilerURL(_ *ir.Blueprint, url string) e2e.Runtime {
	cp := *b
	cp.Args = append(append([]string(nil), b.Args...), "--reconciler-url="+url)
	return &cp
}

var _ e2e.Runtime = (*Binary)(nil)
var _ e2e.Counter = (*Binary)(nil)

// Activity implements e2e.Counter from the running operator's metrics.
func (b *Binary) Activity(ctx context.Context) (runtimecontroller.Activity, error) {
	return runtimecontroller.ScrapeActivity(ctx, "http://"+b.MetricsAddr+"/metrics")
}

// Start implements e2e.Runtime.
func (b *Binary) Start(ctx context.Context, cfg *rest.Config) (func() error, error) {
	if b.Path == "" || b.Blueprint == nil {
		return nil, errors.New("conformance: Binary needs Path and Blueprint")
	}
	out := b.Output
	if out == nil {
		out = io.Discard
	}
	if err := runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{b.Blueprint}); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "inrun-conformance-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := localcluster.WriteKubeconfig(kubeconfig, cfg); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A free port can be taken, by another process's outgoing connection
	// say, between FreeAddr and the operator's bind: then it exits at
	// once, and runs again on other ports.
	for attempt := 1; ; attempt++ {
		log := &bindWatch{w: out}
		stop, err := b.startOnce(ctx, kubeconfig, log)
		if err != nil && log.addrInUse() && attempt < 3 {
			fmt.Fprintf(out, "the operator could not bind a port (%v); starting it again on other ports\n", err)
			continue
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		return func() error {
			defer os.RemoveAll(dir)
			return stop()
		}, nil
	}
}

// startOnce starts the operator with kubeconfig on free ports and waits
// until it answers /readyz and serves its metrics.
func (b *Binary) startOnce(ctx context.Context, kubeconfig string, out io.Writer) (func() error, error) {
	readyTimeout, stopTimeout := b.ReadyTimeout, b.StopTimeout
	if readyTimeout <= 0 {
		readyTimeout = time.Minute
	}
	if stopTimeout <= 0 {
		stopTimeout = 30 * time.Second
	}
	probe, err := localcluster.FreeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := localcluster.FreeAddr()
	if err != nil {
		return nil, err
	}
	b.MetricsAddr = metrics
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + probe,
	}, b.Args...)
	cmd := exec.Command(b.Path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			select {
			case err := <-done:
				// It stopped on its own: that is a failure.
				stopErr = fmt.Errorf("the operator exited: %v", err)
				return
			default:
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				if err != nil {
					stopErr = fmt.Errorf("the operator failed on SIGTERM: %w", err)
				}
			case <-time.After(stopTimeout):
				_ = cmd.Process.Kill()
				<-done
				stopErr = fmt.Errorf("the operator did not stop within %s of SIGTERM", stopTimeout)
			}
		})
		return stopErr
	}

	deadline := time.Now().Add(readyTimeout)
	for {
		// Both servers bound: a port taken shows before Start returns.
		if ready(ctx, "http://"+probe+"/readyz") && ready(ctx, "http://"+metrics+"/metrics") {
			return stop, nil
		}
		select {
		case err := <-done:
			done <- err
			_ = stop()
			return nil, fmt.Errorf("the operator %s exited before it was ready: %v", b.Path, err)
		case <-ctx.Done():
			_ = stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = stop()
			return nil, fmt.Errorf("the operator %s was not ready within %s", b.Path, readyTimeout)
		}
	}
}

// bindWatch passes the operator's output on and notes whether it could
// not bind an address.
type bindWatch struct {
	w     io.Writer
	mu    sync.Mutex
	inUse bool
}

func (b *bindWatch) Write(p []byte) (int, error) {
	b.mu.Lock()
	if bytes.Contains(p, []byte("address already in use")) {
		b.inUse = true
	}
	b.mu.Unlock()
	return b.w.Write(p)
}

func (b *bindWatch) addrInUse() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUse
}

func ready(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
