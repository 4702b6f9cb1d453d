package simulate

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/match"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/sdk"
)

// CheckFile checks what f's cases name against the Blueprint, before any
// of them runs: every child id in expect.children, expect.absent and
// observe must be one the Blueprint has (<id>.<id> for a used Blueprint's
// child, remote.<id> for what a remote reconciler returns), and every
// field of expect.status one the custom resource's status can have; and a
// recorded reply (to a request that is not finalizing) must be one the
// runtime takes for the Blueprint (reconciler.CheckResult: its kinds, a
// step only with reconcile.workflow). Else
// an absent: [ingres] would hold whatever the Blueprint does, and a
// children: [{id: deploymnet}] fail without saying why. Every problem is
// reported, at its place in the file, with the name probably meant.
func (s *Simulator) CheckFile(f *File) error {
	var l diag.List
	s.checkRefs(f, &l)
	return l.Err()
}

// checkRefs adds CheckFile's problems to l.
func (s *Simulator) checkRefs(f *File, l *diag.List) {
	s.checkFileReply(f, l)
	for i := range f.Cases {
		s.checkCase(f, &f.Cases[i], l)
	}
}

// checkFileReply adds what the runtime refuses of f's reply, which every
// case without one of its own gets, to l: once for the file, not for each
// case.
func (s *Simulator) checkFileReply(f *File, l *diag.List) {
	s.checkReply(f.Path, f.Reply, f.replyNode, "reply", false, l)
}

// checkReply adds to l what the runtime refuses of a recorded reply that
// the contract's reading (Parse's) took: reconciler.CheckResult, each
// problem at its field in the file. label names the reply in messages.
// A reply to a finalizing request (a delete step's) is not asked about
// resources or steps, as the runtime does not ask.
func (s *Simulator) checkReply(file string, reply map[string]any, n *yaml.Node, label string, finalizing bool, l *diag.List) {
	rec := s.bp.Reconcile
	if reply == nil || n == nil || finalizing || rec == nil || rec.Remote == nil {
		return
	}
	res, err := sdk.DecodeResult(replyBody(reply), false)
	if err != nil {
		return // Parse reported it
	}
	r := yamlpos.NewReader(file, l)
	for _, p := range reconciler.CheckResult(s.bp, res) {
		code := diag.InvalidValue
		if p.Path == "step.next" {
			code = diag.UnknownReference
		}
		r.Errorf(yamlpos.At(n, p.Path, true), code, "", "%s: %s", label, p.Message)
	}
}

// checkCase adds the problems of c's references to the Blueprint to l.
func (s *Simulator) checkCase(f *File, c *Case, l *diag.List) {
	s.checkReply(f.Path, c.Reply, c.replyNode, fmt.Sprintf("case %q: reply", c.Name), false, l)
	for j := range c.Steps {
		st := &c.Steps[j]
		s.checkReply(f.Path, st.Reply, st.replyNode, fmt.Sprintf("case %q: steps[%d].reply", c.Name, j), st.Delete, l)
	}
	if s.bp.ControllerRef() != nil {
		// Its children are Kind/name, and its status is its own.
		return
	}
	ids, open := childIDs(s.bp)
	label := "case " + strconv.Quote(c.Name)
	at := func(path string) diag.Pos {
		if p, ok := c.pos[path]; ok {
			return p
		}
		return diag.Pos{File: f.Path}
	}
	child := func(path, id string) {
		if id == "" || slices.Contains(ids, id) || slices.ContainsFunc(open, func(p string) bool { return strings.HasPrefix(id, p) }) {
			return
		}
		names := slices.Clone(ids)
		for _, p := range open {
			names = append(names, p+"<id>")
		}
		hint := "name one of " + strings.Join(names, ", ")
		if near, ok := suggest.Closest(id, ids); ok {
			hint = "did you mean " + near + "?"
		}
		l.Add(at(path), diag.UnknownReference, hint, "%s: %s %q is no child of the Blueprint", label, path, id)
	}
	phase := func(prefix string, observe []Observation, e Expectation) {
		for k, o := range observe {
			child(fmt.Sprintf("%s[%d].child", yamlpos.Join(prefix, "observe"), k), o.Child)
		}
		expect := yamlpos.Join(prefix, "expect")
		for k, ce := range e.Children {
			child(fmt.Sprintf("%s.children[%d].id", expect, k), ce.ID)
		}
		for k, id := range e.Absent {
			child(fmt.Sprintf("%s.absent[%d]", expect, k), id)
		}
		unknown := UnknownStatusFields(s.bp, e.Status)
		for _, name := range slices.Sorted(maps.Keys(unknown)) {
			path := expect + ".status." + name
			l.Add(at(path), diag.UnknownField, unknown[name], "%s: %s is no field of the %s's status", label, path, s.bp.Resource.Kind)
		}
	}
	phase("", c.Observe, c.Expect)
	for j := range c.Steps {
		phase(fmt.Sprintf("steps[%d]", j), c.Steps[j].Observe, c.Steps[j].Expect)
	}
}

