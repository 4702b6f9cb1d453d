package simulate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/match"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/remote"
)

// Input is what a simulation starts from.
type Input struct {
	// CR is the custom resource to reconcile.
	CR *unstructured.Unstructured
	// Objects exist before the first pass.
	Objects []*unstructured.Unstructured
	// Passes is how many reconcile passes to run; default DefaultPasses.
	Passes int
	// Observe injects child status after a pass.
	Observe []Observation
}

// Outcome is the state of the store after a simulation.
type Outcome struct {
	// CR is the custom resource as stored, status included.
	CR *unstructured.Unstructured
	// Children are the CR's children by id.
	Children map[string][]*unstructured.Unstructured
	// Reports are the reconciler's report of each pass.
	Reports []*reconciler.Report
	// IdleWrites are the writes of one further pass after the last: zero
	// for an idempotent reconcile.
	IdleWrites int64
}

// Last returns the report of the last pass.
func (o *Outcome) Last() *reconciler.Report { return o.Reports[len(o.Reports)-1] }

// Simulator runs one Blueprint in memory. Build it once and run many
// inputs: the expressions are compiled once.
type Simulator struct {
	bp    *ir.Blueprint
	progs *expr.Programs
}

// New returns a Simulator for bp.
func New(bp *ir.Blueprint) (*Simulator, error) {
	progs, err := expr.Compile(bp)
	if err != nil {
		return nil, err
	}
	return &Simulator{bp: bp, progs: progs}, nil
}

// Run reconciles in.CR in a fresh store, in.Passes times, then once more to
// measure idempotence.
func (s *Simulator) Run(ctx context.Context, in Input) (*Outcome, error) {
	store := NewStore(s.bp)
	for _, obj := range in.Objects {
		o := obj.DeepCopy()
		if o.GetNamespace() == "" && s.namespaced(o.GroupVersionKind()) {
			o.SetNamespace("default")
		}
		if err := store.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	cr := in.CR.DeepCopy()
	if err := store.CreateCR(ctx, cr); err != nil {
		return nil, err
	}
	opts := reconciler.Options{Client: store, Renderer: reconciler.CELRenderer{Programs: s.progs}}
	if s.bp.Reconcile != nil && s.bp.Reconcile.Remote != nil {
		// The case's reconciler must be running where the Blueprint says.
		c, err := remote.New(remote.OptionsFor(s.bp.Reconcile.Remote))
		if err != nil {
			return nil, err
		}
		opts.Remote = c
	}
	rec, err := reconciler.New(s.bp, opts)
	if err != nil {
		return nil, err
	}
	passes := in.Passes
	if passes <= 0 {
		passes = DefaultPasses
	}
	out := &Outcome{}
	key := client.ObjectKeyFromObject(cr)
	sync := func() (*reconciler.Report, error) {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(s.bp.Resource.GroupVersionKind)
		if err := store.Get(ctx, key, live); err != nil {
			return nil, err
		}
		rep, err := rec.Sync(ctx, live)
		if rep == nil {
			return nil, err
		}
		return rep, nil
	}
	for i := 1; i <= passes; i++ {
		rep, err := sync()
		if err != nil {
			return nil, err
		}
		out.Reports = append(out.Reports, rep)
		for _, o := range in.Observe {
			if o.AfterPass == i {
				if err := s.inject(ctx, store, cr, o); err != nil {
					return nil, err
				}
			}
		}
	}
	before := store.Writes()
	if _, err := sync(); err != nil {
		return nil, err
	}
	out.IdleWrites = store.Writes() - before

	out.CR = &unstructured.Unstructured{}
	out.CR.SetGroupVersionKind(s.bp.Resource.GroupVersionKind)
	if err := store.Get(ctx, key, out.CR); err != nil {
		return nil, err
	}
	out.Children, err = reconciler.Children(ctx, store, s.bp, out.CR)
	return out, err
}

func (s *Simulator) namespaced(gvk schema.GroupVersionKind) bool {
	for _, c := range s.bp.Children {
		if c.GroupVersionKind == gvk {
			return c.Namespaced
		}
	}
	return true
}

// inject merges observed status into a child, as the cluster's own
// controllers would.
func (s *Simulator) inject(ctx context.Context, store *Store, cr *unstructured.Unstructured, o Observation) error {
	c := s.bp.Child(o.Child)
	if c == nil {
		return fmt.Errorf("observe: the Blueprint has no child %q", o.Child)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(c.GroupVersionKind.GroupVersion().WithKind(c.Kind + "List"))
	if err := store.List(ctx, list, client.MatchingLabels{reconciler.LabelOwnerUID: string(cr.GetUID()), reconciler.LabelChild: c.ID}); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("observe after pass %d: child %q does not exist yet", o.AfterPass, o.Child)
	}
	for i := range list.Items {
		obj := &list.Items[i]
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		for k, v := range deepCopy(o.Status) {
			status[k] = v
		}
		obj.Object["status"] = status
		// Built-in kinds with status take it through the subresource only,
		// as on a cluster; other kinds keep it in the object.
		err := store.Status().Update(ctx, obj)
		if err != nil {
			err = store.Update(ctx, obj)
		}
		if err != nil {
			return fmt.Errorf("observe: writing status of %s: %w", types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, err)
		}
	}
	return nil
}

// Result is the verdict on one case.
type Result struct {
	Case     string
	Failures []string
	Err      error
}

// Passed reports whether the case held.
func (r *Result) Passed() bool { return r.Err == nil && len(r.Failures) == 0 }

// RunCase runs one case of f and checks its expectations.
func (s *Simulator) RunCase(ctx context.Context, f *File, c *Case) *Result {
	res := &Result{Case: c.Name}
	cr, err := f.LoadCR(c)
	if err != nil {
		res.Err = err
		return res
	}
	in := Input{CR: cr, Passes: c.Passes, Observe: c.Observe}
	for _, o := range c.Objects {
		in.Objects = append(in.Objects, &unstructured.Unstructured{Object: deepCopy(o)})
	}
	out, err := s.Run(ctx, in)
	if err != nil {
		res.Err = err
		return res
	}
	res.Failures = Check(out, c.Expect)
	if out.IdleWrites != 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("not idempotent: a further pass made %d writes; the reconcile should converge", out.IdleWrites))
	}
	return res
}

