package simulate

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inrun/inrun/ir"
)

// Reconciler is a reconciler process that a test file starts for its cases:
// the reconciler: block of test/simulate.yaml and of test/e2e.yaml.
type Reconciler struct {
	// Command is the program and its arguments, run without a shell. A
	// program path with a slash is relative to Dir; one without is looked
	// up in $PATH.
	Command []string `json:"command"`
	// URL is where the process serves the reconciler contract. For the run
	// it replaces the Blueprint's reconcile.url (or reconcile.service).
	// Empty: the Blueprint's reconcile.url.
	URL string `json:"url,omitempty"`
	// Env is added to the environment the process inherits.
	Env map[string]string `json:"env,omitempty"`
	// Dir is the process's working directory, absolute or relative to the
	// test file's directory. Default: the test file's directory.
	Dir string `json:"dir,omitempty"`
	// StartTimeout bounds the wait for the URL's port to accept
	// connections. Default DefaultStartTimeout.
	StartTimeout *metav1.Duration `json:"startTimeout,omitempty"`
}

// DefaultStartTimeout is how long a reconciler process may take to listen:
// long enough for `go run` to compile a small program the first time.
const DefaultStartTimeout = time.Minute

// stopGrace is how long a stopped reconciler has to exit after SIGTERM
// before its process group is killed.
const stopGrace = 3 * time.Second

// Problems returns what is wrong with r, each as "field: problem; hint",
// with field relative to the reconciler block.
func (r *Reconciler) Problems() []string {
	var out []string
	if len(r.Command) == 0 || r.Command[0] == "" {
		out = append(out, "command: required; give the program and its arguments as a list, such as [python3, ../reconcilers/python/reconciler.py]")
	}
	if r.URL != "" {
		if _, err := hostPort(r.URL); err != nil {
			out = append(out, "url: "+err.Error())
		}
	}
	if r.StartTimeout != nil && r.StartTimeout.Duration <= 0 {
		out = append(out, fmt.Sprintf("startTimeout: %s is not positive; write a Go duration such as 30s", r.StartTimeout.Duration))
	}
	return out
}

// Endpoint returns the URL the reconciler serves: r.URL, else bp's
// reconcile.url, or for an API mapped by reconcile.api, the scheme and host
// of its URL. The runtime then calls it there (see ir.Blueprint.WithRemoteURL:
// for an API, r.URL replaces the scheme and host of every URL it calls). It
// is an error when bp has no reconcile section, or only an in-cluster
// Service and r names no URL.
func (r *Reconciler) Endpoint(bp *ir.Blueprint) (string, error) {
	if bp.Reconcile == nil || bp.Reconcile.Remote == nil {
		return "", fmt.Errorf("the Blueprint %s has no reconcile.url, reconcile.service or reconcile.api: there is nothing to call a reconciler process", bp.Name)
	}
	if r.URL != "" {
		return r.URL, nil
	}
	if api := bp.Reconcile.Remote.API; api != nil {
		if origin := apiOrigin(api.URL); origin != "" {
			return origin, nil
		}
		return "", fmt.Errorf("reconciler: url is required: give the scheme and host the process serves the API on, such as http://127.0.0.1:18090")
	}
	if bp.Reconcile.Remote.URL == "" {
		return "", fmt.Errorf("reconciler: url is required: the Blueprint %s calls an in-cluster Service, which a local process cannot serve", bp.Name)
	}
	return bp.Reconcile.Remote.URL, nil
}

// WithURL returns a copy of bp whose remote reconciler is called at rawURL
// instead of its reconcile.url or reconcile.service. bp itself is left as
// it is: it is shared, and the IR is immutable once compiled. Only the
// parts on the way to the URL are copied; expressions are shared, so the
// programs compiled for bp serve the copy too.
func WithURL(bp *ir.Blueprint, rawURL string) *ir.Blueprint {
	return bp.WithRemoteURL(rawURL)
}

// StartOptions say where and how a reconciler process starts.
type StartOptions struct {
	// URL is where the process serves; Start waits for its port. Required:
	// Reconciler.Endpoint gives it.
	URL string
	// BaseDir is the directory Reconciler.Dir is relative to: the test
	// file's. Default: the working directory.
	BaseDir string
	// Output receives the process's stdout and stderr as they come.
	// Default: discarded; the last lines are kept for errors either way.
	Output io.Writer
}

// Process is a running reconciler process.
type Process struct {
	url  string
	desc string
	cmd  *exec.Cmd
	out  *tailBuffer
	// exited is closed once the process has exited; err is then why.
	exited chan struct{}
	err    error

	guard    *guard
	stopOnce sync.Once
	stopErr  error
}

