package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/inrun/inrun/localcluster/assets"
)

// Mode says which components a Cluster runs.
type Mode int

const (
	// Minimal runs etcd and kube-apiserver only. That is enough for CRDs,
	// custom resources and anything that only reads and writes the API, and
	// it starts in a few seconds. Nothing acts on built-in kinds:
	// Deployments get no Pods and nothing is garbage-collected.
	Minimal Mode = iota

	// Full adds kube-controller-manager (garbage collection, Deployments,
	// ReplicaSets, Namespace deletion, node lifecycle), kube-scheduler and
	// kwok with one fake Node. Pods are scheduled and become Running and
	// Ready without a kubelet, so status read from live children, such as a
	// Deployment's readyReplicas, behaves as on a real cluster.
	Full
)

func (m Mode) String() string {
	switch m {
	case Minimal:
		return "minimal"
	case Full:
		return "full"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// binaries returns the assets m needs.
func (m Mode) binaries() []string {
	if m == Full {
		return []string{assets.Etcd, assets.KubeAPIServer, assets.KubeControllerManager, assets.KubeScheduler, assets.Kwok, assets.StagesDir}
	}
	return []string{assets.Etcd, assets.KubeAPIServer}
}

// Options configures Start.
type Options struct {
	// Mode selects the components. Defaults to Minimal.
	Mode Mode

	// AssetsDir holds the binaries. Defaults to assets.DefaultDir, which
	// honours $INRUN_ASSETS_DIR.
	AssetsDir string

	// KubeconfigPath, when set, is a second place the admin kubeconfig is
	// written, for people and tools outside the process. Stop removes it.
	// Start refuses to overwrite a file there that is not a kubeconfig
	// written by a Cluster.
	KubeconfigPath string

	// Progress receives a line per startup step. Nil discards them.
	Progress io.Writer

	// StartTimeout bounds Start, on top of ctx. Defaults to two minutes,
	// which is generous: a Full cluster starts in seconds on an idle
	// machine, but a busy two-core one can take much longer.
	StartTimeout time.Duration

	// StopTimeout is how long each component may take to exit after
	// SIGTERM before it is killed. Defaults to 10 seconds.
	StopTimeout time.Duration

	// FeatureGates are passed to kube-apiserver as --feature-gates, for
	// trying alpha features such as ShardedListAndWatch (KEP-5866). None
	// by default: the local control plane has what a real cluster of its
	// version has.
	FeatureGates map[string]bool
}

func (o *Options) setDefaults() error {
	if o.AssetsDir == "" {
		dir, err := assets.DefaultDir()
		if err != nil {
			return err
		}
		o.AssetsDir = dir
	}
	// Absolute paths, because they are printed for use from anywhere and
	// handed to processes.
	var err error
	if o.AssetsDir, err = filepath.Abs(o.AssetsDir); err != nil {
		return err
	}
	if o.KubeconfigPath != "" {
		if o.KubeconfigPath, err = filepath.Abs(o.KubeconfigPath); err != nil {
			return err
		}
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Second
	}
	return nil
}

// CheckAssets reports whether the binaries opts.Mode needs are in
// opts.AssetsDir (or the default directory). It is the first thing Start
// does; tests call it to skip early. Its error is an *assets.MissingError,
// which says how to build them.
func CheckAssets(opts Options) error {
	if err := opts.setDefaults(); err != nil {
		return err
	}
	return assets.Check(opts.AssetsDir, opts.Mode.binaries()...)
}

// Cluster is a running local control plane. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts Options
	// dir holds every component's state, certificates and logs.
	dir            string
	kubeconfigPath string

	env    *envtest.Environment
	config *rest.Config

	watchdog *watchdog

	mu sync.Mutex
	// procs are the running components, in start order.
	procs []*process
	// logs are the log files the cluster holds open.
	logs []*os.File

	// apiMu serializes StopAPIServer and StartAPIServer; apiStopped says
	// kube-apiserver is stopped between them.
	apiMu      sync.Mutex
	apiStopped bool

	stopping atomic.Bool
	stopOnce sync.Once
	stopErr  error

	done    chan struct{}
	errOnce sync.Once
	err     error
	// monitorDone is closed when the monitor goroutine has returned.
	monitorDone chan struct{}
}

// Start starts a local control plane and returns once it is ready for use.
//
// ctx bounds the start only; the cluster runs until Stop is called. On any
// error Start cleans up everything it started before it returns.
func Start(ctx context.Context, opts Options) (_ *Cluster, retErr error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := assets.Check(opts.AssetsDir, opts.Mode.binaries()...); err != nil {
		return nil, err
	}
	if opts.KubeconfigPath != "" {
		if err := checkKubeconfigTarget(opts.KubeconfigPath); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	dir, err := os.MkdirTemp("", "inrun-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		opts:           opts,
		dir:            dir,
		kubeconfigPath: filepath.Join(dir, "kubeconfig"),
		done:           make(chan struct{}),
	}
	defer func() {
		if retErr != nil {
			c.Stop()
		}
	}()
	if err := os.Mkdir(c.logDir(), 0o755); err != nil {
		return nil, err
	}
	cleanup := []string{dir}
	if opts.KubeconfigPath != "" {
		cleanup = append(cleanup, opts.KubeconfigPath)
	}
	if c.watchdog, err = startWatchdog(cleanup...); err != nil {
		return nil, err
	}

	start := time.Now()
	c.printf("Starting a %s local control plane (state in %s)", opts.Mode, dir)
	if err := c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	c.printf("  etcd and kube-apiserver are ready at %s (%s)", c.config.Host, since(start))
	c.monitorDone = make(chan struct{})
	go c.monitor()
	// The components of a Full cluster use the same admin kubeconfig.
	if err := WriteKubeconfig(c.kubeconfigPath, c.config); err != nil {
		return nil, err
	}

	if opts.Mode == Full {
		t := time.Now()
		if err := c.startNodeComponents(ctx); err != nil {
			return nil, err
		}
		c.printf("  kube-controller-manager, kube-scheduler and kwok are running; node %s is Ready (%s)", nodeName, since(t))
	}

	if opts.KubeconfigPath != "" {
		if err := WriteKubeconfig(opts.KubeconfigPath, c.config); err != nil {
			return nil, err
		}
	}
	c.printf("Local control plane is up in %s", since(start))
	return c, nil
}

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config {
	return rest.CopyConfig(c.config)
}

// KubeconfigPath returns the path of the admin kubeconfig. The file lives
// in the cluster's temporary directory and is removed by Stop; when
// Options.KubeconfigPath is set, that path is returned instead.
func (c *Cluster) KubeconfigPath() string {
	if c.opts.KubeconfigPath != "" {
		return c.opts.KubeconfigPath
	}
	return c.kubeconfigPath
}

// KubectlPath returns the path of the kubectl that matches the API server,
// whether or not it has been built.
func (c *Cluster) KubectlPath() string {
	return filepath.Join(c.opts.AssetsDir, assets.Kubectl)
}

// Dir returns the directory that holds the cluster's state, certificates
// and component logs (in Dir/logs). Stop removes it.
func (c *Cluster) Dir() string { return c.dir }

// Component describes one running process of a Cluster.
type Component struct {
	// Name is the binary's name, such as "kube-apiserver".
	Name string
	// PID is the process id. The process leads a process group of its own.
	PID int
	// Address is the loopback host:port the component serves on, or
	// empty for one that serves nothing.
	Address string
	// LogPath is the file that receives the component's output.
	LogPath string
}

// Components returns the cluster's processes in the order they started.
func (c *Cluster) Components() []Component {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Component, 0, len(c.procs))
	for _, p := range c.procs {
		out = append(out, Component{Name: p.name, PID: p.pid, Address: p.addr, LogPath: p.logPath})
	}
	return out
}

// Mode returns the mode the cluster was started in.
func (c *Cluster) Mode() Mode { return c.opts.Mode }

// Done returns a channel that is closed when a component exits on its own,
// or when Stop is called.
func (c *Cluster) Done() <-chan struct{} { return c.done }

// Err returns why Done was closed: a *ComponentError when a component
// exited, nil after a plain Stop or while the cluster runs.
func (c *Cluster) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Stop stops every component, newest first, waits for them to exit and
// removes the cluster's temporary directory. It is safe to call more than
// once; later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	c.stopping.Store(true)
	c.fail(nil)
	// A cluster that lost a component is not shut down gracefully: without
	// etcd, for one, kube-apiserver would use up its whole StopTimeout.
	broken := c.err != nil

	var errs []error
	c.mu.Lock()
	procs := c.procs
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		switch {
		case p.cmd != nil:
			if err := p.stop(c.opts.StopTimeout); err != nil && !broken {
				errs = append(errs, err)
			}
		case broken:
			p.kill()
		}
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			if !broken {
				errs = append(errs, fmt.Errorf("stopping etcd and kube-apiserver: %w", err))
			}
			// envtest gave up waiting; make sure they are gone.
			for _, p := range procs {
				if p.cmd == nil {
					p.kill()
				}
			}
		}
	}
	if c.monitorDone != nil {
		<-c.monitorDone
	}
	for _, f := range c.logs {
		f.Close()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	if c.opts.KubeconfigPath != "" && c.config != nil {
		if err := os.Remove(c.opts.KubeconfigPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if c.watchdog != nil {
		c.watchdog.disarm()
	}
	return errors.Join(errs...)
}

// fail records err as the reason the cluster is done, once.
func (c *Cluster) fail(err error) {
	c.errOnce.Do(func() {
		c.err = err
		close(c.done)
	})
}

// monitor watches the components and fails the cluster when one exits
// while the cluster is not stopping.
func (c *Cluster) monitor() {
	defer close(c.monitorDone)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		c.mu.Lock()
		procs := c.procs
		c.mu.Unlock()
		for _, p := range procs {
			if exited, err := p.exited(); exited && !c.stopping.Load() && !p.retired.Load() {
				c.fail(p.error(err))
				return
			}
		}
	}
}

// track adds p to the components that Stop stops and the monitor and the
// watchdog watch.
func (c *Cluster) track(p *process) error {
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return c.watchdog.watch(p.pid)
}

func (c *Cluster) logDir() string { return filepath.Join(c.dir, "logs") }

func (c *Cluster) printf(format string, args ...any) {
	fmt.Fprintf(c.opts.Progress, format+"\n", args...)
}

func since(t time.Time) time.Duration {
	return time.Since(t).Round(100 * time.Millisecond)
}
