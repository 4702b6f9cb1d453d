package localcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/inrun/inrun/localcluster/assets"
)

// StopAPIServer stops kube-apiserver, gracefully (SIGTERM, then SIGKILL
// after Options.StopTimeout), waits until it is gone, and leaves every
// other component running:
// etcd keeps what is stored, and clients see the API server go away as
// they would during a control-plane upgrade or crash. The cluster is not
// failed by it; StartAPIServer starts it again. Stop works either way.
func (c *Cluster) StopAPIServer() error {
	c.apiMu.Lock()
	defer c.apiMu.Unlock()
	if c.apiStopped {
		return errors.New("localcluster: kube-apiserver is stopped already")
	}
	if err := c.alive(); err != nil {
		return err
	}
	c.mu.Lock()
	var proc *process
	if i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == assets.KubeAPIServer }); i >= 0 {
		proc = c.procs[i]
		// The monitor must not take this exit for a failure.
		proc.retired.Store(true)
		c.procs = slices.Delete(c.procs, i, i+1)
	}
	c.mu.Unlock()
	c.apiStopped = true
	if err := c.env.ControlPlane.APIServer.Stop(); err != nil {
		// envtest sends SIGKILL when SIGTERM took too long, and returns
		// without waiting: the stop is done once the process is gone.
		if proc == nil {
			return fmt.Errorf("localcluster: stopping kube-apiserver: %w", err)
		}
		proc.kill()
		if alive(proc.pid) {
			return fmt.Errorf("localcluster: stopping kube-apiserver: %w; it is still running (pid %d)", err, proc.pid)
		}
	}
	return nil
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped, on the
// same address, with the same certificates and users, so that every
// rest.Config and kubeconfig of the cluster works again, and returns once
// it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.apiMu.Lock()
	defer c.apiMu.Unlock()
	if !c.apiStopped {
		return errors.New("localcluster: kube-apiserver is running; StopAPIServer stops it")
	}
	if err := c.alive(); err != nil {
		return err
	}
	apiServer := c.env.ControlPlane.APIServer
	if err := apiServer.Start(); err != nil {
		return c.componentError(assets.KubeAPIServer, err)
	}
	c.apiStopped = false
	for _, p := range findChildren(c.dir) {
		if p.name != assets.KubeAPIServer {
			continue
		}
		p.logPath = filepath.Join(c.logDir(), p.name+".log")
		p.addr = apiServer.SecureServing.HostPort()
		if err := c.track(p); err != nil {
			return err
		}
	}
	if err := c.waitReadyz(ctx); err != nil {
		return c.componentError(assets.KubeAPIServer, err)
	}
	return nil
}

// alive returns why the cluster is done, if it is.
func (c *Cluster) alive() error {
	select {
	case <-c.done:
		if c.err != nil {
			return fmt.Errorf("localcluster: the cluster is down: %w", c.err)
		}
		return errors.New("localcluster: the cluster is stopped")
	default:
		return nil
	}
}
