package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/inrun/inrun/localcluster"
)

// operator is what the benchmark measures: the limit, in process, or an
// operator running as a subprocess.
type operator interface {
	// stats returns the operator's own count of its writes and reconciles.
	stats(ctx context.Context) (opStats, error)
	// pid is the process whose memory is the operator's.
	pid() int
	// inProcess is true when the process is the benchmark itself, whose
	// memory also holds the observer and the loader.
	inProcess() bool
	stop() error
}

// opStats are an operator's figures, counted by its own client.
type opStats struct {
	// Writes are the write requests its clients sent, by key.
	Writes counts
	// LastWrite is when it sent its last write.
	LastWrite time.Time
	// Reconciles is the sum of controller_runtime_reconcile_total, or -1
	// where there is no controller.
	Reconciles int64
	// Backlog is the work queued or in progress: workqueue_depth plus
	// controller_runtime_active_workers, or the limit's queued and running
	// jobs. An operator with a backlog is not quiet, writing or not.
	Backlog int64
}

// subprocess is an operator run as a process of its own: the hand-written
// operator and the interpreted runtime by the operator subcommand of this
// very binary, the compiled operator by the binary inrun build made.
type subprocess struct {
	kind       string
	cmd        *exec.Cmd
	metricsURL string
	// pprofURL serves heap profiles; "" for the compiled operator, which
	// serves none.
	pprofURL string
	logPath  string
	exited   chan struct{}
	waitErr  error
}

// operatorSettings are what an operator is told.
type operatorSettings struct {
	kind       string
	kubeconfig string
	blueprint  string
	// binary is the compiled operator.
	binary     string
	workers    int
	qps        float64
	headless   bool
	cpuprofile string
	// metricsAddr is where the operator subcommand serves metrics.
	metricsAddr string
	logDir      string
	// round numbers the log of a later round.
	round int
	// label names the run in log files: its kind, or with -paired the
	// hand-written operator beside another kind.
	label string
	// namespace, when set, confines the operator to it (-paired).
	namespace string
}

// compiledReady is what controller-runtime logs once a controller's caches
// are in sync and its workers start: the compiled operator's ready line.
const compiledReady = "Starting workers"

// startSubprocess starts an operator and waits until its caches are in
// sync. Its stdout and stderr go to a log in s.logDir.
func startSubprocess(ctx context.Context, s operatorSettings) (*subprocess, error) {
	metricsAddr, err := localcluster.FreeAddr()
	if err != nil {
		return nil, err
	}
	var (
		cmd *exec.Cmd
		// ready reads a line of output and says whether the operator is
		// ready, and where it serves heap profiles.
		ready func(line string) (pprofURL string, ok bool)
	)
	if s.kind == kindCompiled {
		cmd = exec.Command(s.binary,
			"--kubeconfig="+s.kubeconfig,
			"--metrics-bind-address="+metricsAddr,
			"--health-probe-bind-address=0",
			"--workers="+strconv.Itoa(s.workers),
			// Info level and JSON, as the other operators log.
			"--zap-devel=false",
		)
		if s.namespace != "" {
			cmd.Args = append(cmd.Args, "--namespace="+s.namespace)
		}
		ready = func(line string) (string, bool) { return "", strings.Contains(line, compiledReady) }
	} else {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		args := []string{operatorCommand,
			"-kind", s.kind,
			"-kubeconfig", s.kubeconfig,
			"-blueprint", s.blueprint,
			"-workers", strconv.Itoa(s.workers),
			"-qps", strconv.FormatFloat(s.qps, 'g', -1, 64),
			"-metrics-addr", metricsAddr,
		}
		if s.headless {
			args = append(args, "-headless")
		}
		if s.namespace != "" {
			args = append(args, "-namespace", s.namespace)
		}
		if s.cpuprofile != "" {
			args = append(args, "-cpuprofile", s.cpuprofile)
		}
		cmd = exec.Command(exe, args...)
		ready = func(line string) (string, bool) { return strings.CutPrefix(line, readyLine) }
	}
	label := cmp.Or(s.label, s.kind)
	logName := label + ".log"
	if s.round > 1 {
		logName = fmt.Sprintf("%s.%d.log", label, s.round)
	}
	log, err := os.Create(filepath.Join(s.logDir, logName))
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	p := &subprocess{kind: s.kind, cmd: cmd, metricsURL: "http://" + metricsAddr + "/metrics", logPath: log.Name(), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting the %s operator: %w", s.kind, err)
	}
	readyURL := make(chan string, 2)
	var mu sync.Mutex
	var copying sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		copying.Go(func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
			for sc.Scan() {
				mu.Lock()
				fmt.Fprintln(log, sc.Text())
				mu.Unlock()
				if url, ok := ready(sc.Text()); ok {
					select {
					case readyURL <- url:
					default:
					}
				}
			}
			// Keep the pipe drained until the process exits.
			_, _ = io.Copy(io.Discard, r)
		})
	}
	go func() {
		// Wait may close the pipes only once they are read to the end.
		copying.Wait()
		p.waitErr = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	select {
	case p.pprofURL = <-readyURL:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("the %s operator exited while starting (%v); its log is %s:\n%s", s.kind, p.waitErr, p.logPath, tail(p.logPath, 20))
	case <-time.After(2 * time.Minute):
		p.stop()
		return nil, fmt.Errorf("the %s operator did not sync its caches in 2 minutes; its log is %s", s.kind, p.logPath)
	case <-ctx.Done():
		p.stop()
		return nil, context.Cause(ctx)
	}
}

