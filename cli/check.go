package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/rbac"
)

func newCheckCommand() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "check [BLUEPRINT...]",
		Short: "Compile Blueprints and report every mistake",
		Long: `Check compiles each Blueprint offline: it parses it, checks every field,
resolves every child's kind, orders children by their references, and
type-checks every ${...} expression against the CRD's schema and the
built-in kinds. Every mistake is listed at once, as file:line:col: CODE
message; hint.

A Blueprint's uses: are compiled with it: the Blueprints it builds on
(their mistakes at their own positions) and the CRDs whose kinds its
children may be.

A Blueprint that names Go code (reconcile.go) is checked against the Go
compiled into this inrun: an inrun built with Go modules reports a name
none of them registered (E0023); a plain inrun checks the name's form and
says it cannot run the Blueprint (see docs/typed.md).

Of Blueprints given together, check notes (without failing) any two that
inrun run and inrun serve would refuse to run together: two reconciling one
kind, or serving one gateway target.

Blueprints are the arguments, or -f (default blueprint.yaml).`,
		Example: `  inrun check
  inrun check path/to/blueprint.yaml other/blueprint.yaml
  inrun check -f path/to/blueprint.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.Flags().Changed("blueprint") {
				return errors.New("give Blueprints as arguments or with -f, not both")
			}
			if len(args) == 0 {
				args = []string{path}
			}
			var errs []error
			var bps []*ir.Blueprint
			for _, p := range args {
				bp, err := loadBlueprint(p)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				bps = append(bps, bp)
				for _, w := range rbac.Warnings(bp) {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", p, w)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %s reconciles %s with %s and %s%s%s%s\n",
					p, bp.Name, ir.FormatKind(bp.Resource.GroupVersionKind), plural(len(bp.Children), "child", "children"),
					plural(len(bp.Exprs()), "expression", "expressions"), usesNote(bp), goNote(bp), workflowNote(bp))
			}
			// What inrun run and inrun serve would refuse of Blueprints
			// given together: a note, since Blueprints checked together
			// (the examples of a pack) need not run together.
			for _, check := range []func([]*ir.Blueprint) error{ir.OneBlueprintPerKind, ir.OneBlueprintPerTarget} {
				if err := check(bps); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: inrun run and inrun serve refuse these together: %v\n", err)
				}
			}
			return errors.Join(errs...)
		},
	}
	addBlueprintFlag(cmd, &path)
	return cmd
}

// workflowNote names bp's workflow steps, for check's line: "; a workflow
// of 3 steps: Reserve, Charge, Ship".
func workflowNote(bp *ir.Blueprint) string {
	if bp.Reconcile == nil || bp.Reconcile.Workflow == nil {
		return ""
	}
	steps := bp.Reconcile.Workflow.Steps
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.Name
	}
	return fmt.Sprintf("; a workflow of %d steps: %s", len(steps), strings.Join(names, ", "))
}

// usesNote names what bp uses, for check's line: "; uses database
// (database/blueprint.yaml), cert-manager.io/v1 Certificate".
func usesNote(bp *ir.Blueprint) string {
	if len(bp.Uses) == 0 {
		return ""
	}
	var names []string
	for _, u := range bp.Uses {
		if u.Blueprint != "" {
			names = append(names, fmt.Sprintf("%s (%s)", u.Blueprint, u.File))
		} else {
			names = append(names, ir.FormatKind(u.GroupVersionKind))
		}
	}
	return "; uses " + strings.Join(names, ", ")
}
