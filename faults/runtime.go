package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/inrun/inrun/localcluster"
	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
)

// inrunProc is one `inrun run` process: the runtime under test, as people
// run it, so that it can be killed with SIGKILL.
type inrunProc struct {
	name       string
	cmd        *exec.Cmd
	metricsURL string
	logPath    string

	working chan struct{} // closed once its controllers' workers start
	// starts counts the times its workers started: more than once when
	// its Blueprints change in-process.
	starts  atomic.Int32
	exited  chan struct{}
	waitErr error
}

// workersStarted is what controller-runtime logs once a controller's
// caches are in sync and its workers run: with --leader-elect, only once
// it leads.
const workersStarted = "Starting workers"

// startInrun starts `inrun run` with args after the flags every runtime of
// the matrix gets, its log in the matrix's log directory.
func (m *matrix) startInrun(name string, args ...string) (*inrunProc, error) {
	metricsAddr, err := localcluster.FreeAddr()
	if err != nil {
		return nil, err
	}
	full := append([]string{"run",
		"--kubeconfig=" + m.kubeconfig,
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=0",
		"--max-backoff=" + m.opts.maxBackoff.String(),
	}, args...)
	cmd := exec.Command(m.inrun, full...)
	log, err := os.Create(filepath.Join(m.logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "$ inrun %s\n", strings.Join(full, " "))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	p := &inrunProc{name: name, cmd: cmd, metricsURL: "http://" + metricsAddr + "/metrics", logPath: log.Name(),
		working: make(chan struct{}), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if strings.Contains(sc.Text(), workersStarted) {
				p.starts.Add(1)
				once.Do(func() { close(p.working) })
			}
		}
		_, _ = io.Copy(log, stdout)
		p.waitErr = cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitWorking waits until the runtime's workers run.
func (p *inrunProc) waitWorking(ctx context.Context, timeout time.Duration) error {
	select {
	case <-p.working:
		return nil
	case <-p.exited:
		return p.exitError()
	case <-time.After(timeout):
		return fmt.Errorf("%s did not start its workers within %s; its log is %s", p.name, timeout, p.logPath)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// waitServing waits until the runtime serves its metrics, which it does
// before it is elected.
func (p *inrunProc) waitServing(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := p.stats(ctx); err == nil {
			return nil
		} else if !p.alive() || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *inrunProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *inrunProc) exitError() error {
	return fmt.Errorf("%s exited (%v); its log is %s:\n%s", p.name, p.waitErr, p.logPath, tail(p.logPath, 15))
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *inrunProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop shuts the runtime down as SIGTERM does in a Pod, killing it after
// a minute.
func (p *inrunProc) stop() {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.kill()
	}
}

// stats are a runtime's own figures, from its metrics endpoint.
type stats struct {
	// writes are the write requests its client sent, by "VERB resource".
	writes map[string]int64
	// reconciles sums controller_runtime_reconcile_total.
	reconciles int64
	// leader is true while it holds the leader-election Lease.
	leader bool
}

// notObjects are writes that persist no object of the Blueprint's: access
// reviews, Events (counted apart) and leader-election Leases.
var notObjects = []string{"selfsubjectaccessreviews", "events", "leases"}

// objectWrites counts the writes to custom resources and children.
func (s stats) objectWrites() int64 {
	var n int64
	for k, v := range s.writes {
		if !isNotObject(k) {
			n += v
		}
	}
	return n
}

// eventWrites counts the Events recorded.
func (s stats) eventWrites() int64 {
	var n int64
	for k, v := range s.writes {
		if strings.Contains(k, " events") {
			n += v
		}
	}
	return n
}

func isNotObject(key string) bool {
	for _, r := range notObjects {
		if strings.Contains(key, " "+r) {
			return true
		}
	}
	return false
}

// sub returns the writes of s not yet in before.
func (s stats) sub(before stats) stats {
	out := stats{writes: map[string]int64{}, reconciles: s.reconciles - before.reconciles, leader: s.leader}
	for k, v := range s.writes {
		if d := v - before.writes[k]; d != 0 {
			out.writes[k] = d
		}
	}
	return out
}

// stats scrapes the runtime's metrics.
func (p *inrunProc) stats(ctx context.Context) (stats, error) {
	if !p.alive() {
		return stats{}, p.exitError()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	families, err := runtimecontroller.ScrapeMetrics(ctx, p.metricsURL)
	if err != nil {
		return stats{}, err
	}
	return statsOf(families), nil
}

// statsOf reads the figures the matrix uses: runtime-lib's write counts,
// controller-runtime's reconciles and leader-election status.
func statsOf(families map[string]*dto.MetricFamily) stats {
	st := stats{writes: map[string]int64{}}
	label := func(m *dto.Metric, name string) string {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == name {
				return lp.GetValue()
			}
		}
		return ""
	}
	if mf := families[runtimecontroller.WritesMetric]; mf != nil {
		for _, m := range mf.GetMetric() {
			k := label(m, "verb") + " " + label(m, "resource")
			if g := label(m, "group"); g != "" {
				k += "." + g
			}
			if s := label(m, "subresource"); s != "" {
				k += "/" + s
			}
			st.writes[k] += int64(m.GetCounter().GetValue())
		}
	}
	if mf := families["controller_runtime_reconcile_total"]; mf != nil {
		for _, m := range mf.GetMetric() {
			st.reconciles += int64(m.GetCounter().GetValue())
		}
	}
	if mf := families["leader_election_master_status"]; mf != nil {
		for _, m := range mf.GetMetric() {
			st.leader = st.leader || m.GetGauge().GetValue() == 1
		}
	}
	return st
}

// describeWrites renders writes as "APPLY configmaps 3, PATCH widgets 1".
func describeWrites(w map[string]int64) string {
	keys := make([]string, 0, len(w))
	for k, v := range w {
		if v != 0 && !isNotObject(k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "none"
	}
	sortStrings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + strconv.FormatInt(w[k], 10)
	}
	return strings.Join(parts, ", ")
}

// The fields of the runtime's V(1) lines for its writes that name what
// was written: a child's object, or the custom resource itself.
var (
	childField = regexp.MustCompile(`"object": ?"([^"]+)"`)
	crField    = regexp.MustCompile(`"name": ?"([^"]+)"`)
)

// writeLines are those lines' messages, with the field each names.
var writeLines = map[string]*regexp.Regexp{
	"created child":   childField,
	"applied child":   childField,
	"wrote status":    crField,
	"added finalizer": crField,
}

// repeatedWrites reads a runtime's log and lists each write made more than
// once to the same object, with the lines that made them: where a runtime
// that wrote more than it needed did so.
func repeatedWrites(logPath string) []string {
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return []string{err.Error()}
	}
	lines := map[string][]string{}
	var order []string
	for _, line := range strings.Split(string(raw), "\n") {
		for msg, re := range writeLines {
			if !strings.Contains(line, "\t"+msg+"\t") {
				continue
			}
			if sub := re.FindStringSubmatch(line); sub != nil {
				key := msg + " " + sub[1]
				if lines[key] == nil {
					order = append(order, key)
				}
				lines[key] = append(lines[key], line)
			}
		}
	}
	var out []string
	for _, key := range order {
		if len(lines[key]) > 1 {
			out = append(out, fmt.Sprintf("%s %d times:\n%s", key, len(lines[key]), strings.Join(lines[key], "\n")))
		}
	}
	if len(out) == 0 {
		out = append(out, "no object written twice in its log")
	}
	return out
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
