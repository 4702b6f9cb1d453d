package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	// args are the flags as given.
	args       []string
	jsonPath   string
	quick      bool
	only       []string
	n          int
	window     time.Duration
	maxBackoff time.Duration
	apiDown    time.Duration
	inrun      string
	keepLogs   bool
}

// The defaults of the whole matrix, and of the quick subset (-quick).
var (
	full  = options{n: 300, window: 30 * time.Second, maxBackoff: 10 * time.Second, apiDown: 20 * time.Second}
	quick = options{n: 30, window: 6 * time.Second, maxBackoff: 2 * time.Second, apiDown: 5 * time.Second}
)

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{args: args}
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./faults [flags]\n\nRuns the fault matrix: each row a fault done to inrun run on a local control\nplane, what Inrun must do about it, and what it did.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	only := fs.String("only", "", "comma-separated rows to run (default: every row, or the quick ones with -quick): "+strings.Join(rowIDs(), ", "))
	fs.BoolVar(&o.quick, "quick", false, "run the quick subset, with fewer Widgets and shorter windows (what go test runs)")
	fs.StringVar(&o.jsonPath, "json", "", "write the rows, with every figure and message, as JSON to this file")
	fs.IntVar(&o.n, "n", 0, "Widgets converging when the runtime is killed, and when the leader is (default 300; 30 with -quick)")
	fs.DurationVar(&o.window, "window", 0, "how long to count reconciles while a fault lasts (default 30s; 6s with -quick)")
	fs.DurationVar(&o.maxBackoff, "max-backoff", 0, "the runtimes' --max-backoff (default 10s; 2s with -quick)")
	fs.DurationVar(&o.apiDown, "apiserver-down", 0, "how long kube-apiserver stays stopped (default 20s; 5s with -quick)")
	fs.StringVar(&o.inrun, "inrun", "", "the inrun binary to run (default: go build ./cmd/inrun first)")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep the runtimes' logs (they are kept anyway when a row fails)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	d := full
	if o.quick {
		d = quick
	}
	if o.n == 0 {
		o.n = d.n
	}
	if o.window == 0 {
		o.window = d.window
	}
	if o.maxBackoff == 0 {
		o.maxBackoff = d.maxBackoff
	}
	if o.apiDown == 0 {
		o.apiDown = d.apiDown
	}
	if o.n < 3 {
		return nil, fmt.Errorf("-n must be at least 3, not %d", o.n)
	}
	for _, id := range strings.Split(*only, ",") {
		id = strings.TrimSpace(id)
		switch {
		case id == "":
		case !slices.Contains(rowIDs(), id):
			return nil, fmt.Errorf("-only: unknown row %q; the rows are %s", id, strings.Join(rowIDs(), ", "))
		default:
			o.only = append(o.only, id)
		}
	}
	return o, nil
}

func main() {
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, opts, os.Stderr)
	if res != nil {
		printTable(os.Stdout, res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
}

// run runs the rows opts selects, one after another, on one control
// plane. Its error says whether any failed.
func run(ctx context.Context, opts *options, progress io.Writer) (*Results, error) {
	m := &matrix{opts: opts, out: progress}
	res := &Results{
		Started:           time.Now().UTC().Truncate(time.Second),
		Command:           strings.TrimSpace("go run ./faults " + strings.Join(opts.args, " ")),
		Quick:             opts.quick,
		N:                 opts.n,
		MaxBackoffSeconds: opts.maxBackoff.Seconds(),
		WindowSeconds:     opts.window.Seconds(),
		Machine:           describeMachine(),
	}
	failed := false
	defer func() { m.tearDown(failed || opts.keepLogs) }()
	if err := m.setUp(ctx); err != nil {
		failed = true
		return nil, err
	}
	for _, spec := range selected(opts) {
		m.printf("\n== %s: %s", spec.id, spec.fault)
		r := &Row{ID: spec.id, Fault: spec.fault, Expected: spec.expected}
		start := time.Now()
		err := spec.run(m, ctx, r)
		if err != nil && !errors.Is(err, errRow) {
			r.fail("%v", err)
		}
		r.Seconds = time.Since(start).Seconds()
		r.Measured = strings.Join(r.measured, "; ")
		r.Pass = len(r.Problems) == 0
		res.Rows = append(res.Rows, r)
		verdict := "pass"
		if !r.Pass {
			verdict = "FAIL: " + strings.Join(r.Problems, "; ")
			failed = true
		}
		m.printf("   %s\n   %s (%s)", r.Measured, verdict, round(time.Since(start)))
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
	}
	if opts.jsonPath != "" {
		if err := res.write(opts.jsonPath); err != nil {
			return res, err
		}
		m.printf("Wrote %s", opts.jsonPath)
	}
	if failed {
		return res, errors.New("some rows failed")
	}
	return res, nil
}
