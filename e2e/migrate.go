package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// Migrate is a step's migrate: an inrun migrate command run on the
// Blueprint's migration (its served fields' migrate.from), over the kind's
// custom resources in every namespace, with the snapshots and the ledger
// in the case's namespace.
type Migrate struct {
	// Run is apply, rollback or clean.
	Run string
	// Drift are the fields a rollback must report as drift, sorted; none
	// when empty.
	Drift []string
	// Force names objects (namespace/name, or name for one in the case's
	// namespace) whose drift a rollback restores all the same.
	Force []string
	// Refused, when set, is what the command's refusal must say: the step
	// expects it to refuse.
	Refused string
}

// migrateRuns are what a migrate step may run.
var migrateRuns = []string{"apply", "rollback", "clean"}

var migrateFields = []string{"run", "drift", "force", "refused"}

// checkMigrate reports migrate steps when the Blueprint declares no
// migration.
func (f *File) checkMigrate(bp *ir.Blueprint) diag.List {
	var l diag.List
	if bp == nil || bp.Serve != nil && len(bp.Serve.Migrations()) > 0 {
		return nil
	}
	for _, c := range f.Cases {
		for _, s := range c.Steps {
			if s.Migrate != nil {
				l.Add(s.Pos, diag.InvalidValue, "add migrate: {from: <old path>} to a field under serve.fields (see docs/migration.md), or remove the step", "the step runs migrate %s, and Blueprint %s declares no migration", s.Migrate.Run, bp.Name)
			}
		}
	}
	return l
}

// readMigrate reads a step's migrate: apply, or {run: rollback, drift: [...]}.
func (p *parser) readMigrate(field string, n *yaml.Node) *Migrate {
	mg := &Migrate{}
	runNode := n
	if n.Kind == yaml.MappingNode {
		m := p.Map(n, field)
		p.Only(m, migrateFields...)
		runNode = m.Get("run")
		if runNode == nil {
			p.Errorf(n, diag.MissingField, "say which: run: apply, rollback or clean", "%s.run is required", field)
			return nil
		}
		for _, it := range p.List(m.Get("drift"), field+".drift") {
			if s, ok := p.Str(it, field+".drift"); ok {
				mg.Drift = append(mg.Drift, s)
			}
		}
		sort.Strings(mg.Drift)
		for _, it := range p.List(m.Get("force"), field+".force") {
			if s, ok := p.Str(it, field+".force"); ok {
				mg.Force = append(mg.Force, s)
			}
		}
		mg.Refused, _ = p.String(m, "refused", false)
		field += ".run"
	}
	run, ok := p.Str(runNode, field)
	if !ok {
		return nil
	}
	if !slices.Contains(migrateRuns, run) {
		p.Errorf(runNode, diag.InvalidValue, "run apply, rollback or clean", "%s %q is not a migrate command", field, run)
		return nil
	}
	mg.Run = run
	if (len(mg.Drift) > 0 || len(mg.Force) > 0) && run != "rollback" {
		p.Errorf(n, diag.InvalidValue, "drift and force are a rollback's", "%s runs %s, and says drift or force", field, run)
	}
	return mg
}

// migrate runs a step's migrate, and checks its outcome.
func (cr *caseRun) migrate(ctx context.Context, mg *Migrate) error {
	bp := cr.run.opts.Blueprint
	m, err := migrate.FromBlueprint(bp)
	if err != nil {
		return err
	}
	opts := migrate.Options{Client: cr.run.c, Namespace: cr.res.Namespace, Samples: -1}
	switch mg.Run {
	case "apply":
		var res *migrate.Result
		if _, res, err = m.Apply(ctx, opts); err == nil && len(res.Failed) > 0 {
			err = errors.Join(res.Failed...)
		}
	case "rollback":
		var res *migrate.RollbackResult
		force := make([]string, len(mg.Force))
		for i, f := range mg.Force {
			force[i] = f
			if !strings.Contains(f, "/") && bp.Resource.Namespaced {
				force[i] = cr.res.Namespace + "/" + f
			}
		}
		_, res, err = migrate.Rollback(ctx, m.ID, migrate.RollbackOptions{Options: opts, Force: force})
		if err == nil && len(res.Failed) > 0 {
			err = errors.Join(res.Failed...)
		}
		if err == nil {
			var got []string
			for _, d := range res.Drift {
				if !slices.Contains(got, d.Field) {
					got = append(got, d.Field)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, mg.Drift) {
				var lines []string
				for _, d := range res.Drift {
					lines = append(lines, fmt.Sprintf("%s %s: before %s, migration wrote %s, live %s", d.Object, d.Field, d.Before, d.Written, d.Live))
				}
				return fmt.Errorf("rollback reported drift on %v, the step expects %v:\n  %s", got, mg.Drift, strings.Join(lines, "\n  "))
			}
		}
	case "clean":
		_, err = m.Clean(ctx, migrate.CleanOptions{Options: opts, CRDManager: reconciler.ManagedBy})
	}
	switch {
	case mg.Refused == "" && err != nil:
		return fmt.Errorf("migrate %s: %w", mg.Run, err)
	case mg.Refused != "" && err == nil:
		return fmt.Errorf("migrate %s went through; the step expects it to refuse with %q", mg.Run, mg.Refused)
	case mg.Refused != "" && !strings.Contains(err.Error(), mg.Refused):
		return fmt.Errorf("migrate %s refused with %v; the step expects %q", mg.Run, err, mg.Refused)
	}
	return nil
}
