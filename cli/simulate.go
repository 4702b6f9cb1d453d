package cli

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/simulate"
)

func newSimulateCommand() *cobra.Command {
	var (
		path  string
		file  string
		run   string
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "simulate [CASES.yaml]",
		Short: "Run the Blueprint's test cases in memory, without a cluster",
		Long: `Simulate runs the runtime's own reconcile pass, the code inrun run runs on a
cluster, against an in-memory API store, for every case in
test/simulate.yaml (format: docs/simulate.md). It needs no cluster and takes
milliseconds.

Each case starts from an empty store, runs its passes, injects the child
status the case observes, and compares children and status with partial
expectations. A child that is the custom resource of a Blueprint this one
uses (uses: blueprint:) is reconciled in memory by that Blueprint after each
pass; its children are named <child id>.<id in that Blueprint>. Every case then runs one more pass, which must write nothing:
the reconcile has to be idempotent.

Exit status: 0 when every case passes, 1 otherwise.`,
		Example: `  inrun simulate
  inrun simulate --run 'scaled to zero'
  inrun simulate test/refusals.yaml
  inrun simulate -f other/blueprint.yaml      # and other/test/simulate.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := casesArg(cmd, args, &file, path); err != nil {
				return err
			}
			var filter *regexp.Regexp
			if run != "" {
				var err error
				if filter, err = regexp.Compile(run); err != nil {
					return fmt.Errorf("--run: %w", err)
				}
			}
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			sim, err := simulate.New(bp)
			if err != nil {
				return err
			}
			sim = sim.WithComponents(compiledIn)
			f, err := sim.Load(file)
			if err != nil {
				return err
			}
			withUsed(cmd.OutOrStdout(), []*ir.Blueprint{bp}, "simulate runs %s too, after each pass")
			// A reconciler process the file names serves every case.
			stop, err := sim.Serve(cmd.Context(), f)
			if err != nil {
				return err
			}
			defer func() { _ = stop() }()
			out := cmd.OutOrStdout()
			passed, failed := 0, 0
			start := time.Now()
			for i := range f.Cases {
				c := &f.Cases[i]
				if filter != nil && !filter.MatchString(c.Name) {
					continue
				}
				caseStart := time.Now()
				res := sim.RunCase(context.Background(), f, c)
				took := time.Since(caseStart).Round(time.Microsecond)
				if res.Passed() {
					passed++
					if !quiet {
						fmt.Fprintf(out, "PASS  %s (%s)\n", c.Name, took)
					}
					continue
				}
				failed++
				fmt.Fprintf(out, "FAIL  %s (%s)\n", c.Name, took)
				if res.Err != nil {
					fmt.Fprintf(out, "  error: %v\n", res.Err)
				}
				for _, msg := range res.Failures {
					fmt.Fprintf(out, "  %s\n", msg)
				}
			}
			fmt.Fprintf(out, "%s: %d passed, %d failed in %s\n", file, passed, failed, time.Since(start).Round(time.Millisecond))
			if failed > 0 {
				return errReported
			}
			if passed == 0 {
				return fmt.Errorf("no case matched --run %q", run)
			}
			return nil
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringVar(&file, "file", "test/simulate.yaml", "the cases to run (beside the Blueprint -f names, by default)")
	cmd.Flags().StringVar(&run, "run", "", "run only the cases whose name matches this regular expression")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only failing cases and the summary")
	return cmd
}
