// Package play runs one intent through every stage of the gateway locally,
// with no cluster, and prints what goes in and comes out of each: what the
// token allows, the validated intent, the custom resource it becomes, the
// children and status of a simulated reconcile (package simulate), and the
// view the caller would read. It backs inrun serve play.
//
// The stages are the gateway's own (Target.Validate, Map, View and the
// grants of serve.tokens); only the cluster is simulated: the custom
// resource is applied to simulate's in-memory store and reconciled by the
// runtime's own reconcile pass. The output is deterministic, so that it can
// be checked against a golden file.
package play

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/simulate"
)

// Options say what to play.
type Options struct {
	// Blueprint is the target's Blueprint; it must have a serve section.
	// Required.
	Blueprint *ir.Blueprint
	// Intent is the request body, as a caller would send it. Required.
	Intent []byte
	// Scopes are the play token's scopes. Default: every scope the target
	// grants create.
	Scopes []string
	// Name names the intent, as PUT /v1/targets/<target>/intents/<name>
	// would; empty for a POST.
	Name string
	// The remote reconciler, when the Blueprint has one: a recorded Reply,
	// else a Reconciler process started for the play (BaseDir is what its
	// dir is relative to), else the one the Blueprint names.
	Reply      map[string]any
	Reconciler *simulate.Reconciler
	BaseDir    string
	// Passes of the reconcile. Default simulate.DefaultPasses.
	Passes int
	// Out receives the stages. Required.
	Out io.Writer
}

// ErrRefused is returned, wrapped, when a stage refuses the intent; the
// refusal has been printed as the gateway would answer it.
var ErrRefused = errors.New("the gateway refuses the intent")

// Run plays the intent and prints each stage.
func Run(ctx context.Context, opts Options) error {
	if opts.Blueprint == nil || opts.Out == nil {
		return errors.New("play: Options.Blueprint and Options.Out are required")
	}
	return run(ctx, opts, &printer{w: opts.Out}, nil)
}

// Stage is one stage of a play: its heading and what it printed.
type Stage struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Stages plays the intent as Run does (opts.Out is not used) and returns
// the stages one by one, and the Problem of the stage that refused the
// intent, if one did: what the console shows.
func Stages(ctx context.Context, opts Options) ([]Stage, *gateway.Problem, error) {
	if opts.Blueprint == nil {
		return nil, nil, errors.New("play: Options.Blueprint is required")
	}
	p := &printer{w: io.Discard, stages: []Stage{}}
	var refused *gateway.Problem
	err := run(ctx, opts, p, func(prob *gateway.Problem) { refused = prob })
	if errors.Is(err, ErrRefused) {
		err = nil
	}
	return p.stages, refused, err
}

