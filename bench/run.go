package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// bench is one run of the benchmark: a control plane and what talks to it.
type bench struct {
	opts    *options
	out     io.Writer // progress
	cluster *localcluster.Cluster
	cfg     *rest.Config
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	loader  *loader
	logDir  string
	bpPath  string
	// compiled is the compiled operator's binary.
	compiled string
}

// buildCompiled builds the operator of bp, read from bpPath, as inrun build
// does, without its generated tests, into dir.
func buildCompiled(ctx context.Context, bp *ir.Blueprint, bpPath, dir string, progress io.Writer) (string, error) {
	fmt.Fprintf(progress, "Building the compiled operator (inrun build --skip-tests) in %s\n", dir)
	bin := filepath.Join(dir, "bin", "website-operator")
	_, err := codegen.Build(ctx, bp, os.DirFS(filepath.Dir(bpPath)), codegen.BuildOptions{
		Out:       filepath.Join(dir, "website-operator"),
		Binary:    bin,
		SkipTests: true,
		Progress:  progress,
	})
	if err != nil {
		return "", fmt.Errorf("building the compiled operator: %w", err)
	}
	return bin, nil
}

func run(ctx context.Context, opts *options, stdout, stderr io.Writer) error {
	bpPath, err := filepath.Abs(opts.blueprint)
	if err != nil {
		return err
	}
	logDir, err := os.MkdirTemp("", "inrun-bench-")
	if err != nil {
		return err
	}
	if opts.headless {
		if bpPath, err = headlessBlueprint(bpPath, filepath.Join(logDir, "headless")); err != nil {
			return fmt.Errorf("%w\n(run the benchmark from the repository root, or pass -blueprint)", err)
		}
	}
	bp, err := compiler.CompileFile(bpPath, compiler.Options{})
	if err != nil {
		return fmt.Errorf("%w\n(run the benchmark from the repository root, or pass -blueprint)", err)
	}
	b := &bench{opts: opts, out: stderr, logDir: logDir, bpPath: bpPath, compiled: opts.compiled}
	if slices.Contains(opts.only, kindCompiled) && b.compiled == "" {
		// Built before the control plane starts, so that a failed build
		// costs no cluster and the build's CPU is not measured.
		if b.compiled, err = buildCompiled(ctx, bp, bpPath, logDir, stderr); err != nil {
			return err
		}
	}
	results := &Results{
		N:             opts.n,
		Workers:       opts.workers,
		LimitWorkers:  limitWorkers,
		Loaders:       opts.loaders,
		QPS:           opts.qps,
		QuietSeconds:  opts.quiet.Seconds(),
		SettleSeconds: opts.settle.Seconds(),
		Headless:      opts.headless,
		Paired:        opts.paired,
		Started:       time.Now().UTC().Truncate(time.Second),
		Machine:       describeMachine(),
		CPUProfiles:   map[string]string{},
	}

	b.cluster, err = localcluster.Start(ctx, localcluster.Options{Mode: localcluster.Full, Progress: stderr})
	if err != nil {
		return err
	}
	defer func() {
		if err := b.cluster.Stop(); err != nil {
			fmt.Fprintln(stderr, "bench: stopping the control plane:", err)
		}
	}()
	b.cfg = b.cluster.RESTConfig()
	// The benchmark's own clients must never be what is slow.
	b.cfg.QPS = -1
	if b.cs, err = kubernetes.NewForConfig(b.cfg); err != nil {
		return err
	}
	loaderCfg := rest.CopyConfig(b.cfg)
	loaderCfg.UserAgent = "inrun-bench-loader"
	b.loader = &loader{workers: opts.loaders, writes: newWriteCounter()}
	b.loader.writes.instrument(loaderCfg)
	if b.loader.dyn, err = dynamic.NewForConfig(loaderCfg); err != nil {
		return err
	}
	if b.dyn, err = dynamic.NewForConfig(b.cfg); err != nil {
		return err
	}
	if err := runner.InstallCRDs(ctx, b.cfg, []*ir.Blueprint{bp}); err != nil {
		return err
	}
	if err := b.warmUp(ctx); err != nil {
		return err
	}

	failed := false
rounds:
	for round := 1; round <= opts.rounds; round++ {
		kinds := slices.Clone(opts.only)
		if round%2 == 0 {
			// Whatever the control plane carries over from one run to the
			// next weighs on every kind alike.
			slices.Reverse(kinds)
		}
		if opts.rounds > 1 {
			b.printf("\n== round %d of %d", round, opts.rounds)
		}
		for _, kind := range kinds {
			var (
				runs []*Run
				err  error
			)
			switch {
			case opts.paired && kind == kindHandwritten:
				continue // it runs beside each of the others
			case opts.paired:
				runs, err = b.runPair(ctx, kind, round)
			default:
				var r *Run
				r, err = b.run(ctx, kind, round)
				if r == nil {
					r = &Run{Kind: kind}
				}
				runs = []*Run{r}
			}
			for _, r := range runs {
				r.Round = round
				if err != nil && r.Error == "" {
					r.Error = err.Error()
				}
			}
			results.Runs = append(results.Runs, runs...)
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				failed = true
				fmt.Fprintf(stderr, "bench: %s: %v\n", kind, err)
				if errors.Is(err, errLeftovers) {
					fmt.Fprintln(stderr, "bench: stopping: the next runs would find these objects")
					break rounds
				}
			}
			if opts.cpuprofile != "" && kind != kindLimit {
				for _, r := range runs {
					if label := r.label(); r.Kind != kindCompiled {
						results.CPUProfiles[fmt.Sprintf("%s/%d", label, round)] = b.profilePath(label, round)
					}
				}
			}
		}
	}

	printTable(stdout, results)
	if opts.jsonPath != "" {
		if err := results.write(opts.jsonPath); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Wrote %s\n", opts.jsonPath)
	}
	if failed {
		fmt.Fprintf(stderr, "The operators' logs are in %s\n", logDir)
		return errors.New("some runs failed")
	}
	if opts.keepLogs {
		fmt.Fprintf(stderr, "The operators' logs are in %s\n", logDir)
	} else {
		os.RemoveAll(logDir)
	}
	return nil
}

