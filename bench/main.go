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

// The ways of reconciling that the benchmark compares, in the order it
// runs them.
const (
	kindLimit       = "limit"
	kindHandwritten = "handwritten"
	kindInterpreted = "interpreted"
	kindCompiled    = "compiled"
)

// runnable are the kinds, in the order they run.
var runnable = []string{kindLimit, kindHandwritten, kindInterpreted, kindCompiled}

// options are the command's flags.
type options struct {
	n           int
	jsonPath    string
	only        []string
	quiet       time.Duration
	settle      time.Duration
	timeout     time.Duration
	workers     int
	loaders     int
	qps         float64
	blueprint   string
	cpuprofile  string
	memprofile  string
	compiled    string
	rounds      int
	keepLogs    bool
	progressDur time.Duration
	headless    bool
	paired      bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./bench [flags]\n\nMeasures how Website custom resources converge under a raw client (the limit),\na hand-written controller-runtime operator, Inrun's interpreted runtime (inrun run)\nand the operator inrun build compiles from the same Blueprint.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	only := fs.String("only", strings.Join(runnable, ","), "comma-separated kinds to run: "+strings.Join(runnable, ", "))
	fs.IntVar(&o.n, "n", 1000, "Websites to create")
	fs.IntVar(&o.rounds, "rounds", 1, "run every kind this many times, every other round in reverse order, and report medians")
	fs.StringVar(&o.jsonPath, "json", "", "write the raw figures as JSON to this file")
	fs.DurationVar(&o.quiet, "quiet", time.Minute, "quiet window after an operator settles, in which it must write nothing")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "an operator has gone quiet once it has written nothing and had no work queued or running for this long")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "give up on a phase that has not converged after this long")
	fs.IntVar(&o.workers, "workers", 8, "workers of the operators (the limit always uses 16)")
	fs.IntVar(&o.loaders, "loaders", 4, "workers of the client that creates and edits the Websites")
	fs.Float64Var(&o.qps, "qps", -1, "client-side rate limit of the hand-written and interpreted operators' clients; -1 turns it off, as controller-runtime's GetConfig does for the compiled one")
	fs.StringVar(&o.blueprint, "blueprint", "packs/website/blueprint.yaml", "the Website Blueprint")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the hand-written and interpreted operators to PREFIX.KIND.pprof (the compiled operator serves none)")
	fs.StringVar(&o.memprofile, "memprofile", "", "write a heap profile of the hand-written and interpreted operators, taken when each has gone quiet after the creates, to PREFIX.KIND.heap.pprof")
	fs.StringVar(&o.compiled, "compiled-binary", "", "the compiled operator to measure, built by inrun build from -blueprint; default: build it now (about a minute)")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep the operators' logs after a successful run")
	fs.BoolVar(&o.headless, "headless", false, "give every Website's Service clusterIP: None, in the limit, the hand-written operator and a copy of -blueprint; the API server's ClusterIP allocator costs N² and sets the pace at N in the thousands")
	fs.DurationVar(&o.progressDur, "progress", 3*time.Second, "how often to print progress")
	fs.BoolVar(&o.paired, "paired", false, "run each Inrun operator side by side with a hand-written one of its own, each confined to a namespace, on the same control plane with the same load at the same moment, and compare them within the pair: what the machine does to one it does to both. The API server's figures are then the pair's, not one operator's, and are left out")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.n < 1 {
		return nil, fmt.Errorf("-n must be at least 1, not %d", o.n)
	}
	if o.rounds < 1 {
		return nil, fmt.Errorf("-rounds must be at least 1, not %d", o.rounds)
	}
	for _, k := range strings.Split(*only, ",") {
		k = strings.TrimSpace(k)
		switch {
		case k == "":
		case !slices.Contains(runnable, k):
			return nil, fmt.Errorf("-only: unknown kind %q; want some of %s", k, strings.Join(runnable, ", "))
		case !slices.Contains(o.only, k):
			o.only = append(o.only, k)
		}
	}
	if len(o.only) == 0 {
		return nil, errors.New("-only names no kind")
	}
	if o.paired {
		if slices.Contains(o.only, kindLimit) {
			return nil, errors.New("-paired compares operators, each in its own process: the limit runs in the benchmark's; drop it from -only")
		}
		if !slices.Contains(o.only, kindInterpreted) && !slices.Contains(o.only, kindCompiled) {
			return nil, errors.New("-paired needs interpreted or compiled in -only: each runs beside a hand-written operator")
		}
		if !slices.Contains(o.only, kindHandwritten) {
			o.only = append(o.only, kindHandwritten)
		}
	}
	// Run in the documented order whatever the order of -only.
	slices.SortFunc(o.only, func(a, b string) int { return slices.Index(runnable, a) - slices.Index(runnable, b) })
	return o, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == operatorCommand {
		if err := runOperator(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench operator:", err)
			os.Exit(1)
		}
		return
	}
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
