package cli

import (
	"fmt"
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
		Short: "End a finished migration: drop the old paths, the old stored versions, the snapshots and the ledger",
		Long: `Clean ends a field move once inrun migrate apply has moved every object. After
it, the migration can no longer be rolled back.

It first verifies every custom resource of the kind, in every namespace:
none may hold a value at an old path (not moved yet, rolled back, or written
in the old shape since by a writer still at work), and each carrying the
migration's annotation must have its ledger entry. Otherwise it refuses,
naming each object and why, and writes nothing.

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
Interrupted, run it again: it resumes.

Then remove the old paths from the Blueprint's schema (or crd.file) and
migrate: from its served fields, so that the CRD it installs next does not
serve them again.`,
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
			k, m, err := f.migration()
			if err == nil && k != nil && id == "" {
				return fmt.Errorf("the Blueprint moves custom resources to another kind (migrate.to): inrun clean ends field moves only, for now; once you no longer need to roll back, delete the snapshots with kubectl delete secret,configmap -n %s -l migrate.inrun.dev/id=%s, and the old kind's CRD", opts.Namespace, k.ID)
			}
			switch {
			case id != "" && (err != nil || m == nil || m.ID != id):
				if m, err = migrate.Recorded(cmd.Context(), id, opts); err != nil {
					return err
				}
			case err != nil:
				return fmt.Errorf("%w\n(or name the migration with --id)", err)
			}
			out := cmd.OutOrStdout()
			m.Describe(out)
			res, err := m.Clean(cmd.Context(), migrate.CleanOptions{Options: opts, CRDManager: reconciler.ManagedBy})
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
				if res.NoLedger {
					fmt.Fprintf(out, "No ledger of migration %s in namespace %s: nothing to delete (cleaned before, or never applied there).\n", m.ID, opts.Namespace)
				} else {
					fmt.Fprintf(out, "Deleted the snapshots and the ledger (%d objects) from namespace %s.\n", res.Deleted, opts.Namespace)
				}
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