func (b *bench) profilePath(kind string, round int) string {
	if round > 1 {
		kind += "." + strconv.Itoa(round)
	}
	return b.opts.cpuprofile + "." + kind + ".pprof"
}

func (b *bench) printf(format string, args ...any) {
	fmt.Fprintf(b.out, format+"\n", args...)
}

// trial is one operator under measure: its namespace, the observer of
// its Websites, and the operator itself.
type trial struct {
	// label names its namespace, log and profiles: the kind, or with
	// -paired the hand-written operator beside another kind.
	label           string
	ns              string
	obs             *observer
	op              operator
	created, edited func(*unstructured.Unstructured)
	run             *Run
	stopped         bool
}

// run measures one kind in a namespace of its own, and deletes everything
// it made before it returns.
func (b *bench) run(ctx context.Context, kind string, round int) (_ *Run, retErr error) {
	t, err := b.start(ctx, kind, "", round)
	if t == nil {
		return nil, err
	}
	defer func() {
		if err := b.finish(ctx, t); err != nil && retErr == nil {
			retErr = err
		}
	}()
	if err != nil {
		return t.run, err
	}
	if err := b.phases(ctx, round, []*trial{t}); err != nil {
		return t.run, err
	}
	return t.run, t.stopOp()
}

// runPair measures kind and a hand-written operator side by side
// (-paired): each in its namespace, both loaded at the same moment. The
// hand-written operator's Run is the first returned.
func (b *bench) runPair(ctx context.Context, kind string, round int) (_ []*Run, retErr error) {
	var trials []*trial
	defer func() {
		for _, t := range trials {
			if err := b.finish(ctx, t); err != nil && retErr == nil {
				retErr = err
			}
		}
	}()
	runs := func() []*Run {
		out := []*Run{{Kind: kindHandwritten, Beside: kind}, {Kind: kind}}
		for i, t := range trials {
			out[i] = t.run
		}
		return out
	}
	for _, k := range []string{kindHandwritten, kind} {
		t, err := b.start(ctx, k, kind, round)
		if t != nil {
			trials = append(trials, t)
		}
		if err != nil {
			return runs(), err
		}
	}
	if err := b.phases(ctx, round, trials); err != nil {
		return runs(), err
	}
	for _, t := range trials {
		if err := t.stopOp(); err != nil {
			return runs(), err
		}
	}
	return runs(), nil
}

