package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCheckCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Compile a Blueprint and report every mistake",
		Long: `Check compiles the Blueprint offline: it parses it, checks every field,
resolves every child's kind, orders children by their references, and
type-checks every ${...} expression against the CRD's schema and the
built-in kinds. Every mistake is listed at once, as file:line:col.`,
		Example: `  inrun check
  inrun check -f path/to/blueprint.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %s reconciles %s with %d children and %d expressions\n",
				path, bp.Name, bp.Resource.GroupVersionKind, len(bp.Children), len(bp.Exprs()))
			return nil
		},
	}
	addBlueprintFlag(cmd, &path)
	return cmd
}
