package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a specific process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "inrun",
		Short: "Declare an operator once as a Blueprint; Inrun runs it",
		Long: `Inrun is an intent runner for Kubernetes. A Blueprint (blueprint.yaml) names a CRD
and says what each custom resource becomes. Inrun compiles it, checks it offline,
and runs the reconcile machinery: informers, queues, server-side apply, prune,
status, events and RBAC.

Start with:
  inrun init my-operator && cd my-operator
  inrun simulate`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetErr(os.Stderr)
	root.AddCommand(
		newInitCommand(),
		newSimulateCommand(),
		newRenderCommand(),
		newRBACCommand(),
		newCheckCommand(),
	)
	return root
}

// printErr prints err the way every inrun command does: one diagnostic per line.
func printErr(cmd *cobra.Command, err error) {
	fmt.Fprintln(cmd.ErrOrStderr(), "error:", err)
}
