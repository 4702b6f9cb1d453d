package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// migrateEnd is what every migration command says about ending one.
const migrateEnd = `Once every object is moved, inrun clean ends the migration: for a field
move it removes the old paths from the CRD, for a kind move the old kind's
CRD (when Inrun installed it and no custom resource of it is left), and in
both the snapshots and the ledger. After it, no rollback.`

// migrateFlags are the flags migrate plan, apply and rollback share.
type migrateFlags struct {
	blueprint string
	kube      kubeFlags
	namespace string
	only      string
	workers   int
}

func (f *migrateFlags) register(cmd *cobra.Command) {
	addBlueprintFlag(cmd, &f.blueprint)
	f.kube.register(cmd.Flags())
	cmd.Flags().StringVar(&f.namespace, "snapshot-namespace", migrate.DefaultNamespace, "namespace of the snapshots (Secrets) and the ledger (ConfigMaps); apply creates it when missing")
	cmd.Flags().StringVarP(&f.only, "namespace", "n", "", "only the custom resources in this namespace (default: every namespace)")
	cmd.Flags().IntVar(&f.workers, "workers", 4, "objects changed at once")
}

func (f *migrateFlags) options() (migrate.Options, error) {
	cfg, err := f.kube.config()
	if err != nil {
		return migrate.Options{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		return migrate.Options{}, err
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return migrate.Options{}, err
	}
	return migrate.Options{Client: c, Namespace: f.namespace, Only: f.only, Workers: f.workers, Discovery: d}, nil
}

// migration returns what the Blueprint declares: a kind move (its
// migrate section), or else its field moves.
func (f *migrateFlags) migration() (*migrate.KindMove, *migrate.Migration, error) {
	bp, err := loadBlueprint(f.blueprint)
	if err != nil {
		return nil, nil, err
	}
	if bp.Migrate != nil {
		k, err := migrate.KindFromBlueprint(bp)
		return k, nil, err
	}
	m, err := migrate.FromBlueprint(bp)
	return nil, m, err
}

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move values stored in custom resources to the paths the Blueprint serves, or custom resources to another kind",
		Long: `Migrate moves the values custom resources hold at old paths to the paths
their served fields have now. A field says where its value was stored before:

  serve:
    fields:
      repository:
        path: spec.repository
        migrate:
          from: spec.repo            # or a list; the first that holds a value wins

The same declaration tells the gateway (inrun serve) to write the new path
for callers who still send the field, and to read a custom resource not yet
moved at the old one. The CRD must serve both paths while values move: the
one Inrun generates from a schema: section does (the transitional CRD: the
old path marked deprecated, the new one not required).

Run plan first: it writes nothing, counts what apply would do and shows
sample diffs. A move that would drop a value (an object holding different
values at two old paths, or already another value at the new path) is
flagged; apply refuses while the plan has one, unless the field's migrate
section says acceptLoss: true.

Apply saves each object's full prior state in a Secret (chunked) and its
SHA-256 in a ledger (ConfigMaps), both in --snapshot-namespace, before it
changes the object, then updates the object with the annotation
migrate.inrun.dev/id=<ID>. Interrupted at any point (Ctrl-C, kill -9), it is
run again and finishes: marked objects are skipped, none is moved twice.
inrun rollback undoes it.

` + kindMoveHelp + `

` + migrateEnd,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newMigratePlanCommand(), newMigrateApplyCommand())
	return cmd
}

