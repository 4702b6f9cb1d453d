package gateway

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// State is where an intent is, in one word.
type State string

// The states of an intent.
const (
	// StateProgressing: the runtime has not finished with the intent's
	// latest version yet.
	StateProgressing State = "progressing"
	// StateReady: everything the intent asks for is there and ready.
	StateReady State = "ready"
	// StateFailed: something the intent asks for failed; Problems say
	// what, by field. The runtime keeps retrying.
	StateFailed State = "failed"
	// StateDeleting: the intent was deleted and is being cleaned up.
	StateDeleting State = "deleting"
	// StateDeleted: the intent is gone.
	StateDeleted State = "deleted"
)

// View is what a caller reads back about one intent: the intent as it
// stands, the Blueprint's view of it, its state, and its problems in terms
// of its fields. It is the body of every answer about an intent.
type View struct {
	Target string `json:"target"`
	// Name identifies the intent within its target (and environment).
	Name string `json:"name"`
	// Intent holds the intent's fields, as sent or defaulted.
	Intent Intent `json:"intent"`
	State  State  `json:"state"`
	// Ready is true when State is ready.
	Ready bool `json:"ready"`
	// Message says, in a sentence, what the state means now.
	Message string `json:"message,omitempty"`
	// View is serve.view, evaluated; a field whose data is not there yet
	// is left out.
	View map[string]any `json:"view,omitempty"`
	// Problems are what failed, each naming the fields it concerns.
	Problems []ViewProblem `json:"problems,omitempty"`
	// CreatedBy is the name of the token that made the intent.
	CreatedBy string `json:"createdBy,omitempty"`
	// Created is when the intent was first made.
	Created *time.Time `json:"created,omitempty"`
	// Links are where to read, watch, update or delete the intent.
	Links map[string]string `json:"links,omitempty"`
}

// ViewProblem is one thing that failed, in terms of intent fields.
type ViewProblem struct {
	// Fields are the intent fields it concerns, sorted; empty when it
	// concerns none in particular.
	Fields  []string `json:"fields,omitempty"`
	Message string   `json:"message"`
}

// View computes the view of obj, a custom resource of t.
func (t *Target) View(obj *unstructured.Unstructured) *View {
	in := t.IntentOf(obj)
	v := &View{Target: t.Name(), Name: obj.GetName(), Intent: in, CreatedBy: obj.GetLabels()[LabelCaller]}
	if ts := obj.GetCreationTimestamp(); !ts.IsZero() {
		c := ts.UTC()
		v.Created = &c
	}
	v.Links = t.links(obj.GetName(), t.Environment(in))
	v.State, v.Message, v.Problems = t.state(obj, in)
	v.Ready = v.State == StateReady
	v.View = t.evalView(obj, in)
	return v
}

// Deleted is the view of an intent that is gone.
func (t *Target) Deleted(name string, in Intent) *View {
	if in == nil {
		in = Intent{}
	}
	return &View{Target: t.Name(), Name: name, Intent: in, State: StateDeleted, Message: "the intent is deleted, and everything made for it is gone or going"}
}

// links are the URLs of an intent.
func (t *Target) links(name, env string) map[string]string {
	self := "/v1/targets/" + t.Name() + "/intents/" + name
	q := ""
	if env != "" {
		q = "?" + t.Serve.Namespace.From + "=" + env
	}
	return map[string]string{"self": self + q, "watch": self + "/watch" + q}
}

// evalView evaluates serve.view. A field whose expression reads data not
// there yet (a status field the runtime has not written) is left out.
func (t *Target) evalView(obj *unstructured.Unstructured, in Intent) map[string]any {
	if t.view == nil {
		return nil
	}
	vars, err := t.view.NewViewVars(obj, map[string]any(in))
	if err != nil {
		return nil
	}
	out := map[string]any{}
	for _, f := range t.Serve.View.Fields {
		val, err := t.view.Render(f.Value, vars)
		if err != nil || val == nil {
			continue
		}
		out[f.Key] = val
	}
	return out
}

// EvalViewErrors evaluates serve.view like View does and returns, by view
// field, why each one left out was: for inrun serve play.
func (t *Target) EvalViewErrors(obj *unstructured.Unstructured, in Intent) map[string]string {
	if t.view == nil {
		return nil
	}
	vars, err := t.view.NewViewVars(obj, map[string]any(in))
	if err != nil {
		return map[string]string{"*": err.Error()}
	}
	out := map[string]string{}
	for _, f := range t.Serve.View.Fields {
		if _, err := t.view.Render(f.Value, vars); err != nil {
			var ee *expr.EvalError
			msg := err.Error()
			if errors.As(err, &ee) {
				msg = ee.Err.Error()
			}
			out[f.Key] = msg
		}
	}
	return out
}