func run(ctx context.Context, opts Options, p *printer, onRefuse func(*gateway.Problem)) error {
	t, err := gateway.NewTarget(opts.Blueprint)
	if err != nil {
		return err
	}
	p.onRefuse = onRefuse
	scopes := opts.Scopes
	if len(scopes) == 0 {
		for _, g := range t.Serve.Tokens {
			if slices.Contains(g.Verbs, ir.VerbCreate) && !slices.Contains(scopes, g.Scope) {
				scopes = append(scopes, g.Scope)
			}
		}
	}
	caller := &gateway.Caller{TokenID: "play", Name: "play", Scopes: scopes}

	p.stage("1. authenticate: a play token, scopes %s", strings.Join(scopes, ", "))
	info := t.Info(caller)
	if len(info.Allowed) == 0 {
		p.line("it may do nothing with target %s", t.Name())
	}
	for _, v := range ir.Verbs {
		envs, ok := info.Allowed[string(v)]
		switch {
		case !ok:
		case len(envs) == 0:
			p.line("may %s %s intents", v, t.Name())
		default:
			p.line("may %s %s intents in %s %s", v, t.Name(), t.Serve.Namespace.From, strings.Join(envs, ", "))
		}
	}

	p.stage("2. validate")
	p.line("input:")
	p.block(strings.TrimSpace(string(opts.Intent)))
	in, prob := t.Validate(opts.Intent)
	if prob != nil {
		return p.refuse(prob)
	}
	p.line("intent, with defaults:")
	p.json(in)
	env := t.Environment(in)
	if prob := gateway.Authorize(caller, t, ir.VerbCreate, env); prob != nil {
		return p.refuse(prob)
	}
	if env != "" {
		p.line("create in %s %s: allowed", t.Serve.Namespace.From, env)
	} else {
		p.line("create: allowed")
	}

	p.stage("3. map: the custom resource it becomes")
	name, prob := t.NameFrom(in)
	if prob != nil {
		return p.refuse(prob)
	}
	switch {
	case opts.Name != "":
		// As PUT .../intents/<name> would have it.
		if name, prob = t.NameForPut(in, name, opts.Name); prob != nil {
			return p.refuse(prob)
		}
	case name == "":
		name = t.Serve.Name.Generate + "xxxxx"
		p.line("(the gateway generates the name: %s and five random letters or digits)", t.Serve.Name.Generate)
	}
	cr := t.Map(in, name, caller.Name)
	p.yaml(cr.Object)

	p.stage("4. apply and reconcile, simulated")
	sim, err := simulate.New(opts.Blueprint)
	if err != nil {
		return err
	}
	out, err := sim.Run(ctx, simulate.Input{CR: cr, Passes: opts.Passes, Reply: opts.Reply, Reconciler: opts.Reconciler, BaseDir: opts.BaseDir})
	if err != nil {
		return fmt.Errorf("simulating the reconcile: %w", err)
	}
	passes := len(out.Reports)
	p.line("%d passes of the runtime's reconcile, in memory", passes)
	ids := out.SortedIDs()
	if len(ids) == 0 {
		p.line("children: none")
	} else {
		p.line("children:")
	}
	for _, id := range ids {
		for _, obj := range out.Children[id] {
			p.line("  %s: %s %s", id, obj.GetKind(), join(obj.GetNamespace(), obj.GetName()))
		}
	}
	p.line("status:")
	p.yaml(stableStatus(out.CR))
	if errs := out.Last().Errors; len(errs) > 0 {
		p.line("errors of the last pass:")
		for _, e := range errs {
			p.line("  %v", e)
		}
	}

	p.stage("5. view: what the caller reads back")
	view := t.View(out.CR)
	view.Created = nil
	p.json(view)
	if missing := t.EvalViewErrors(out.CR, view.Intent); len(missing) > 0 {
		keys := make([]string, 0, len(missing))
		for k := range missing {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		p.line("left out of the view, their data not there yet:")
		for _, k := range keys {
			p.line("  %s: %s", k, missing[k])
		}
	}
	return nil
}

// stableStatus is the custom resource's status without what changes from
// run to run (the conditions' transition times).
func stableStatus(cr *unstructured.Unstructured) map[string]any {
	status, _, _ := unstructured.NestedMap(cr.Object, "status")
	if conds, ok := status["conditions"].([]any); ok {
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok {
				delete(m, "lastTransitionTime")
			}
		}
	}
	return status
}

func join(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// printer writes the stages, and keeps them apart when stages is not nil.
type printer struct {
	w        io.Writer
	n        int
	stages   []Stage
	onRefuse func(*gateway.Problem)
}

func (p *printer) stage(format string, args ...any) {
	if p.n > 0 {
		fmt.Fprintln(p.w)
	}
	p.n++
	title := fmt.Sprintf(format, args...)
	fmt.Fprintf(p.w, "== %s\n", title)
	if p.stages != nil {
		p.stages = append(p.stages, Stage{Title: title})
	}
}

// text writes a line of the current stage.
func (p *printer) text(s string) {
	fmt.Fprintln(p.w, s)
	if n := len(p.stages); n > 0 {
		p.stages[n-1].Text += s + "\n"
	}
}

func (p *printer) line(format string, args ...any) {
	p.text("   " + fmt.Sprintf(format, args...))
}

func (p *printer) block(s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		p.text("     " + l)
	}
}

func (p *printer) json(v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	p.block(b.String())
}

func (p *printer) yaml(v any) {
	b, err := yaml.Marshal(v)
	if err != nil {
		p.line("%v", err)
		return
	}
	p.block(string(b))
}

// refuse prints a Problem as the gateway would answer it.
func (p *printer) refuse(prob *gateway.Problem) error {
	if p.onRefuse != nil {
		p.onRefuse(prob)
	}
	p.line("refused: %d %s", prob.Status, prob.Title)
	p.json(prob)
	return fmt.Errorf("%w: %s", ErrRefused, prob.Detail)
}