func newMigratePlanCommand() *cobra.Command {
	var (
		f       migrateFlags
		samples int
	)
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what migrate apply would do, writing nothing",
		Long: `Plan lists the custom resources of the Blueprint's kind and says, for the
migration its served fields declare (migrate.from): how many objects would
move, how many are already moved or have nothing to move, every value a move
would drop (and whether the Blueprint acknowledges it), objects written in
the old shape after they were moved, and sample diffs. It writes nothing.

For a kind move (migrate.to at the Blueprint's top) it counts the custom
resources the selection picks and their children, lists every object in
the way (an object of the target kind already holding the name, or two
that would get the same one), every value the target's schema would drop
(and whether migrate.acceptLoss acknowledges it), and sample diffs.`,
		Example: `  inrun migrate plan
  inrun migrate plan -f blueprint.yaml --samples 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, m, err := f.migration()
			if err != nil {
				return err
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			opts.Samples = samples
			if samples == 0 {
				opts.Samples = -1
			}
			if k != nil {
				return kindPlan(cmd, k, opts)
			}
			p, err := m.Plan(cmd.Context(), opts)
			if err != nil {
				return err
			}
			p.Report(cmd.OutOrStdout())
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&samples, "samples", 3, "how many sample diffs to show")
	return cmd
}

func newMigrateApplyCommand() *cobra.Command {
	var f migrateFlags
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Move the values, snapshotting each object first; resumable",
		Long: `Apply moves the values the plan found. For each object, in this order: its
full prior state is saved in Secrets in --snapshot-namespace (chunked), the
snapshot's SHA-256 is written to the migration's ledger, and the object is
updated at the resourceVersion the snapshot was taken from, with the
annotation migrate.inrun.dev/id=<ID>. A writer changing the object in
between makes it start again from a fresh read.

It refuses to start, writing nothing, while the plan has a lossy move the
Blueprint does not acknowledge. Progress (objects, rate) goes to stderr.
Interrupted, run it again: marked objects are skipped, none moves twice.
It exits 1 when an object could not be moved (each is listed).

For a kind move (migrate.to), each selected custom resource is, in this
order: snapshotted (and its snapshot recorded in the ledger), marked with
migrate.inrun.dev/id, created anew as the target kind with the annotations
migrate.inrun.dev/id and migrate.inrun.dev/from-uid (and a snapshot of it as
created), given its status, its children re-parented, and deleted. It
refuses to start, writing nothing, while the plan has a conflict or an
unacknowledged loss. Interrupted, run it again: each step is done once.

` + migrateEnd,
		Example: `  inrun migrate plan && inrun migrate apply
  inrun migrate apply --workers 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, m, err := f.migration()
			if err != nil {
				return err
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opts.Progress = progress(cmd.ErrOrStderr(), "moved")
			if k != nil {
				cmd.SetContext(ctx)
				return kindApply(cmd, k, opts)
			}
			out := cmd.OutOrStdout()
			m.Describe(out)
			p, res, err := m.Apply(ctx, opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Moved %d objects (%d skipped, already moved); %d already moved before this run; %d had nothing to move.\n", res.Moved, res.Skipped, p.Migrated, p.Untouched)
			fmt.Fprintf(out, "Snapshots and ledger: namespace %s, label %s=%s. Undo with: inrun rollback; once every object is moved, end with: inrun clean\n", opts.Namespace, migrate.LabelID, m.ID)
			if len(res.Failed) > 0 {
				for _, err := range res.Failed {
					fmt.Fprintf(out, "failed: %v\n", err)
				}
				return fmt.Errorf("%d objects were not moved; fix what each says and run inrun migrate apply again", len(res.Failed))
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newRollbackCommand() *cobra.Command {
	var (
		f     migrateFlags
		id    string
		force []string
	)
	cmd := &cobra.Command{
		Use:   "rollback",
		Short: "Undo a migration from its snapshots, never overwriting later edits",
		Long: `Rollback undoes a migration inrun migrate apply made: the Blueprint's (by
default) or the one --id names, whose ledger is in --snapshot-namespace.

It first verifies every snapshot against the ledger's SHA-256, and checks
that every object carrying the migration's annotation has a ledger entry.
If a snapshot is missing or was changed, it refuses, naming each object and
snapshot, and writes nothing.

Then, for each object and each path the migration wrote, it compares three
values: before the migration, written by it, and live now. A live value
still equal to the one the migration wrote is restored. Any other was edited
after the migration: it is never overwritten, but reported as drift (the
object, the field and the three values) and left as it is, unless you name
the object with --force. Fields the migration did not write are never
touched. It exits 2 when drift was left in place, 1 on failure.

Rollback can be run again: restored fields are left alone.

A kind move (migrate.to) rolls back per custom resource: the old one is
created again from its snapshot (a new UID; the annotation
migrate.inrun.dev/rollback-of names the one it replaces) with its status,
the children are re-parented back to it (they keep their UIDs), and the new
one is deleted. A field of spec, a label or an annotation edited on the new
one after the move is drift: reported with its three values, and the
restored custom resource keeps the edited value, unless --force names it.

` + migrateEnd,
		Example: `  inrun rollback
  inrun rollback --force apps/payments-api
  inrun rollback --id app-3f9a2c1b7d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kind := false
			if id == "" {
				k, m, err := f.migration()
				switch {
				case err != nil:
					return fmt.Errorf("%w\n(or name the migration with --id)", err)
				case k != nil:
					id, kind = k.ID, true
				default:
					id = m.ID
				}
			}
			opts, err := f.options()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cmd.SetContext(ctx)
			opts.Progress = progress(cmd.ErrOrStderr(), "checked")
			if !kind {
				if kind, err = migrate.IsKindMove(ctx, id, opts); err != nil {
					return err
				}
			}
			var res *migrate.RollbackResult
			if kind {
				res, err = kindRollback(cmd, id, opts, force)
			} else {
				var m *migrate.Migration
				m, res, err = migrate.Rollback(ctx, id, migrate.RollbackOptions{Options: opts, Force: force})
				if m != nil && (err == nil || !errors.Is(err, migrate.ErrTampered)) {
					m.Describe(cmd.OutOrStdout())
				}
				if res != nil {
					res.Report(cmd.OutOrStdout())
				}
			}
			switch {
			case err != nil:
				return err
			case len(res.Failed) > 0:
				return fmt.Errorf("%d objects were not restored; run inrun rollback again", len(res.Failed))
			}
			left := 0
			for _, d := range res.Drift {
				if !d.Forced {
					left++
				}
			}
			if left > 0 {
				return &exitError{code: 2, err: fmt.Errorf("drift left in place: %d fields were edited after the migration (listed above); pass --force <namespace/name> to restore an object's fields all the same", left)}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&id, "id", "", "the migration to undo (default: the one the Blueprint declares)")
	cmd.Flags().StringArrayVar(&force, "force", nil, "restore this object's (namespace/name) fields even where they were edited after the migration; repeatable")
	return cmd
}

// progress reports to w at most once a second, and at the end: objects
// handled, of how many, and the rate.
func progress(w io.Writer, verb string) func(migrate.Progress) {
	var mu sync.Mutex
	last := time.Time{}
	return func(p migrate.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < time.Second && p.Done < p.Total {
			return
		}
		last = time.Now()
		rate := 0.0
		if s := p.Elapsed.Seconds(); s > 0 {
			rate = float64(p.Done) / s
		}
		fmt.Fprintf(w, "%d/%d objects %s, %d written, %.1f/s\n", p.Done, p.Total, verb, p.Changed, rate)
	}
}