// state reads the runtime's conditions on obj: its state, a message, and
// its problems.
func (t *Target) state(obj *unstructured.Unstructured, in Intent) (State, string, []ViewProblem) {
	if obj.GetDeletionTimestamp() != nil {
		return StateDeleting, "the intent is deleted; what was made for it is being cleaned up", nil
	}
	conds := conditions(obj)
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if len(conds) == 0 || observed < obj.GetGeneration() {
		return StateProgressing, "waiting for the runtime to take the intent's latest version", nil
	}
	if c := find(conds, "Degraded"); c != nil && c.Status == metav1.ConditionTrue {
		problems := t.Problems(c.Message, in)
		return StateFailed, "something the intent asks for failed; the runtime keeps trying", problems
	}
	if c := find(conds, "Ready"); c != nil && c.Status == metav1.ConditionTrue {
		return StateReady, "everything the intent asks for is ready", nil
	}
	msg := "not ready yet"
	if c := find(conds, "Ready"); c != nil && c.Message != "" {
		msg = "not ready yet: " + t.scrub(c.Message, in)
	}
	return StateProgressing, msg, nil
}

func conditions(obj *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

func find(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// childRE finds the child a line of the Degraded condition is about.
var childRE = regexp.MustCompile(`^child "([^"]+)": `)

// Problems translates the runtime's Degraded message into problems in
// terms of intent fields. Each line is one failure: a child's (named by
// the fields its expressions read, and of those the ones whose value the
// message quotes), the remote reconciler's (the fields reconcile.args
// reads), or the Blueprint's own. The message keeps what the cluster said,
// without the custom resource's paths, children's kinds and positions.
func (t *Target) Problems(degraded string, in Intent) []ViewProblem {
	var out []ViewProblem
	for _, line := range strings.Split(degraded, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var candidates []string
		what := ""
		switch m := childRE.FindStringSubmatch(line); {
		case m != nil:
			id := m[1]
			line = line[len(m[0]):]
			if rest, ok := strings.CutPrefix(id, "remote."); ok {
				candidates = t.Serve.Reads[ir.RemoteReads]
				what = rest
			} else {
				candidates = t.Serve.Reads[id]
				what = id
			}
		case strings.HasPrefix(line, "remote reconciler"):
			candidates = t.Serve.Reads[ir.RemoteReads]
			what = "the reconciler"
			line = strings.TrimPrefix(strings.TrimPrefix(line, "remote reconciler"), ": ")
		}
		fields := quoted(line, candidates, in)
		if len(fields) == 0 {
			fields = slices.Clone(candidates)
		}
		msg := t.explain(line, fields, in)
		if what != "" {
			msg = what + " failed: " + msg
		}
		out = append(out, ViewProblem{Fields: fields, Message: msg})
	}
	return out
}

// quoted returns the fields among candidates whose value the message
// quotes as the invalid one.
func quoted(msg string, candidates []string, in Intent) []string {
	var out []string
	for _, f := range candidates {
		v, ok := in[f]
		if !ok {
			continue
		}
		s := fmt.Sprint(v)
		if str, isStr := v.(string); isStr {
			s = strconv.Quote(str)
		}
		if strings.Contains(msg, "Invalid value: "+s) || strings.Contains(msg, "value "+s) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// invalidRE is how the API server words a refused value.
var invalidRE = regexp.MustCompile(`Invalid value: ("(?:[^"\\]|\\.)*"|[^:]+): ([^\],]+)`)

// explain words a failure for the caller: a refused value as the field it
// came from ("version \"1.0+b\" was refused: ..."), otherwise the message
// with paths and kinds taken out.
func (t *Target) explain(msg string, fields []string, in Intent) string {
	if m := invalidRE.FindStringSubmatch(msg); m != nil && len(fields) == 1 {
		return fmt.Sprintf("%s %s was refused: %s", fields[0], m[1], strings.TrimSpace(t.scrub(m[2], in)))
	}
	return t.scrub(msg, in)
}

var (
	// objectRE is how the API server names an object: Deployment.apps "x" is invalid.
	objectRE = regexp.MustCompile(`\b[A-Z][A-Za-z]*(\.[a-z0-9.-]+)? "[^"]*" is invalid: `)
	// pathRE is a path into an object, with or without self.
	pathRE = regexp.MustCompile(`\b(self\.)?(spec|status|metadata)((\.[A-Za-z0-9_-]+)|(\[[^\]]*\]))+`)
	// posRE is a Blueprint position.
	posRE = regexp.MustCompile(`[^\s:]+\.ya?ml:\d+:\d+: `)
	// exprRE is an expression quoted in a message.
	exprRE = regexp.MustCompile(`\$\{[^}]*\}: ?`)
)

// scrub takes out of a message what callers do not know: the custom
// resource's paths (those of fields become the fields' names), objects'
// kinds and paths, Blueprint positions and expressions.
func (t *Target) scrub(msg string, in Intent) string {
	msg = posRE.ReplaceAllString(msg, "")
	msg = exprRE.ReplaceAllString(msg, "")
	msg = objectRE.ReplaceAllString(msg, "")
	msg = pathRE.ReplaceAllStringFunc(msg, func(p string) string {
		if f := t.Serve.FieldAt(strings.TrimPrefix(p, "self.")); f != nil {
			return f.Name
		}
		return "a setting"
	})
	return strings.TrimSpace(msg)
}
