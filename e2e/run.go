package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/inputfile"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/simulate"
)

// DefaultFile is the e2e file Run reads when Options.File is empty.
const DefaultFile = "test/e2e.yaml"

// DefaultPollInterval is how often a step's expectations are checked.
const DefaultPollInterval = 250 * time.Millisecond

// Options configure Run.
type Options struct {
	// Blueprint is the Blueprint under test. Required.
	Blueprint *ir.Blueprint
	// File is the e2e file. Default DefaultFile.
	File string

	// The cluster: Config when set; else the cluster of Context in
	// Kubeconfig ($KUBECONFIG or ~/.kube/config when empty) when either is
	// set; else a Full local control plane started for the run and stopped
	// after it.
	Config     *rest.Config
	Kubeconfig string
	Context    string
	// AssetsDir holds the local control plane's binaries. Default
	// assets.DefaultDir.
	AssetsDir string
	// BuildAssets builds missing control plane binaries before starting
	// the local control plane, which takes minutes the first time. Without
	// it a missing binary is an error that says how to build them.
	BuildAssets bool

	// Runtime reconciles while the cases run. Default: InProcess with
	// Blueprint and the Blueprints it uses (ir.WithUsed). NoRuntime when an
	// operator already runs on the cluster.
	Runtime Runtime

	// SkipIdleCheck turns off the idle check that ends every step which
	// leaves the custom resource in place, when the Runtime is a Counter
	// (see Counter).
	SkipIdleCheck bool

	// Timeout, when set, replaces every step's timeout.
	Timeout time.Duration
	// PollInterval is how often expectations are checked. Default
	// DefaultPollInterval.
	PollInterval time.Duration
	// Select runs only the cases whose name it matches; nil runs all.
	Select *regexp.Regexp
	// Keep leaves the cases' namespaces, and the local control plane and
	// the runtime, up after the cases, prints how to reach them, and waits
	// for ctx to end before stopping the control plane and the runtime.
	Keep bool

	// ReconcilerOutput receives what the file's reconciler process writes.
	// Default: discarded, but for its last lines, printed after the cases
	// when one failed.
	ReconcilerOutput io.Writer

	// Out receives the results: a line per case and step, the failures,
	// and the summary. Default: discarded.
	Out io.Writer
	// Progress receives what happens before the cases: the control plane
	// starting, the runtime starting. Default Out.
	Progress io.Writer
}

