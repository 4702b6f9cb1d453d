package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/migrate"
)

// This file runs a kind move (migrate.to at the top of the Blueprint) for
// migrate plan, migrate apply and rollback; migrate.go runs field moves.

// kindMoveHelp is what the commands' help says about kind moves.
const kindMoveHelp = `A Blueprint with a migrate section at its top moves custom resources to
another kind instead (a new group, version or kind, or a new scope):

  uses:
    - blueprint: ../webapp/blueprint.yaml   # the kind they move to
  migrate:
    to: {apiVersion: platform.example.dev/v1, kind: WebApp}
    selection:                              # which ones move; {} for all
      matchLabels: {tier: web}
      includeWhen: ${self.spec.replicas > 0}

Each selected custom resource is snapshotted and marked, created anew as
the target kind (spec, labels, annotations; status through the status
subresource), its children are re-parented to it (their owner references
and inventory labels rewritten: they keep their UIDs, and garbage
collection deletes nothing), and only then is the old one deleted, without
Inrun's finalizer, so that the runtime finalizes nothing away. See
docs/migration.md, "Moving CRs to another kind".`

func kindPlan(cmd *cobra.Command, k *migrate.KindMove, opts migrate.Options) error {
	p, err := k.Plan(cmd.Context(), opts)
	if err != nil {
		return err
	}
	p.Report(cmd.OutOrStdout())
	return nil
}

func kindApply(cmd *cobra.Command, k *migrate.KindMove, opts migrate.Options) error {
	out := cmd.OutOrStdout()
	k.Describe(out)
	p, res, err := k.Apply(cmd.Context(), opts)
	if err != nil {
		if p != nil && errors.Is(err, migrate.ErrRefused) {
			p.Details(out) // the header is written above
		}
		return err
	}
	fmt.Fprintf(out, "Moved %d objects to %s and re-parented %d children (%d skipped: gone or no longer selected); %d had been moved before this run.\n", res.Moved, k.To.Kind, res.Children, res.Skipped, p.Moved)
	fmt.Fprintf(out, "Snapshots and ledger: namespace %s, label %s=%s. Undo with: inrun rollback; once every selected object is moved, end with: inrun clean\n", opts.Namespace, migrate.LabelID, k.ID)
	if len(res.Failed) > 0 {
		for _, err := range res.Failed {
			fmt.Fprintf(out, "failed: %v\n", err)
		}
		return fmt.Errorf("%d objects were not moved; fix what each says and run inrun migrate apply again (moves begun are finished, none is done twice)", len(res.Failed))
	}
	return nil
}

// kindRollback undoes kind move id and reports what it did.
func kindRollback(cmd *cobra.Command, id string, opts migrate.Options, force []string) (*migrate.RollbackResult, error) {
	k, res, err := migrate.RollbackKind(cmd.Context(), id, migrate.RollbackOptions{Options: opts, Force: force})
	if k != nil && (err == nil || !errors.Is(err, migrate.ErrTampered)) {
		k.Describe(cmd.OutOrStdout())
	}
	if res != nil {
		res.Report(cmd.OutOrStdout())
	}
	return res, err
}
