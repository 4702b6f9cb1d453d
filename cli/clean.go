package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

func newCleanCommand() *cobra.Command {
	var (
		f  migrateFlags
		id string
	)
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "End a finished migration: drop the old paths (or the old kind's CRD), the old stored versions, the snapshots and the ledger",
		Long: `Clean ends a migration once inrun migrate apply has moved every object.
After it, the migration can no longer be rolled back.

A field move. It first verifies every custom resource of the kind, in every
namespace: none may hold a value at an old path (not moved yet, rolled
back, or written in the old shape since by a writer still at work), and
each carrying the migration's annotation must have its ledger entry.
Otherwise it refuses, naming each object and why, and writes nothing.

Then, in this order:
  1. it removes the old paths from the installed CRD's schema (the version
     the Blueprint reconciles), when Inrun installed that CRD; a CRD applied
     by someone else is left as it is, and clean says what to change in it;
  2. when the CRD's status.storedVersions lists versions other than the
     storage version, it has every object rewritten in the storage version,
     with a StorageVersionMigration (storagemigration.k8s.io/v1) when the
     cluster serves that API and a controller runs it, or else by rewriting
     the objects itself (it says which), and drops those versions;
  3. it deletes the snapshots (Secrets) and the ledger (ConfigMaps) from
     --snapshot-namespace.
Then remove the old paths from the Blueprint's schema (or crd.file) and
migrate: from its served fields, so that the CRD it installs next does not
serve them again.

A kind move (migrate.to). It first verifies every custom resource of the
old kind, in every namespace: none may be a move begun and not finished,
rolled back, or picked by migrate.selection and not moved; and each of the
new kind carrying the migration's annotation must have its snapshots in the
ledger. Otherwise it refuses, naming each object and why, and writes
nothing. Then it deletes the snapshots and the ledger, and last the old
kind's CRD: only when Inrun installed it, no custom resource of the old kind
is left (deleting a CRD deletes them all), and no child of one is left for
garbage collection (which cannot delete it once the kind is gone). Custom
resources the selection does not pick keep the CRD: clean names them; move
or delete them, then run it again. A CRD Inrun did not install is never deleted: clean says
what to remove. With --id and no Blueprint, the selection is unknown, and
every custom resource not moved counts as not selected.

Interrupted, run it again: it resumes.`,
		Example: `  inrun migrate plan      # 0 to move
  inrun clean
  inrun clean --id app-3f9a2c1b7d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.only != "" {
				return fmt.Errorf("clean verifies the objects of every namespace, since they share the ledger: run it without -n")
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			k, m, err := f.migration()
			switch {
			case id != "" && (err != nil || (k == nil || k.ID != id) && (m == nil || m.ID != id)):
				kind, err := migrate.IsKindMove(ctx, id, opts)
				switch {
				case err != nil:
					return err
				case kind:
					if k, err = migrate.RecordedKind(ctx, id, opts); err != nil {
						return err
					}
					m = nil
				default:
					if m, err = migrate.Recorded(ctx, id, opts); err != nil {
						return err
					}
					k = nil
				}
			case err != nil:
				return fmt.Errorf("%w\n(or name the migration with --id)", err)
			}
			cleanOpts := migrate.CleanOptions{Options: opts, CRDManager: reconciler.ManagedBy}
			if k != nil {
				return cleanKind(cmd, k, cleanOpts)
			}
			out := cmd.OutOrStdout()
			m.Describe(out)
			res, err := m.Clean(ctx, cleanOpts)
			if res != nil {
				fmt.Fprintf(out, "Verified %d objects: every one is migrated.\n", res.Objects)
				switch {
				case res.CRDLeft != "":
					fmt.Fprintln(out, res.CRDLeft)
				case len(res.RemovedPaths) > 0:
					fmt.Fprintf(out, "Removed from the CRD: %s.\n", strings.Join(res.RemovedPaths, ", "))
				default:
					fmt.Fprintln(out, "The CRD serves none of the old paths.")
				}
				if len(res.DroppedVersions) > 0 {
					fmt.Fprintf(out, "Dropped from status.storedVersions: %s (%s).\n", strings.Join(res.DroppedVersions, ", "), res.StorageMigration)
				}
				reportLedger(out, res.NoLedger, res.Deleted, m.ID, opts.Namespace)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "Now remove the old paths from the Blueprint's schema (or crd.file) and migrate: from its served fields.")
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&id, "id", "", "the migration to clean (default: the one the Blueprint declares); without a Blueprint, read from its ledger")
	return cmd
}

// cleanKind runs and reports the clean of a kind move.
func cleanKind(cmd *cobra.Command, k *migrate.KindMove, opts migrate.CleanOptions) error {
	out := cmd.OutOrStdout()
	k.Describe(out)
	res, err := k.Clean(cmd.Context(), opts)
	if res == nil {
		return err
	}
	fmt.Fprintf(out, "Verified: %d %s objects made by the move, and no %s begun, rolled back or selected and not moved.\n", res.Moved, k.To.Kind, k.From.Kind)
	if len(res.Remaining) > 0 {
		fmt.Fprintf(out, "%d %s objects are left, not selected by the move:\n", len(res.Remaining), k.From.Kind)
		for _, r := range res.Remaining {
			fmt.Fprintf(out, "  %s\n", r)
		}
	}
	reportLedger(out, res.NoLedger, res.Deleted, k.ID, opts.Namespace)
	switch {
	case res.CRDDeleted:
		fmt.Fprintf(out, "Deleted CRD %s: no %s was left.\n", res.CRD, k.From.Kind)
	case res.CRDGone:
		fmt.Fprintf(out, "CRD %s is gone already.\n", res.CRD)
	case res.CRDLeft != "":
		fmt.Fprintln(out, res.CRDLeft)
	}
	if err != nil {
		return err
	}
	if res.CRDDeleted || res.CRDGone {
		fmt.Fprintf(out, "Now stop running the Blueprint of %s (its kind is gone); %s's Blueprint reconciles the custom resources.\n", k.From.Kind, k.To.Kind)
	} else {
		fmt.Fprintf(out, "The Blueprint of %s keeps reconciling the ones left; remove its migrate: section.\n", k.From.Kind)
	}
	return nil
}

// reportLedger says what became of a migration's snapshots and ledger.
func reportLedger(out io.Writer, none bool, deleted int, id, ns string) {
	if none {
		fmt.Fprintf(out, "No ledger of migration %s in namespace %s: nothing to delete (cleaned before, or never applied there).\n", id, ns)
		return
	}
	fmt.Fprintf(out, "Deleted the snapshots and the ledger (%d objects) from namespace %s.\n", deleted, ns)
}