// Check compares an outcome with an expectation and describes every
// difference.
func Check(out *Outcome, exp Expectation) []string {
	var fails []string
	for _, ce := range exp.Children {
		objs := out.Children[ce.ID]
		switch len(objs) {
		case 0:
			fails = append(fails, fmt.Sprintf("child %q: expected to exist, but it does not%s", ce.ID, pendingNote(out, ce.ID)))
			continue
		case 1:
		default:
			fails = append(fails, fmt.Sprintf("child %q: expected one object, found %d", ce.ID, len(objs)))
			continue
		}
		if !match.Partial(objs[0].Object, ce.Match) {
			fails = append(fails, fmt.Sprintf("child %q differs (-expected +got):\n%s", ce.ID, indent(match.Diff(objs[0].Object, ce.Match))))
		}
	}
	for _, id := range exp.Absent {
		if objs := out.Children[id]; len(objs) > 0 {
			fails = append(fails, fmt.Sprintf("child %q: expected to be absent, but %s %s exists", id, objs[0].GetKind(), objs[0].GetName()))
		}
	}
	if exp.Status != nil {
		status, _, _ := unstructured.NestedMap(out.CR.Object, "status")
		if !match.Partial(status, exp.Status) {
			fails = append(fails, "status differs (-expected +got):\n"+indent(match.Diff(status, exp.Status)))
		}
	}
	errText := ""
	if err := errors.Join(out.Last().Errors...); err != nil {
		errText = err.Error()
	}
	switch {
	case len(exp.Errors) == 0 && errText != "":
		fails = append(fails, "expected no errors, got:\n"+indent(errText))
	default:
		for _, want := range exp.Errors {
			if !strings.Contains(errText, want) {
				got := errText
				if got == "" {
					got = "no errors"
				}
				fails = append(fails, fmt.Sprintf("expected an error containing %q, got:\n%s", want, indent(got)))
			}
		}
	}
	return fails
}

func pendingNote(out *Outcome, id string) string {
	if why, ok := out.Last().Pending[id]; ok {
		return " (" + why + ")"
	}
	return ""
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return "    " + strings.Join(lines, "\n    ")
}

// SortedIDs returns the ids of an outcome's children, sorted.
func (o *Outcome) SortedIDs() []string {
	ids := make([]string, 0, len(o.Children))
	for id := range o.Children {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
