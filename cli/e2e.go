package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster/assets"
)

const e2eLong = `E2e runs the cases of test/e2e.yaml (format: docs/e2e.md) on a real API
server, with the Blueprint reconciled by the real runtime.

The cluster: by default a full local control plane is started for the run
and stopped after it. Its Deployments get Pods that become Ready (kwok fakes
the node) and owned objects are garbage-collected, as on a real cluster. Its
binaries must have been built once ("inrun cluster assets", about 10
minutes), or pass --build-assets. With --context (and --kubeconfig) the
cases run on that cluster instead.

The runtime: by default the interpreted runtime runs inside inrun e2e for
the length of the run, after the Blueprint's CRD is installed (its
crd.file, or the CRD generated from its schema: section); the Blueprints
it uses (uses: blueprint:) run in it too. With
--no-runtime nothing is installed or started: an operator already runs on
the cluster.

Each case runs in a fresh namespace: its objects are created, then its CR
(objects and the CR without a namespace go into the case's; an object that
names another namespace keeps it, which is created when missing). Then each
step runs its action, a merge patch on the CR or delete: true, and polls its
expectations every 250ms until they hold or the step's timeout runs out
(the step's timeout, else the file's, else 60s; --timeout overrides them
all). A failing step prints what each expectation wanted and what was last
observed, with the CR's conditions and latest Events, and the case's later
steps are skipped. The namespace is deleted afterwards, unless --keep.

A step that leaves the CR in place ends with the idle check: once its
expectations hold, the CR is woken (an annotation changes) until one of its
reconciles, with the runtime otherwise idle, writes nothing to the API
server, as the runtime's metrics count writes. A Blueprint whose every
reconcile writes fails it. --skip-idle-check turns it off; with
--no-runtime there is no runtime to count.

Every problem with the file (unknown fields, missing names, bad durations,
kinds the cluster does not serve) is listed at once, before any cluster
starts.

Exit status: 0 when every case passes, 1 otherwise.`

func newE2ECommand() *cobra.Command {
	var (
		path        string
		file        string
		kubeContext string
		kubeconfig  string
		keep        bool
		timeout     time.Duration
		skipIdle    bool
		run         string
		noRuntime   bool
		buildAssets bool
		verbose     bool
	)
	cmd := &cobra.Command{
		Use:   "e2e [CASES.yaml]",
		Short: "Run the Blueprint's end-to-end cases on a real API server",
		Long:  e2eLong,
		Example: `  inrun e2e
  inrun e2e --run 'scales' --timeout 2m
  inrun e2e --keep                   # look around afterwards; Ctrl-C ends it
  inrun e2e --context staging --no-runtime
  inrun e2e test/upgrade.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := casesArg(cmd, args, &file, path); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()

			var filter *regexp.Regexp
			if run != "" {
				var err error
				if filter, err = regexp.Compile(run); err != nil {
					return fmt.Errorf("--run: %w", err)
				}
			}
			if timeout < 0 {
				return errors.New("--timeout must be positive")
			}
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			// The runtime's logs would bury the results; -v shows them.
			log := logr.Discard()
			if verbose {
				log = zap.New(zap.UseDevMode(true), zap.WriteTo(cmd.ErrOrStderr()))
			}
			ctrllog.SetLogger(log)
			var runtime e2e.Runtime = e2e.NoRuntime
			if !noRuntime {
				runtime = &e2e.InProcess{Blueprints: withUsed(out, []*ir.Blueprint{bp}, "the runtime runs %s too"), Log: log}
			}

			rep, err := e2e.Run(ctx, e2e.Options{
				Blueprint:     bp,
				File:          file,
				Kubeconfig:    kubeconfig,
				Context:       kubeContext,
				BuildAssets:   buildAssets,
				Runtime:       runtime,
				Timeout:       timeout,
				SkipIdleCheck: skipIdle,
				Select:        filter,
				Keep:          keep,
				Out:           out,
			})
			if assets.IsMissing(err) {
				return fmt.Errorf("%w\nor let inrun e2e build them first: inrun e2e --build-assets", err)
			}
			if err != nil {
				return err
			}
			if rep.Failed() > 0 {
				return errReported
			}
			return nil
		},
	}
	addBlueprintFlag(cmd, &path)
	fl := cmd.Flags()
	fl.StringVar(&file, "file", e2e.DefaultFile, "the cases to run (beside the Blueprint -f names, by default)")
	fl.StringVar(&kubeContext, "context", "", "run on this kubeconfig context instead of a local control plane")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "run on a cluster of this kubeconfig (its current context unless --context) instead of a local control plane")
	fl.BoolVar(&keep, "keep", false, "leave the namespaces, the runtime and the local control plane up afterwards, print how to reach them, and wait for Ctrl-C")
	fl.DurationVar(&timeout, "timeout", 0, "wait this long for every step's expectations, overriding the file's timeouts (default: the step's, else the file's, else 60s)")
	fl.BoolVar(&skipIdle, "skip-idle-check", false, "do not check that a converged CR's reconcile writes nothing")
	fl.StringVar(&run, "run", "", "run only the cases whose name matches this regular expression")
	fl.BoolVar(&noRuntime, "no-runtime", false, "install nothing and start no runtime: an operator already runs on the cluster")
	fl.BoolVar(&buildAssets, "build-assets", false, "build the local control plane's binaries first when they are missing (about 10 minutes the first time)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "print the runtime's logs on stderr")
	return cmd
}