func (o *Options) setDefaults() error {
	if o.Blueprint == nil {
		return errors.New("e2e: Options.Blueprint is required")
	}
	if o.File == "" {
		o.File = DefaultFile
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Progress == nil {
		o.Progress = o.Out
	}
	if o.Runtime == nil {
		o.Runtime = &InProcess{Blueprints: ir.WithUsed([]*ir.Blueprint{o.Blueprint})}
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	return nil
}

// Report is the outcome of a run.
type Report struct {
	// File is the e2e file, as given.
	File  string
	Cases []*CaseResult
	// Duration is the whole run's, the cluster's start included.
	Duration time.Duration
}

// Passed returns how many cases passed.
func (r *Report) Passed() int {
	n := 0
	for _, c := range r.Cases {
		if c.Passed() {
			n++
		}
	}
	return n
}

// Failed returns how many cases failed.
func (r *Report) Failed() int { return len(r.Cases) - r.Passed() }

// Summary is the run's last line: "<file>: N passed, M failed in <duration>".
func (r *Report) Summary() string {
	return fmt.Sprintf("%s: %d passed, %d failed in %s", r.File, r.Passed(), r.Failed(), r.Duration.Round(100*time.Millisecond))
}

// Run runs the cases of an e2e file on a real API server and prints their
// results to opts.Out as they come. Every problem with the file, the kinds
// it names included, is reported before any cluster starts (on an existing
// cluster, kinds beyond the built-in ones and the Blueprint's are looked
// up there first).
//
// Failing cases are not an error: they are in the Report. The error is for
// what stopped the run: a bad file, an unreachable cluster, a runtime that
// did not start, or ctx ending during the cases.
func Run(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if opts.Runtime == NoRuntime && !opts.existing() {
		return nil, errors.New("without a runtime the cases need a cluster where an operator already runs (--context); a local control plane started for the run has none")
	}
	data, err := inputfile.Read(opts.File)
	if err != nil {
		return nil, unreadable(opts.File, err)
	}
	var diags diag.List
	f := parse(opts.File, data, &diags)
	if f != nil {
		diags = append(diags, f.check(opts.Blueprint, !opts.existing())...)
	}
	if err := diags.Err(); err != nil {
		return nil, err
	}
	var cases []*Case
	for i := range f.Cases {
		if opts.Select == nil || opts.Select.MatchString(f.Cases[i].Name) {
			cases = append(cases, &f.Cases[i])
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%s: no case matches %q", opts.File, opts.Select)
	}

	var t *target
	if opts.existing() {
		if t, err = connect(&opts); err != nil {
			return nil, err
		}
		served, err := servedBy(t.cfg)
		if err != nil {
			return nil, err
		}
		if err := f.checkKinds(opts.Blueprint, served, opts.Runtime != NoRuntime).Err(); err != nil {
			return nil, err
		}
	} else {
		if t, err = startLocal(ctx, &opts); err != nil {
			return nil, err
		}
		defer func() {
			fmt.Fprintln(opts.Progress, "Stopping the local control plane.")
			if err := t.local.Stop(); err != nil {
				fmt.Fprintf(opts.Progress, "stopping the local control plane: %v\n", err)
			}
		}()
		// client-go knows API versions the server no longer serves, such
		// as extensions/v1beta1; the server has the last word.
		served, err := servedBy(t.cfg)
		if err != nil {
			return nil, err
		}
		if err := f.checkKinds(opts.Blueprint, served, opts.Runtime != NoRuntime).Err(); err != nil {
			return nil, err
		}
	}

	runtime := opts.Runtime
	var proc *simulate.Process
	switch {
	case f.Reconciler != nil && runtime == NoRuntime:
		fmt.Fprintln(opts.Progress, "Not starting the file's reconciler: without a runtime, the operator on the cluster calls its own.")
	case f.Reconciler != nil:
		if proc, runtime, err = startReconciler(ctx, &opts, f); err != nil {
			return nil, err
		}
		// Stopped after the runtime; the last call below reports the error.
		defer proc.Stop()
	}

	if opts.Runtime != NoRuntime {
		fmt.Fprintf(opts.Progress, "Starting the runtime for Blueprint %s (%s %s) on %s.\n", opts.Blueprint.Name, opts.Blueprint.Resource.Kind, opts.Blueprint.Resource.GroupVersionKind.GroupVersion(), t.name)
	}
	rtStart := time.Now()
	stopRuntime, err := runtime.Start(ctx, t.cfg)
	if err != nil {
		return nil, err
	}
	if opts.Runtime != NoRuntime {
		fmt.Fprintf(opts.Progress, "The runtime is ready (%s).\n", time.Since(rtStart).Round(100*time.Millisecond))
	}
	// Stopping twice is allowed; the last call below reports the error.
	defer stopRuntime()

	c, err := client.New(t.cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		return nil, err
	}
	r := &run{opts: &opts, file: f, c: c}
	if f.Gateway != nil {
		if r.gateway, err = startGateway(ctx, t.cfg, opts.Blueprint, f.Gateway); err != nil {
			return nil, err
		}
		fmt.Fprintf(opts.Progress, "The gateway serves target %s at %s.\n", r.gateway.target.Name(), r.gateway.url)
		defer r.gateway.close()
	}
	// A controller-runtime reconciler (reconcile.go.controller) does its
	// own writes, as its authors wrote it: the idle check is Inrun's
	// promise about its own.
	if counter, ok := runtime.(Counter); ok && !opts.SkipIdleCheck && opts.Blueprint.ControllerRef() == nil {
		r.counter = counter
	}
	rep := &Report{File: opts.File}
	var namespaces []string
	for _, tc := range cases {
		if ctx.Err() != nil {
			break
		}
		res := r.runCase(ctx, tc)
		rep.Cases = append(rep.Cases, res)
		if res.Namespace != "" {
			namespaces = append(namespaces, res.Namespace)
		}
	}
	rep.Duration = time.Since(start)
	if proc != nil && rep.Failed() > 0 {
		if out := strings.TrimRight(proc.Output(), "\n"); out != "" {
			fmt.Fprintf(opts.Out, "The reconciler's last output:\n        %s\n", strings.ReplaceAll(out, "\n", "\n        "))
		}
	}
	fmt.Fprintln(opts.Out, rep.Summary())
	if ctx.Err() != nil {
		return rep, fmt.Errorf("interrupted after %d of %d cases", len(rep.Cases), len(cases))
	}

	if opts.Keep {
		wait := t.local != nil || opts.Runtime != NoRuntime
		if proc != nil {
			fmt.Fprintf(opts.Out, "\nThe reconciler keeps serving %s until then.\n", proc.URL())
		}
		t.printKeepHints(opts.Out, namespaces, opts.Blueprint.Resource.Plural, wait)
		if wait {
			<-ctx.Done()
		}
	}
	// The runtime must not outlive the run; a runtime that failed on its
	// own made the cases fail, and says why here.
	if err := stopRuntime(); err != nil {
		return rep, err
	}
	if proc != nil {
		if err := proc.Stop(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// startReconciler starts the file's reconciler process for the run and
// returns it with the runtime to start: opts.Runtime, calling the process
// instead of the Blueprint's reconcile.url.
func startReconciler(ctx context.Context, opts *Options, f *File) (*simulate.Process, Runtime, error) {
	url, err := f.Reconciler.Endpoint(opts.Blueprint)
	if err != nil {
		return nil, nil, err
	}
	rt, err := withURL(opts.Runtime, opts.Blueprint, url)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(opts.Progress, "Starting the reconciler: %s, serving %s.\n", strings.Join(f.Reconciler.Command, " "), url)
	start := time.Now()
	p, err := f.Reconciler.Start(ctx, simulate.StartOptions{URL: url, BaseDir: filepath.Dir(f.Path), Output: opts.ReconcilerOutput})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	fmt.Fprintf(opts.Progress, "The reconciler is ready (%s).\n", time.Since(start).Round(100*time.Millisecond))
	return p, rt, nil
}

// URLRuntime is a Runtime that can be told where a Blueprint's remote
// reconciler listens, so that a file's reconciler block can start one.
type URLRuntime interface {
	Runtime
	// WithReconcilerURL returns a Runtime like this one, whose bp calls its
	// remote reconciler at url.
	WithReconcilerURL(bp *ir.Blueprint, url string) Runtime
}

// withURL returns rt with bp calling its remote reconciler at url.
func withURL(rt Runtime, bp *ir.Blueprint, url string) (Runtime, error) {
	u, ok := rt.(URLRuntime)
	if !ok {
		return nil, fmt.Errorf("the file's reconciler listens at %s, but a %T cannot be told where it is", url, rt)
	}
	return u.WithReconcilerURL(bp, url), nil
}

// WithReconcilerURL implements URLRuntime.
func (ip *InProcess) WithReconcilerURL(bp *ir.Blueprint, url string) Runtime {
	cp := *ip
	cp.Blueprints = make([]*ir.Blueprint, len(ip.Blueprints))
	for i, b := range ip.Blueprints {
		cp.Blueprints[i] = b
		if b == bp || b.Name == bp.Name {
			cp.Blueprints[i] = b.WithRemoteURL(url)
		}
	}
	return &cp
}

// servedBy returns a function that asks the cluster's discovery whether it
// serves a kind.
func servedBy(cfg *rest.Config) (func(schema.GroupVersionKind) bool, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	return func(gvk schema.GroupVersionKind) bool {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil || !meta.IsNoMatchError(err)
	}, nil
}

// run is the state of one Run once the cluster and the runtime are up.
type run struct {
	opts *Options
	file *File
	c    client.Client
	// counter is the runtime when the idle check runs; else nil.
	counter Counter
	// gateway is the file's gateway; nil when it has none.
	gateway *gatewayRun
}

// timeout returns how long step s may take.
func (r *run) timeout(s *Step) time.Duration {
	switch {
	case r.opts.Timeout > 0:
		return r.opts.Timeout
	case s.Timeout > 0:
		return s.Timeout
	case r.file.Timeout > 0:
		return r.file.Timeout
	}
	return DefaultTimeout
}

func (r *run) printf(format string, args ...any) {
	fmt.Fprintf(r.opts.Out, format, args...)
}
