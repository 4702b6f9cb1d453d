package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// errReported marks a failure the command has already described on its
// output, such as failing simulate cases; main only sets the exit code.
var errReported = errors.New("failure reported")

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
		Long: `Inrun is an intent runner for Kubernetes. A Blueprint (blueprint.yaml) names a
CRD and says what each custom resource becomes. Inrun compiles it, checks
it offline, and runs the reconcile machinery: informers, queues,
server-side apply, prune, status, events and RBAC.

Start with:
  inrun init my-operator && cd my-operator
  inrun simulate
  inrun --dev

A bare inrun is inrun run: see inrun run --help for its flags.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// A bare inrun is inrun run.
	bare := &runFlags{}
	bare.register(root)
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(cmd *cobra.Command, args []string) error { return bare.run(cmd, args) }
	root.AddCommand(
		newRunCommand(),
		newE2ECommand(),
		newBuildCommand(),
		newGenerateCommand(),
		newClusterCommand(),
		newInitCommand(),
		newCheckCommand(),
		newSimulateCommand(),
		newRenderCommand(),
		newRBACCommand(),
		newInstallCommand(),
		newServeCommand(),
		newCRDCommand(),
		newImportCommand(),
		newVersionCommand(),
		newMigrateCommand(),
		newRollbackCommand(),
		newCleanCommand(),
		newKeysCommand(),
		newPushCommand(),
		newPatternsCommand(),
		newInspectCommand(),
		newPullCommand(),
	)
	withUsage(root)
	return root
}

// withUsage makes c's and its subcommands' argument errors say what the
// command takes: cobra's "accepts 1 arg(s), received 0" alone does not.
func withUsage(c *cobra.Command) {
	if inner := c.Args; inner != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := inner(cmd, args); err != nil {
				return fmt.Errorf("%w; usage: %s (see %s --help)", err, cmd.UseLine(), cmd.CommandPath())
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		withUsage(sub)
	}
}
