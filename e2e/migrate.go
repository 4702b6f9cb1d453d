package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// Migrate is a step's migrate: an inrun migrate command run on the
// Blueprint's migration (its served fields' migrate.from, or its kind move,
// migrate.to), over the kind's custom resources in every namespace, with
// the snapshots and the ledger in the case's namespace.
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
	if bp == nil || bp.Migrate != nil || bp.Serve != nil && len(bp.Serve.Migrations()) > 0 {
		return nil
	}
	for _, c := range f.Cases {
		for _, s := range c.Steps {
			if s.Migrate != nil {
				l.Add(s.Pos, diag.InvalidValue, "add migrate: {from: <old path>} to a field under serve.fields, or migrate: {to: ..., selection: ...} at the Blueprint's top (see docs/migration.md), or remove the step", "the step runs migrate %s, and Blueprint %s declares no migration", s.Migrate.Run, bp.Name)
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
	err := cr.runMigrate(ctx, mg)
	var drift *driftError
	switch {
	case errors.As(err, &drift):
		return err
	case mg.Refused == "" && err != nil:
		return fmt.Errorf("migrate %s: %w", mg.Run, err)
	case mg.Refused != "" && err == nil:
		return fmt.Errorf("migrate %s went through; the step expects it to refuse with %q", mg.Run, mg.Refused)
	case mg.Refused != "" && !strings.Contains(err.Error(), mg.Refused):
		return fmt.Errorf("migrate %s refused with %v; the step expects %q", mg.Run, err, mg.Refused)
	}
	return nil
}

// runMigrate runs the command of a step's migrate on the Blueprint's
// field moves or, when it has a migrate section, its kind move.
func (cr *caseRun) runMigrate(ctx context.Context, mg *Migrate) error {
	bp := cr.run.opts.Blueprint
	opts := migrate.Options{Client: cr.run.c, Namespace: cr.res.Namespace, Samples: -1}
	cleanOpts := migrate.CleanOptions{Options: opts, CRDManager: reconciler.ManagedBy}
	rollbackOpts := migrate.RollbackOptions{Options: opts, Force: make([]string, len(mg.Force))}
	for i, f := range mg.Force {
		rollbackOpts.Force[i] = f
		if !strings.Contains(f, "/") && bp.Resource.Namespaced {
			rollbackOpts.Force[i] = cr.res.Namespace + "/" + f
		}
	}
	if bp.Migrate != nil {
		k, err := migrate.KindFromBlueprint(bp)
		if err != nil {
			return err
		}
		switch mg.Run {
		case "apply":
			_, res, err := k.Apply(ctx, opts)
			if err == nil && len(res.Failed) > 0 {
				err = errors.Join(res.Failed...)
			}
			if err != nil {
				return err
			}
			return cr.follow(ctx, k, true)
		case "rollback":
			_, res, err := migrate.RollbackKind(ctx, k.ID, rollbackOpts)
			if err = checkRollback(res, err, mg); err != nil {
				return err
			}
			return cr.follow(ctx, k, false)
		default:
			_, err := k.Clean(ctx, cleanOpts)
			return err
		}
	}
	m, err := migrate.FromBlueprint(bp)
	if err != nil {
		return err
	}
	switch mg.Run {
	case "apply":
		_, res, err := m.Apply(ctx, opts)
		if err == nil && len(res.Failed) > 0 {
			err = errors.Join(res.Failed...)
		}
		return err
	case "rollback":
		_, res, err := migrate.Rollback(ctx, m.ID, rollbackOpts)
		return checkRollback(res, err, mg)
	default:
		_, err := m.Clean(ctx, cleanOpts)
		return err
	}
}

// driftError is a rollback whose drift is not the step's.
type driftError struct{ error }

// checkRollback returns a rollback's error, its failures, or the drift it
// reported where it is not the step's. A change of the idle check's wake
// annotation is the run's own doing, not drift the step names.
func checkRollback(res *migrate.RollbackResult, err error, mg *Migrate) error {
	if err == nil && len(res.Failed) > 0 {
		err = errors.Join(res.Failed...)
	}
	if err != nil {
		return err
	}
	var got []string
	var lines []string
	for _, d := range res.Drift {
		if d.Field == "metadata.annotations."+AnnotationWake {
			continue
		}
		if !slices.Contains(got, d.Field) {
			got = append(got, d.Field)
		}
		lines = append(lines, fmt.Sprintf("%s %s: before %s, migration wrote %s, live %s", d.Object, d.Field, d.Before, d.Written, d.Live))
	}
	sort.Strings(got)
	if !slices.Equal(got, mg.Drift) {
		return &driftError{fmt.Errorf("rollback reported drift on %v, the step expects %v:\n  %s", got, mg.Drift, strings.Join(lines, "\n  "))}
	}
	return nil
}

// follow makes the case's CR the custom resource a kind move made of it
// (forward), or the one its rollback made again (back), so that the steps
// after it patch, delete and read the custom resource that holds the
// case's state now. A CR the move did not select stays as it is.
func (cr *caseRun) follow(ctx context.Context, k *migrate.KindMove, forward bool) error {
	if cr.cr == nil {
		return nil
	}
	var gvk schema.GroupVersionKind
	var key client.ObjectKey
	var made func(*unstructured.Unstructured) bool
	if forward {
		if cr.cr.GroupVersionKind() != k.From.GroupVersionKind {
			return nil
		}
		gvk, key = k.To.GroupVersionKind, k.TargetKey(cr.cr)
		uid := string(cr.cr.GetUID())
		made = func(u *unstructured.Unstructured) bool { return u.GetAnnotations()[migrate.AnnotationFromUID] == uid }
	} else {
		if cr.cr.GroupVersionKind() != k.To.GroupVersionKind || len(cr.moved) == 0 {
			return nil
		}
		prev := cr.moved[len(cr.moved)-1]
		gvk, key = k.From.GroupVersionKind, client.ObjectKeyFromObject(prev)
		uid := string(prev.GetUID())
		made = func(u *unstructured.Unstructured) bool {
			return string(u.GetUID()) == uid || u.GetAnnotations()[migrate.AnnotationRollbackOf] == uid
		}
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := cr.run.c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if !made(obj) {
		return nil
	}
	if forward {
		cr.moved = append(cr.moved, cr.cr)
	} else {
		cr.moved = cr.moved[:len(cr.moved)-1]
	}
	cr.cr = obj
	return nil
}