// Start starts r's command in a process group of its own and returns once
// the port of opts.URL accepts connections. It fails at once when something
// already listens there, since the cases would then reach that instead;
// and it fails with the process's last output when the process exits first
// or does not listen within the start timeout.
func (r *Reconciler) Start(ctx context.Context, opts StartOptions) (*Process, error) {
	if probs := r.Problems(); len(probs) > 0 {
		return nil, fmt.Errorf("reconciler: %s", strings.Join(probs, "; "))
	}
	addr, err := hostPort(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("reconciler: url: %w", err)
	}
	desc := strings.Join(r.Command, " ")
	if dialable(addr) {
		return nil, fmt.Errorf("reconciler: something already listens on %s, so the cases would not reach %s; stop it, or give the reconciler another port (its url and, often, its PORT in env)", addr, desc)
	}
	dir := opts.BaseDir
	switch {
	case filepath.IsAbs(r.Dir):
		dir = r.Dir
	case r.Dir != "":
		dir = filepath.Join(dir, r.Dir)
	}
	// Else exec would blame the program for the directory it cannot enter.
	if fi, err := os.Stat(cmp.Or(dir, ".")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("reconciler: dir %s is no directory: give one that exists, relative to the simulate file or absolute", displayDir(dir))
	}
	cmd := exec.Command(r.Command[0], r.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(r.Env)) {
		cmd.Env = append(cmd.Env, k+"="+r.Env[k])
	}
	tail := &tailBuffer{max: 8 << 10}
	var w io.Writer = tail
	if opts.Output != nil {
		w = io.MultiWriter(tail, opts.Output)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = groupAttr()
	// A grandchild that keeps the output open must not hold Wait forever.
	cmd.WaitDelay = stopGrace
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("reconciler: starting %s in %s: %w", desc, displayDir(dir), err)
	}
	p := &Process{url: opts.URL, desc: desc, cmd: cmd, out: tail, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	// Should this process die without stopping the reconciler, the guard
	// stops it.
	p.guard, _ = startGuard(cmd.Process.Pid)

	timeout := DefaultStartTimeout
	if r.StartTimeout != nil {
		timeout = r.StartTimeout.Duration
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if dialable(addr) {
			return p, nil
		}
		select {
		case <-p.exited:
			p.Stop()
			return nil, fmt.Errorf("reconciler: %s exited before it listened on %s: %v%s", desc, addr, p.err, p.lastOutput())
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-timer.C:
			p.Stop()
			return nil, fmt.Errorf("reconciler: %s did not listen on %s within %s; is its port the url's? (startTimeout sets a longer wait)%s", desc, addr, timeout, p.lastOutput())
		case <-tick.C:
		}
	}
}

// URL returns where the process serves.
func (p *Process) URL() string { return p.url }

// Output returns the last lines the process wrote.
func (p *Process) Output() string { return p.out.String() }

// Exited reports whether the process has exited, and why.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop ends the process and everything it started: SIGTERM to its process
// group, then SIGKILL after a grace period. It returns an error when the
// process had exited on its own before, with its last output, since the
// cases then met no reconciler. Calling it again returns the same.
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		if done, err := p.Exited(); done {
			p.stopErr = fmt.Errorf("reconciler: %s exited during the run: %v%s", p.desc, err, p.lastOutput())
		} else {
			signalGroup(p.cmd.Process.Pid, sigTerm)
			select {
			case <-p.exited:
			case <-time.After(stopGrace):
				signalGroup(p.cmd.Process.Pid, sigKill)
				<-p.exited
			}
		}
		// The group may hold more than the process itself.
		signalGroup(p.cmd.Process.Pid, sigKill)
		p.guard.disarm()
	})
	return p.stopErr
}

// exitedDuring returns, after a case, an error with the exit status and
// the last output when the process, kept for every case, exited during
// it: the case then met no reconciler from some point on, whatever its
// expectations say. A process that no longer listens is on its way out,
// ended by the case's last request: it gets a moment to exit, so that the
// case which ended it is the one that fails.
func (p *Process) exitedDuring() error {
	if done, _ := p.Exited(); !done {
		if addr, err := hostPort(p.url); err == nil && !dialable(addr) {
			select {
			case <-p.exited:
			case <-time.After(time.Second):
			}
		}
	}
	if done, err := p.Exited(); done {
		return fmt.Errorf("reconciler: %s exited during the case: %v%s", p.desc, err, p.lastOutput())
	}
	return nil
}

// exitedBefore returns an error when the process, kept for every case,
// exited while no case ran.
func (p *Process) exitedBefore() error {
	if done, err := p.Exited(); done {
		return fmt.Errorf("reconciler: %s exited before the case, while no case ran: %v%s", p.desc, err, p.lastOutput())
	}
	return nil
}

func (p *Process) lastOutput() string {
	out := strings.TrimRight(p.out.String(), "\n")
	if out == "" {
		return " (it wrote nothing)"
	}
	return "; its last output:\n" + indent(out)
}

// hostPort returns the host:port to dial for an http or https URL.
func hostPort(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute http:// or https:// URL; write one such as http://127.0.0.1:18088/reconcile", rawURL)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// dialable reports whether something accepts connections at addr.
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func displayDir(dir string) string {
	if dir == "" {
		return "the working directory"
	}
	return dir
}

// tailBuffer keeps the last max bytes written to it, from a line start.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		cut := t.buf[over:]
		if i := bytes.IndexByte(cut, '\n'); i >= 0 && i+1 < len(cut) {
			cut = cut[i+1:]
		}
		t.buf = append([]byte(nil), cut...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// apiOrigin is the scheme and host a reconcile.api URL starts with, or "".
func apiOrigin(v *ir.Value) string {
	lead := ""
	switch {
	case v == nil:
	case v.Kind == ir.Literal:
		lead, _ = v.Literal.(string)
	case v.Kind == ir.Interpolation && len(v.Parts) > 0:
		lead = v.Parts[0].Text
	}
	scheme, rest, ok := strings.Cut(lead, "://")
	if !ok {
		return ""
	}
	host, _, complete := strings.Cut(rest, "/")
	if !complete && len(v.Parts) > 1 {
		return "" // the host goes on in an expression
	}
	return scheme + "://" + host
}