// start makes a trial's namespace and observer and starts its operator;
// with beside set (-paired) the operator is confined to the namespace. It
// returns the trial whenever there is something for finish to undo.
func (b *bench) start(ctx context.Context, kind, beside string, round int) (*trial, error) {
	t := &trial{run: &Run{Kind: kind}}
	if kind == kindHandwritten {
		t.run.Beside = beside
	}
	t.label = t.run.label()
	t.ns = "bench-" + t.label
	b.printf("\n== %s: %d Websites in namespace %s", t.label, b.opts.n, t.ns)
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.ns}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var err error
	if t.obs, err = observe(ctx, b.dyn, t.ns); err != nil {
		return t, err
	}
	begin := time.Now()
	if kind == kindLimit {
		l, err := startLimit(ctx, b.cfg, t.ns, b.opts.n, b.opts.headless)
		if err != nil {
			return t, err
		}
		t.op, t.created, t.edited = l, l.created, l.edited
	} else {
		s := operatorSettings{
			kind:       kind,
			label:      t.label,
			kubeconfig: b.cluster.KubeconfigPath(),
			blueprint:  b.bpPath,
			binary:     b.compiled,
			workers:    b.opts.workers,
			headless:   b.opts.headless,
			qps:        b.opts.qps,
			logDir:     b.logDir,
			round:      round,
		}
		if beside != "" {
			s.namespace = t.ns
		}
		if b.opts.cpuprofile != "" && kind != kindCompiled {
			if s.cpuprofile, err = filepath.Abs(b.profilePath(t.label, round)); err != nil {
				return t, err
			}
		}
		p, err := startSubprocess(ctx, s)
		if err != nil {
			return t, err
		}
		t.op = p
	}
	t.run.InProcess = t.op.inProcess()
	b.printf("%s is ready (%s)", t.label, time.Since(begin).Round(100*time.Millisecond))
	return t, nil
}

// phases runs the create phase and then the edit phase of the trials, all
// trials' phases at once, and takes heap profiles in between.
func (b *bench) phases(ctx context.Context, round int, trials []*trial) error {
	if err := b.together(ctx, trials, func(ctx context.Context, t *trial, begin func()) (err error) {
		t.run.Create, err = b.phase(ctx, t.label, "create", t.op, t.obs, 1, len(trials) > 1, begin, func(ctx context.Context) error {
			return b.loader.create(ctx, t.ns, b.opts.n, t.created)
		})
		return err
	}); err != nil {
		return err
	}
	for _, t := range trials {
		if p, ok := t.op.(*subprocess); ok && b.opts.memprofile != "" && p.pprofURL != "" {
			path := b.opts.memprofile + "." + t.label + ".heap.pprof"
			if round > 1 {
				path = b.opts.memprofile + "." + t.label + "." + strconv.Itoa(round) + ".heap.pprof"
			}
			if err := p.heapProfile(ctx, path); err != nil {
				return err
			}
			b.printf("   wrote %s", path)
		}
		resetPeak(t.op.pid())
	}
	return b.together(ctx, trials, func(ctx context.Context, t *trial, begin func()) (err error) {
		t.run.Edit, err = b.phase(ctx, t.label, "edit", t.op, t.obs, 2, len(trials) > 1, begin, func(ctx context.Context) error {
			return b.loader.edit(ctx, t.ns, b.opts.n, 2, t.edited)
		})
		return err
	})
}

