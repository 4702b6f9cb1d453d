package assets

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/mod/modfile"
)

// heartbeat is how often a running build says it is still alive. A first
// build of kube-apiserver is silent for minutes otherwise.
const heartbeat = 30 * time.Second

// builder runs the go command for Ensure.
type builder struct {
	goCmd    string
	progress *printer
	// logDir keeps the full output of each go build, for when one fails.
	logDir string
}

// env is the environment of every go command the builder runs.
func (b *builder) env() []string {
	return append(os.Environ(),
		// The throwaway module starts with an empty go.sum; let the go
		// command fill it in.
		"GOFLAGS=-mod=mod",
		// Build with the toolchain that is installed, never download
		// another one.
		"GOTOOLCHAIN=local",
		// A go.work above the temporary directory must not pull the
		// build into someone's workspace.
		"GOWORK=off",
		// Static binaries, as Kubernetes releases them.
		"CGO_ENABLED=0",
		// The binaries run here, whatever the caller cross-compiles for.
		"GOOS="+runtime.GOOS,
		"GOARCH="+runtime.GOARCH,
	)
}

// module is a throwaway main module that requires the module to build.
type module struct {
	dir string
	// path is the required module's path.
	path string
	// upstreamDir is the required module's directory in the module cache.
	upstreamDir string
	// replaces maps a module path to the version it is replaced with.
	replaces map[string]string
}

func (m *module) remove() { os.RemoveAll(m.dir) }

// newModule creates a module in a temporary directory that requires
// path@version. Its go and godebug lines are copied from the required
// module's own go.mod, so the binaries get the language version and
// GODEBUG defaults their authors release them with. replaces, when not nil,
// derives replace directives from that go.mod.
func (b *builder) newModule(ctx context.Context, path, version string, replaces func(*modfile.File) map[string]string) (*module, error) {
	dir, err := os.MkdirTemp("", "inrun-assets-")
	if err != nil {
		return nil, err
	}
	m := &module{dir: dir, path: path}
	const name = "inrun-controlplane-assets"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+name+"\n"), 0o644); err != nil {
		m.remove()
		return nil, err
	}

	b.progress.printf("      downloading %s@%s", path, version)
	out, err := b.run(ctx, dir, "mod", "download", "-json", path+"@"+version)
	if err != nil {
		m.remove()
		return nil, err
	}
	var info struct {
		Dir, GoMod, Error string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		m.remove()
		return nil, fmt.Errorf("reading go mod download output: %w", err)
	}
	if info.Error != "" {
		m.remove()
		return nil, fmt.Errorf("downloading %s@%s: %s", path, version, info.Error)
	}
	m.upstreamDir = info.Dir
	data, err := os.ReadFile(info.GoMod)
	if err != nil {
		m.remove()
		return nil, err
	}
	// Parse, not ParseLax: the lax parser drops the godebug and replace
	// lines this needs.
	upstream, err := modfile.Parse(info.GoMod, data, nil)
	if err != nil {
		m.remove()
		return nil, err
	}

	f := &modfile.File{}
	if err := f.AddModuleStmt(name); err != nil {
		m.remove()
		return nil, err
	}
	if upstream.Go != nil {
		if err := f.AddGoStmt(upstream.Go.Version); err != nil {
			m.remove()
			return nil, err
		}
	}
	for _, d := range upstream.Godebug {
		if err := f.AddGodebug(d.Key, d.Value); err != nil {
			m.remove()
			return nil, err
		}
	}
	f.AddNewRequire(path, version, false)
	if replaces != nil {
		m.replaces = replaces(upstream)
		paths := make([]string, 0, len(m.replaces))
		for p := range m.replaces {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			if err := f.AddReplace(p, "", p, m.replaces[p]); err != nil {
				m.remove()
				return nil, err
			}
		}
	}
	f.Cleanup()
	gomod, err := f.Format()
	if err != nil {
		m.remove()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		m.remove()
		return nil, err
	}
	return m, nil
}

// run runs a short go command in dir and returns its standard output.
func (b *builder) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, b.goCmd, args...)
	cmd.Dir = dir
	cmd.Env = b.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.Bytes(), 20))
	}
	return out, nil
}

// goBuild runs go build -v in mod and writes the binaries to output (a
// directory ending in a separator, or a file). While it runs, it prints a
// heartbeat naming what is being built, for how long, and how many
// packages are done; go build -v prints one line per package.
func (b *builder) goBuild(ctx context.Context, mod *module, what, output, ldflags string, pkgs ...string) error {
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(b.logDir, "build-"+strings.ReplaceAll(mod.path, "/", "-")+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()

	args := []string{"build", "-v", "-o", output}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	args = append(args, pkgs...)
	fmt.Fprintf(logFile, "# in %s: go %s\n", mod.dir, strings.Join(args, " "))

	counter := &lineCounter{}
	cmd := exec.CommandContext(ctx, b.goCmd, args...)
	cmd.Dir = mod.dir
	cmd.Env = b.env()
	cmd.Stdout = io.MultiWriter(logFile, counter)
	cmd.Stderr = cmd.Stdout
	cmd.WaitDelay = 10 * time.Second

	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(heartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				b.progress.printf("      still building %s (%s, %s)...", what, since(start), counter.status())
			}
		}
	})
	err = cmd.Run()
	close(stop)
	wg.Wait()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logFile.Sync()
		data, _ := os.ReadFile(logPath)
		return fmt.Errorf("go build failed: %v\n%s\n(full log: %s)", err, tail(data, 30), logPath)
	}
	return nil
}

// lineCounter counts the packages go build -v reports and the modules the
// go command downloads, for the heartbeat.
type lineCounter struct {
	partial    []byte
	packages   atomic.Int64
	downloaded atomic.Int64
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		line := c.partial[:i]
		c.partial = c.partial[i+1:]
		switch {
		case bytes.HasPrefix(line, []byte("go: downloading ")):
			c.downloaded.Add(1)
		case len(line) > 0 && !bytes.HasPrefix(line, []byte("go: ")) && !bytes.HasPrefix(line, []byte("#")):
			c.packages.Add(1)
		}
	}
	return len(p), nil
}

func (c *lineCounter) status() string {
	if n := c.packages.Load(); n > 0 {
		return fmt.Sprintf("%d packages compiled", n)
	}
	return fmt.Sprintf("downloading modules, %d so far", c.downloaded.Load())
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	var lines []string
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// printer writes progress lines; the heartbeat writes from its own
// goroutine.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}
