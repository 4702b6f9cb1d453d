package sdk

import (
	"sort"
	"strconv"
	"strings"
)

var (
	requestFields   = []string{"apiVersion", "kind", "object", "args", "observed", "finalizing", "step"}
	resultFields    = []string{"apiVersion", "kind", "status", "labels", "annotations", "resources", "conditions", "events", "requeueAfter", "done", "step"}
	conditionFields = []string{"type", "status", "reason", "message"}
	eventFields     = []string{"type", "reason", "message"}

	conditionNotes = map[string]string{
		"lastTransitionTime": "the runtime sets it when the status changes",
		"observedGeneration": "the runtime sets it",
	}
	eventNotes = map[string]string{
		"note":   "use message",
		"action": "the runtime sets it",
	}
	resultNotes = map[string]string{
		"requeue": "use requeueAfter with a duration",
		"error":   "answer with an HTTP 5xx status to report a failure",
	}
)

// DecodeRequest reads a ReconcileRequest strictly: unknown fields, values of
// the wrong type, a missing or unsupported apiVersion or kind, and objects
// without apiVersion, kind or metadata.name are all errors. The error is an
// ErrorList holding every problem, each with its JSON path; for a document
// of another apiVersion, only that one.
func DecodeRequest(data []byte) (*Request, error) {
	c := newChecker("request")
	v, ok := c.parse(data)
	if !ok {
		return nil, c.errs
	}
	m, ok := c.object("", v)
	if !ok || !c.readsAs(m) {
		return nil, c.errs
	}
	r := &Request{Args: map[string]any{}, Observed: []Resource{}}
	c.known("", m, "a "+KindRequest, requestFields, nil)
	r.APIVersion, r.Kind = c.optString(m, "apiVersion"), c.optString(m, "kind")
	if v, ok := m["object"]; ok {
		r.Object, _ = c.object("object", v)
	}
	if v, ok := m["args"]; ok {
		if args, ok := c.object("args", v); ok {
			r.Args = args
		}
	}
	if v, ok := m["observed"]; ok {
		r.Observed = c.resources("observed", v)
	}
	if v, ok := m["finalizing"]; ok {
		r.Finalizing = c.boolean("finalizing", v)
	}
	if v, ok := m["step"]; ok {
		r.Step = c.step(v)
	}
	c.request(r)
	c.sort(requestFields)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeResult reads a ReconcileResult strictly, as the reply to a request
// whose Finalizing is finalizing. Besides what DecodeRequest checks, it
// refuses: a status.conditions or status.observedGeneration (the runtime's),
// label and annotation keys Kubernetes would refuse, two resources with one
// id or one identity, a condition or event without a valid type, status or
// reason, a requeueAfter that is not a duration, resources or step in reply
// to a finalizing request, done in reply to one that is not, and a step
// whose phase is not Succeeded, Running or Failed.
func DecodeResult(data []byte, finalizing bool) (*Result, error) {
	c := newChecker("reply")
	v, ok := c.parse(data)
	if !ok {
		return nil, c.errs
	}
	m, ok := c.object("", v)
	if !ok || !c.readsAs(m) {
		return nil, c.errs
	}
	r := &Result{}
	c.known("", m, "a "+KindResult, resultFields, resultNotes)
	r.APIVersion, r.Kind = c.optString(m, "apiVersion"), c.optString(m, "kind")
	if v, ok := m["status"]; ok {
		r.Status, _ = c.object("status", v)
	}
	if v, ok := m["labels"]; ok {
		r.Labels = c.stringMap("labels", v)
	}
	if v, ok := m["annotations"]; ok {
		r.Annotations = c.stringMap("annotations", v)
	}
	if v, ok := m["resources"]; ok {
		r.Resources = c.resources("resources", v)
	}
	if v, ok := m["conditions"]; ok {
		if items, ok := c.array("conditions", v); ok {
			for i, item := range items {
				path := index("conditions", i)
				if f, ok := c.fields(path, item, "a condition", conditionFields, conditionNotes); ok {
					r.Conditions = append(r.Conditions, Condition{Type: f[0], Status: f[1], Reason: f[2], Message: f[3]})
				}
			}
		}
	}
	if v, ok := m["events"]; ok {
		if items, ok := c.array("events", v); ok {
			for i, item := range items {
				path := index("events", i)
				if f, ok := c.fields(path, item, "an event", eventFields, eventNotes); ok {
					r.Events = append(r.Events, Event{Type: f[0], Reason: f[1], Message: f[2]})
				}
			}
		}
	}
	if v, ok := m["requeueAfter"]; ok {
		d, problem := parseDuration(v)
		if problem != "" {
			c.add("requeueAfter", problem, durationHint)
		}
		r.RequeueAfter = Duration(d)
	}
	if v, ok := m["done"]; ok {
		r.Done = c.boolean("done", v)
	}
	if v, ok := m["step"]; ok {
		r.Step = c.stepResult(v)
	}
	c.result(r, finalizing, false)
	c.sort(resultFields)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate checks a Request built in Go by the rules DecodeRequest applies.
func (r *Request) Validate() error {
	c := newChecker("request")
	c.request(r)
	return c.errs.Err()
}

// Validate checks a Result built in Go by the rules DecodeResult applies,
// as the reply to a request whose Finalizing is finalizing.
func (r *Result) Validate(finalizing bool) error {
	c := newChecker("Result")
	c.result(r, finalizing, true)
	return c.errs.Err()
}

// validateFor checks r as Handler's reply to req: by Validate's rules,
// and with a step only in reply to a request that has one, which the
// runtime refuses too.
func (r *Result) validateFor(req *Request) error {
	c := newChecker("Result")
	c.result(r, req.Finalizing, true)
	if r.Step != nil && req.Step == nil && !req.Finalizing && r.APIVersion == APIVersion {
		c.add("step", "is only valid in reply to a request with a step", "leave it out: the Blueprint declares no reconcile.workflow")
	}
	return c.errs.Err()
}

func (c *checker) optString(m map[string]any, key string) string {
	if v, ok := m[key]; ok {
		return c.str(key, v)
	}
	return ""
}

// resources reads an array of objects, each with an optional id.
func (c *checker) resources(path string, v any) []Resource {
	items, ok := c.array(path, v)
	if !ok {
		return nil
	}
	out := make([]Resource, 0, len(items))
	for i, item := range items {
		p := index(path, i)
		obj, ok := c.object(p, item)
		if !ok {
			out = append(out, Resource{Object: map[string]any{}})
			continue
		}
		r := Resource{Object: obj}
		if id, ok := obj[idField]; ok {
			r.ID = c.str(field(p, idField), id)
			delete(obj, idField)
		}
		out = append(out, r)
	}
	return out
}

// fields reads an object whose fields are all strings, returning them in
// the order of names.
func (c *checker) fields(path string, v any, what string, names []string, notes map[string]string) ([]string, bool) {
	m, ok := c.object(path, v)
	if !ok {
		return nil, false
	}
	c.known(path, m, what, names, notes)
	out := make([]string, len(names))
	for i, name := range names {
		if v, ok := m[name]; ok {
			out[i] = c.str(field(path, name), v)
		}
	}
	return out, true
}

// sort orders the problems by the documented order of the top-level field
// they are in, then by array index, keeping the order they were found in
// otherwise. Unknown fields come last.
func (c *checker) sort(fields []string) {
	type key struct{ field, index int }
	keyOf := func(path string) key {
		top, rest := path, ""
		if i := strings.IndexAny(path, ".["); i >= 0 {
			top, rest = path[:i], path[i:]
		}
		k := key{field: len(fields), index: -1}
		for i, f := range fields {
			if f == top {
				k.field = i
			}
		}
		if path == "" {
			k.field = -1
		}
		if strings.HasPrefix(rest, "[") {
			if end := strings.IndexByte(rest, ']'); end > 0 {
				if n, err := strconv.Atoi(rest[1:end]); err == nil {
					k.index = n
				}
			}
		}
		return k
	}
	sort.SliceStable(c.errs, func(i, j int) bool {
		a, b := keyOf(c.errs[i].Path), keyOf(c.errs[j].Path)
		if a.field != b.field {
			return a.field < b.field
		}
		return a.index < b.index
	})
}
