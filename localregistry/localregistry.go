package localregistry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/inrun/inrun/localcluster/assets"
)

// Options configures Start.
type Options struct {
	// AssetsDir holds the registry binary. Defaults to assets.DefaultDir.
	AssetsDir string
	// StorageDir keeps the registry's content. Empty: a temporary
	// directory that Stop removes.
	StorageDir string
	// Address is the loopback host:port to listen on when it is free, so
	// that a registry started again is found where it was. Empty, or
	// taken: a free port.
	Address string
}

// Registry is a running registry.
type Registry struct {
	// Host is its host:port, a loopback address, served over plain HTTP.
	Host string

	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	tmp     string
	log     *syncBuffer
}

// syncBuffer keeps what the registry prints; the process writes it from
// exec's copying goroutine while Start and Log read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// startTimeout bounds how long a registry may take to answer; it starts in
// well under a second.
const startTimeout = 30 * time.Second

// Start runs a registry on a free loopback port and returns once it
// answers /v2/. A missing binary is an *assets.MissingError saying how to
// build it.
func Start(ctx context.Context, opts Options) (*Registry, error) {
	if opts.AssetsDir == "" {
		dir, err := assets.DefaultDir()
		if err != nil {
			return nil, err
		}
		opts.AssetsDir = dir
	}
	if err := assets.Check(opts.AssetsDir, assets.Registry); err != nil {
		return nil, err
	}
	r := &Registry{log: &syncBuffer{}}
	storage := opts.StorageDir
	tmp, err := os.MkdirTemp("", "inrun-registry-")
	if err != nil {
		return nil, err
	}
	r.tmp = tmp
	if storage == "" {
		storage = filepath.Join(tmp, "storage")
	}
	// A port picked free can be taken before the registry binds it; a
	// second try with another port settles that.
	for attempt := 0; ; attempt++ {
		addr := ""
		if attempt == 0 && opts.Address != "" && free(opts.Address) {
			addr = opts.Address
		}
		err := r.start(ctx, filepath.Join(opts.AssetsDir, assets.Registry), storage, addr)
		if err == nil {
			return r, nil
		}
		if attempt == 2 || ctx.Err() != nil {
			os.RemoveAll(r.tmp)
			return nil, err
		}
	}
}

func (r *Registry) start(ctx context.Context, bin, storage, addr string) error {
	r.Host = addr
	if addr == "" {
		port, err := freePort()
		if err != nil {
			return err
		}
		r.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %q
`, storage, r.Host)
	configPath := filepath.Join(r.tmp, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return err
	}
	r.log.Reset()
	cmd := exec.Command(bin, "serve", configPath)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	cmd.SysProcAttr = procAttr()
	// The registry reads OTEL_* and REGISTRY_* variables; neither the
	// caller's tracing nor its registry settings belong here.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.tmp, "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the registry: %w", err)
	}
	r.cmd = cmd
	r.done = make(chan struct{})
	go func() { r.waitErr = cmd.Wait(); close(r.done) }()

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(r.Host) {
			return nil
		}
		select {
		case <-r.done:
			return fmt.Errorf("the registry exited at start (%v): %s", r.waitErr, r.log.String())
		case <-ctx.Done():
			r.Stop()
			return ctx.Err()
		case <-deadline.C:
			r.Stop()
			return fmt.Errorf("the registry did not answer on %s within %s: %s", r.Host, startTimeout, r.log.String())
		case <-tick.C:
		}
	}
}

func ready(host string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + host + "/v2/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop ends the registry and removes its temporary directory (and so its
// storage, unless Options.StorageDir named one).
func (r *Registry) Stop() error {
	var err error
	if r.cmd != nil && r.cmd.Process != nil {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Signal(os.Interrupt)
			select {
			case <-r.done:
			case <-time.After(10 * time.Second):
				r.cmd.Process.Kill()
				<-r.done
			}
		}
	}
	if r.tmp != "" {
		err = os.RemoveAll(r.tmp)
	}
	return err
}

// Log returns what the registry printed.
func (r *Registry) Log() string { return r.log.String() }

// free reports whether addr can be listened on now.
func free(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("no TCP port")
	}
	return addr.Port, nil
}