// childIDs returns the ids a case can name bp's children by, as the
// session names them (session.children): each child's id and, for a child
// that is a used Blueprint's custom resource, <id>.<id in that Blueprint>.
// open are the prefixes under which any id may follow: remote. where a
// remote reconciler names its children, <id>. where a used Blueprint's
// controller-runtime reconciler does (Kind/name).
func childIDs(bp *ir.Blueprint) (ids, open []string) {
	all := ir.WithUsed([]*ir.Blueprint{bp})
	var walk func(b *ir.Blueprint, prefix string, within []*ir.Blueprint)
	walk = func(b *ir.Blueprint, prefix string, within []*ir.Blueprint) {
		if b.ControllerRef() != nil {
			open = append(open, prefix)
			return
		}
		if b.Reconcile != nil && b.Reconcile.Remote != nil {
			open = append(open, prefix+remoteChildPrefix)
		}
		for _, c := range b.Children {
			ids = append(ids, prefix+c.ID)
			for _, u := range all {
				// The compiler refuses Blueprints that use each other in a
				// cycle; within keeps this from going round one anyway.
				if u.Resource.GroupVersionKind == c.GroupVersionKind && !slices.Contains(within, u) {
					walk(u, prefix+c.ID+".", append(within, u))
					break
				}
			}
		}
	}
	walk(bp, "", []*ir.Blueprint{bp})
	return ids, open
}

// UnknownStatusFields returns, for each field of status (an expectation
// on the custom resource's status) that bp's status cannot have, a hint
// naming the field probably meant, or the fields there are; keyed by its
// path under status (workflow.steps[0].nme). Below the top level it knows
// the fields only the runtime writes, whoever else writes status: the
// conditions and, with reconcile.workflow, the workflow's progress. Else a workflow: {sumary:
// !absent} would hold whatever the runtime wrote.
func UnknownStatusFields(bp *ir.Blueprint, status map[string]any) map[string]string {
	unknown := map[string]string{}
	fields, open := StatusFields(bp)
	for name, want := range status {
		switch {
		case name == reconciler.WorkflowField && bp.Reconcile != nil && bp.Reconcile.Workflow != nil:
			unknownKeys(name, want, reflect.TypeFor[reconciler.WorkflowStatus](), unknown)
		case name == "conditions":
			unknownKeys(name, want, reflect.TypeFor[[]metav1.Condition](), unknown)
		case open || slices.Contains(fields, name):
		default:
			unknown[name] = fieldHint(name, fields)
		}
	}
	return unknown
}

// unknownKeys adds to unknown, by path, each key of want (a partial
// match) that no JSON field of t has: t's fields by their json names,
// list items by the element type. A type that marshals itself (a
// metav1.Time) is a value, not checked further.
func unknownKeys(path string, want any, t reflect.Type, unknown map[string]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Marshaler]()) {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return
		}
		fields := map[string]reflect.Type{}
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for k, v := range w {
			if ft, ok := fields[k]; ok {
				unknownKeys(path+"."+k, v, ft, unknown)
			} else {
				unknown[path+"."+k] = fieldHint(k, slices.Sorted(maps.Keys(fields)))
			}
		}
	case []any:
		if t.Kind() == reflect.Slice {
			for i, item := range w {
				unknownKeys(fmt.Sprintf("%s[%d]", path, i), item, t.Elem(), unknown)
			}
		}
	case match.Contains:
		unknownKeys(path, []any(w), t, unknown)
	}
}

// fieldHint names the field of fields probably meant by name, or them all.
func fieldHint(name string, fields []string) string {
	if near, ok := suggest.Closest(name, fields); ok {
		return "did you mean " + near + "?"
	}
	return "its fields are " + strings.Join(fields, ", ")
}

// StatusFields returns the top-level fields the custom resource's status
// can have, or open when it can have any: what an expectation on the
// status may name, here and in e2e files. Only the runtime writes it, with
// emit.status's fields and its own, unless a remote reconciler or a Go
// status hook adds fields of theirs; and a CRD schema that declares the
// status's fields (without keeping unknown ones) holds every write to
// them, in the store as on the API server.
func StatusFields(bp *ir.Blueprint) (fields []string, open bool) {
	declared, closed := schemaStatus(bp)
	if (bp.Reconcile != nil && bp.Reconcile.Remote != nil) || (bp.Hooks != nil && bp.Hooks.Status != nil) {
		return declared, !closed
	}
	fields = append(declared, "conditions", "observedGeneration")
	if bp.Reconcile != nil && bp.Reconcile.Workflow != nil {
		fields = append(fields, reconciler.WorkflowField)
	}
	if bp.Status != nil {
		for _, f := range bp.Status.Fields {
			fields = append(fields, f.Key)
		}
	}
	slices.Sort(fields)
	return slices.Compact(fields), false
}

// schemaStatus returns the status fields bp's CRD schema declares, and
// whether it allows no others.
func schemaStatus(bp *ir.Blueprint) (fields []string, closed bool) {
	if bp.Resource.Schema == nil {
		return nil, false
	}
	st, ok := bp.Resource.Schema.Properties["status"]
	if !ok {
		return nil, false
	}
	keeps := (st.XPreserveUnknownFields != nil && *st.XPreserveUnknownFields) || st.AdditionalProperties != nil
	return slices.Sorted(maps.Keys(st.Properties)), !keeps
}