// together runs f for each trial at once and returns their errors. f
// calls begin when it is about to load; begin returns once every trial's f
// has called it, so that the loads start at the same moment.
func (b *bench) together(ctx context.Context, trials []*trial, f func(ctx context.Context, t *trial, begin func()) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var arrived sync.WaitGroup
	arrived.Add(len(trials))
	begin := func() {
		arrived.Done()
		arrived.Wait()
	}
	errs := make([]error, len(trials))
	var wg sync.WaitGroup
	for i, t := range trials {
		wg.Go(func() {
			var once sync.Once
			errs[i] = f(ctx, t, func() { once.Do(begin) })
			// A trial that failed before it began lets the others go.
			once.Do(arrived.Done)
			if errs[i] != nil {
				cancel(errs[i])
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopOp stops the trial's operator.
func (t *trial) stopOp() error {
	if t.stopped || t.op == nil {
		return nil
	}
	t.stopped = true
	return t.op.stop()
}

// finish stops the trial's operator if it still runs and deletes its
// namespace.
func (b *bench) finish(ctx context.Context, t *trial) error {
	_ = t.stopOp()
	if t.obs != nil {
		t.obs.stop()
	}
	return b.cleanup(context.WithoutCancel(ctx), t.ns)
}

// sample is what the benchmark reads at one moment.
type sample struct {
	at     time.Time
	server counts
	op     opStats
	loader counts
	// cpu is the CPU time used by the operator's process ("operator") and
	// each control plane component, by name.
	cpu map[string]float64
}

func (b *bench) sample(ctx context.Context, op operator) (sample, error) {
	s := sample{at: time.Now()}
	var err error
	if s.server, err = apiserverRequests(ctx, b.cs.Discovery().RESTClient()); err != nil {
		return s, err
	}
	if s.op, err = op.stats(ctx); err != nil {
		return s, err
	}
	s.loader, _ = b.loader.writes.snapshot()
	s.cpu = map[string]float64{}
	if !op.inProcess() {
		if v, err := cpuSeconds(op.pid()); err == nil {
			s.cpu[operatorCPU] = v
		}
	}
	for _, c := range b.cluster.Components() {
		if v, err := cpuSeconds(c.PID); err == nil {
			s.cpu[c.Name] += v
		}
	}
	return s, nil
}

// operatorCPU names the operator's process among the CPU figures.
const operatorCPU = "operator"

// operatorWrites are the writes to a Website's objects the API server
// served between two samples, less the loader's own.
func operatorWrites(from, to sample) counts {
	server := to.server.sub(from.server)
	loader := to.loader.sub(from.loader)
	out := counts{}
	for k, v := range server {
		if writeVerbs[k.Verb] {
			out[k] = v - loader[k]
		}
	}
	return out
}

// phase creates or edits the Websites with load and measures until the
// operator is quiet again.
//
// shared says another operator runs on the same control plane at the same
// time (-paired): the API server's figures are then both operators', and
// the phase is marked so. begin, when not nil, is called just before
// loading (see together).
func (b *bench) phase(ctx context.Context, kind, name string, op operator, obs *observer, gen int64, shared bool, begin func(), load func(context.Context) error) (*Phase, error) {
	b.printf("-- %s %s", kind, name)
	ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
	defer cancel()
	before, err := b.sample(ctx, op)
	if err != nil {
		return nil, err
	}
	obs.expect(b.opts.n, gen)
	ph := &Phase{SharedControlPlane: shared}
	if begin != nil {
		begin()
	}
	start := time.Now()
	loaded := make(chan error, 1)
	go func() {
		err := load(ctx)
		ph.LoadSeconds = seconds(time.Since(start))
		loaded <- err
	}()

	// Until every Website reports Ready.
	tick := time.NewTicker(b.opts.progressDur)
	defer tick.Stop()
	loading := true
	for {
		seen, ready, at := obs.progress()
		if !at.IsZero() {
			ph.ReadySeconds = seconds(at.Sub(start))
			break
		}
		select {
		case err := <-loaded:
			if err != nil {
				return nil, err
			}
			loading = false
			b.printf("   %5.1fs  the loader is done (%d Websites)", time.Since(start).Seconds(), b.opts.n)
		case <-tick.C:
			st, err := op.stats(ctx)
			if err != nil {
				return nil, err
			}
			b.printf("   %5.1fs  %d/%d ready (%d exist), %d writes by %s", time.Since(start).Seconds(), ready, b.opts.n, seen, st.Writes.sum(func(requestKey) bool { return true }), kind)
		case <-obs.wait():
		case <-ctx.Done():
			return nil, fmt.Errorf("%s %s: %d of %d Websites ready after %s: %w", kind, name, ready, b.opts.n, b.opts.timeout, context.Cause(ctx))
		}
	}
	if loading {
		if err := <-loaded; err != nil {
			return nil, err
		}
	}
	b.printf("   %5.1fs  all %d Websites are ready", ph.ReadySeconds, b.opts.n)

	// Until the operator has written nothing for the settle window, by
	// the API server's count and by its own.
	last, err := b.sample(ctx, op)
	if err != nil {
		return nil, err
	}
	lastChange := last.at
	// lastBusy is the last sample that saw a backlog.
	var lastBusy time.Time
	if last.op.Backlog > 0 {
		lastBusy = last.at
	}
	for last.at.Sub(lastChange) < b.opts.settle {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			b.printf("   %s never settled", kind)
			return ph, fmt.Errorf("%s %s: still writing after %s", kind, name, b.opts.timeout)
		}
		s, err := b.sample(ctx, op)
		if err != nil {
			return nil, err
		}
		all := func(requestKey) bool { return true }
		if operatorWrites(last, s).sum(objectWrite) != 0 || s.op.Writes.sum(all) != last.op.Writes.sum(all) {
			lastChange = s.at
		}
		if s.op.Backlog > 0 {
			lastChange, lastBusy = s.at, s.at
		}
		last = s
	}
	// Quiet from the last write, or from the last backlog seen if that
	// came later.
	quietFrom := last.op.LastWrite
	if lastBusy.After(quietFrom) {
		quietFrom = lastBusy
	}
	settled := quietFrom.Sub(start)
	if quietFrom.Before(start) {
		settled = 0
	}
	ph.SettledSeconds = seconds(settled)
	b.printf("   %5.1fs  %s went quiet (last write %.1fs); nothing written or queued for %s since", ph.SettledSeconds, kind, max(0, last.op.LastWrite.Sub(start).Seconds()), b.opts.settle)

	b.fill(ph, before, last)
	ph.StatusChanges = obs.changes()
	ph.StatusChangesPerCR = float64(ph.StatusChanges) / float64(b.opts.n)
	ph.RSSBytes, ph.PeakRSSBytes, _ = memory(op.pid())

	// The quiet window: nothing changes, and nothing must be written.
	if b.opts.quiet > 0 {
		b.printf("   watching a quiet window of %s", b.opts.quiet)
		select {
		case <-time.After(b.opts.quiet):
		case <-ctx.Done():
			return ph, context.Cause(ctx)
		}
		end, err := b.sample(ctx, op)
		if err != nil {
			return ph, err
		}
		ph.QuietWrites = operatorWrites(last, end).sum(objectWrite)
		ph.QuietClientWrites = end.op.Writes.sub(last.op.Writes).sum(func(k requestKey) bool { return writeVerbs[k.Verb] })
		if quiet := end.op.Writes.sub(last.op.Writes).byName(); len(quiet) > 0 {
			ph.QuietClientByRequest = quiet
		}
		b.printf("   quiet window: %d writes by the API server's count, %d by %s's", ph.QuietWrites, ph.QuietClientWrites, kind)
	}
	return ph, nil
}

// fill computes a phase's counts from the samples before and after it.
func (b *bench) fill(ph *Phase, before, after sample) {
	n := float64(b.opts.n)
	server := operatorWrites(before, after)
	client := after.op.Writes.sub(before.op.Writes)
	ph.Writes = server.sum(objectWrite)
	ph.WritesPerCR = float64(ph.Writes) / n
	ph.ClientWrites = client.sum(objectWrite)
	ph.ClientWritesPerCR = float64(ph.ClientWrites) / n
	ph.Events = client.sum(eventWrite)
	ph.EventsPerCR = float64(ph.Events) / n
	ph.OtherClientWrites = client.sum(func(k requestKey) bool { return writeVerbs[k.Verb] && !objectWrite(k) && !eventWrite(k) })
	if after.op.Reconciles >= 0 {
		ph.Reconciles = after.op.Reconciles - before.op.Reconciles
		ph.ReconcilesPerCR = float64(ph.Reconciles) / n
	} else {
		ph.Reconciles, ph.ReconcilesPerCR = -1, -1
	}
	ph.CPUSeconds = map[string]float64{}
	for name, v := range after.cpu {
		if was, ok := before.cpu[name]; ok {
			ph.CPUSeconds[name] = math.Round((v-was)*100) / 100
		}
	}
	ph.ControlPlaneWrites = server.sum(func(k requestKey) bool { return writeVerbs[k.Verb] }) - client.sum(func(k requestKey) bool { return writeVerbs[k.Verb] })
	ph.ControlPlaneWritesPerCR = float64(ph.ControlPlaneWrites) / n
	ph.ServerByRequest = server.byName()
	ph.ClientByRequest = client.byName()
}

// errLeftovers is a run's namespace not emptied: the runs after it would
// reconcile its Websites too, so the benchmark stops there.
var errLeftovers = errors.New("a run's objects are still on the control plane")

// cleanup deletes everything in namespace, then the namespace, and waits
// until it is gone. Deleting the objects directly, rather than leaving them
// to the namespace and garbage collectors, keeps the next run from
// sharing the control plane with a long tail of deletions.
func (b *bench) cleanup(ctx context.Context, ns string) error {
	start := time.Now()
	b.printf("-- deleting namespace %s", ns)
	// About 10 minutes, and more for the thousands of objects of a large N.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute+time.Duration(b.opts.n)*100*time.Millisecond)
	defer cancel()
	background := metav1.DeletePropagationBackground
	zero := int64(0)
	for _, gvr := range []schema.GroupVersionResource{
		websiteGVR,
		{Group: "apps", Version: "v1", Resource: "deployments"},
		{Group: "apps", Version: "v1", Resource: "replicasets"},
		{Version: "v1", Resource: "pods"},
		{Version: "v1", Resource: "services"},
	} {
		opts := metav1.DeleteOptions{PropagationPolicy: &background, GracePeriodSeconds: &zero}
		// A collection of thousands outlasts the API server's request
		// timeout; what it deleted by then stays deleted, so ask again.
		var last error
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			err := b.dyn.Resource(gvr).Namespace(ns).DeleteCollection(ctx, opts, metav1.ListOptions{})
			if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
				err = b.deleteEach(ctx, gvr, ns, opts)
			}
			if err != nil {
				b.printf("   deleting %s: %v; asking again", gvr.Resource, err)
				last = err
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("%w: deleting %s in %s: %w (last: %v)", errLeftovers, gvr.Resource, ns, err, last)
		}
	}
	if err := b.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%w: %w", errLeftovers, err)
	}
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := b.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("%w: namespace %s was not deleted: %w", errLeftovers, ns, err)
	}
	b.printf("   gone in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}

func (b *bench) deleteEach(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.DeleteOptions) error {
	list, err := b.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, item := range list.Items {
		if err := b.dyn.Resource(gvr).Namespace(ns).Delete(ctx, item.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func seconds(d time.Duration) float64 { return d.Round(10 * time.Millisecond).Seconds() }

// describeMachine says where the figures come from.
func describeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version()}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(raw))
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.Memory = strings.TrimSpace(v)
			}
		}
	}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return m
}