func (p *subprocess) stats(ctx context.Context) (opStats, error) {
	select {
	case <-p.exited:
		return opStats{}, fmt.Errorf("the %s operator exited (%v); its log is %s:\n%s", p.kind, p.waitErr, p.logPath, tail(p.logPath, 20))
	default:
	}
	st, err := scrapeStats(ctx, p.metricsURL)
	if err != nil {
		return opStats{}, fmt.Errorf("reading the %s operator's metrics: %w", p.kind, err)
	}
	return st, nil
}

// heapProfile saves a heap profile of the operator, taken after a
// garbage collection, to path.
func (p *subprocess) heapProfile(ctx context.Context, path string) error {
	if p.pprofURL == "" {
		return fmt.Errorf("the %s operator serves no heap profile", p.kind)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.pprofURL+"debug/pprof/heap?gc=1", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile of the %s operator: %s", p.kind, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (p *subprocess) pid() int { return p.cmd.Process.Pid }

func (p *subprocess) inProcess() bool { return false }

// stop asks the operator to shut down, as a Pod's SIGTERM would, and kills
// it if it takes more than a minute.
func (p *subprocess) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("the %s operator did not stop within a minute of SIGTERM and was killed", p.kind)
	}
	var exit *exec.ExitError
	if errors.As(p.waitErr, &exit) {
		return fmt.Errorf("the %s operator failed (%v); its log is %s:\n%s", p.kind, p.waitErr, p.logPath, tail(p.logPath, 20))
	}
	return p.waitErr
}

// memory reads a process's current and peak resident set size.
func memory(pid int) (rss, peak int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(raw)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected %s line %q", name, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// cpuSeconds reads the CPU time, user and system, that a process has used.
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after it. utime and stime are fields 14 and 15 of the whole line.
	end := strings.LastIndexByte(string(raw), ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(raw[end+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	var ticks float64
	for _, v := range f[11:13] {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, err
		}
		ticks += t
	}
	// /proc reports clock ticks of USER_HZ, which is 100 on Linux.
	return ticks / 100, nil
}

// resetPeak starts a new peak RSS for pid (Linux: clear_refs 5), and
// reports whether it could.
func resetPeak(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
