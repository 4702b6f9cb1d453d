package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
)

// create serves POST /v1/intents, POST /v1/targets/{target}/intents and
// PUT /v1/targets/{target}/intents/{name}: validate, map, apply, wait,
// view.
func (s *Server) create(w http.ResponseWriter, r *http.Request, req *request) (int, *Problem) {
	req.verb = ir.VerbCreate
	put := r.Method == http.MethodPut
	body, p := s.readBody(w, r)
	if p != nil {
		return 0, p
	}
	if req.target == "" {
		// POST /v1/intents: the body names its target.
		raw, p := decodeObject(body)
		if p != nil {
			return 0, p
		}
		name, ok := raw["target"].(string)
		if !ok {
			return 0, problem(http.StatusUnprocessableEntity, CodeInvalid, `add "target" to the intent, or POST it to /v1/targets/<target>/intents`, "the intent does not say its target")
		}
		req.target = name
	}
	t, p := s.target(req.target)
	if p != nil {
		return 0, p
	}
	if p := Authorize(req.caller, t, ir.VerbCreate, ""); p != nil {
		return 0, p
	}
	wait, p := s.waitFor(r)
	if p != nil {
		return 0, p
	}
	in, p := t.Validate(body)
	if p != nil {
		return 0, p
	}
	req.env = t.Environment(in)
	if p := Authorize(req.caller, t, ir.VerbCreate, req.env); p != nil {
		return 0, p
	}
	name, p := t.NameFrom(in)
	if p != nil {
		return 0, p
	}
	if put {
		if name, p = t.NameForPut(in, name, r.PathValue("name")); p != nil {
			return 0, p
		}
	}
	generated := name == ""
	if generated {
		name = t.Serve.Name.Generate + randomID(5)
	}

	// From here on the request runs to its end even if the caller goes
	// away: a retry finds its answer, and a key is never left held.
	ctx := context.WithoutCancel(r.Context())
	var rec *Record
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		key, p := ParseKey(h)
		if p != nil {
			return 0, p
		}
		fp := Fingerprint(r.Method, t.Name(), r.PathValue("name"), canonical(in))
		var replay *Replay
		rec, replay, p = s.records.Begin(ctx, req.caller.Name, key, fp, name)
		if p != nil {
			return 0, p
		}
		if replay != nil {
			writeReplay(w, replay, true)
			req.change = false // the change was audited when it was made
			return replay.Status, nil
		}
		name = rec.Name
	}
	status, view, p := s.apply(ctx, t, in, name, generated && rec == nil, put, rec != nil && rec.Takeover, req)
	if p == nil && wait > 0 {
		view = s.settle(r.Context(), t, view, wait)
	}
	status, out := answer(ctx, rec, status, view, p)
	if p != nil {
		return 0, p
	}
	w.Header().Set("Location", view.Links["self"])
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return status, nil
}

// answer encodes a change's outcome, its view or its problem, and records
// it under the request's Idempotency-Key when it has one (rec), so that a
// retry gets the same bytes. It returns the status and the body.
func answer(ctx context.Context, rec *Record, status int, view *View, p *Problem) (int, []byte) {
	var buf bytes.Buffer
	if p != nil {
		status = p.Status
		_ = json.NewEncoder(&buf).Encode(p)
	} else {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		_ = enc.Encode(view)
	}
	if rec != nil {
		rec.Finish(ctx, status, buf.Bytes())
	}
	return status, buf.Bytes()
}

// writeReplay answers a retry with the first request's answer. A created
// or changed intent's answer is its view: its self link is the Location,
// as it was the first time.
func writeReplay(w http.ResponseWriter, replay *Replay, location bool) {
	if location && replay.Status < 300 {
		var v struct {
			Links map[string]string `json:"links"`
		}
		if json.Unmarshal(replay.Body, &v) == nil && v.Links["self"] != "" {
			w.Header().Set("Location", v.Links["self"])
		}
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(replay.Status)
	_, _ = w.Write(replay.Body)
}

// apply writes the intent's custom resource with server-side apply and
// returns 201 for a new one, 200 for a changed one. retryName lets a
// generated name that is taken be generated again; again says an earlier
// attempt of this very request (an Idempotency-Key taken over from a
// replica that stopped) may have made it already.
func (s *Server) apply(ctx context.Context, t *Target, in Intent, name string, retryName, put, again bool, req *request) (int, *View, *Problem) {
	ns := t.Namespace(t.Environment(in))
	for attempt := 0; ; attempt++ {
		req.intent = join(ns, name)
		cur, err := s.read(ctx, t, ns, name)
		switch {
		case apierrors.IsNotFound(err):
			if p := s.moved(ctx, req, t, ns, name); p != nil {
				if retryName && attempt < 3 {
					name = t.Serve.Name.Generate + randomID(5)
					continue
				}
				return 0, nil, p // made anew here, it would be a second one
			}
			cur = nil
		case err != nil:
			return 0, nil, s.clusterProblem(err, t, ns)
		case retryName && attempt < 3:
			name = t.Serve.Name.Generate + randomID(5)
			continue
		case !t.Ours(cur):
			return 0, nil, problem(http.StatusConflict, CodeNotOurs, "choose another name: the gateway never changes what it did not make",
				"%s %s exists and was not made through the gateway", t.Name(), name)
		case cur.GetDeletionTimestamp() != nil:
			p := problem(http.StatusConflict, CodeDeletingInProcess, "wait until it is gone (watch it), then send the intent again", "intent %s is being deleted", name)
			p.RetryAfter = time.Second
			return 0, nil, p
		case !put && !again:
			return 0, nil, problem(http.StatusConflict, CodeExists, fmt.Sprintf("change it with PUT %s, or read it with GET", t.links(name, t.Environment(in))["self"]),
				"intent %s of %s exists already", name, t.Name())
		}
		caller := req.caller.Name
		if cur != nil {
			caller = cur.GetLabels()[LabelCaller] // the maker stays the maker
		}
		obj := t.Map(in, name, caller)
		if err := s.opts.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(s.opts.FieldManager), client.ForceOwnership); err != nil {
			return 0, nil, s.clusterProblem(err, t, ns)
		}
		status, verb := http.StatusCreated, "created"
		if cur != nil && (put || !again) {
			status, verb = http.StatusOK, "updated"
		}
		s.event(ctx, obj, "Intent"+strings.ToUpper(verb[:1])+verb[1:], fmt.Sprintf("%s by %s through the gateway (token %s, request %s)", verb, req.caller.Name, req.caller.TokenID, req.id))
		return status, t.View(obj), nil
	}
}

// clusterProblem words an error of the API server for the caller: a
// refusal of the custom resource by its fields, anything else as the
// gateway's own trouble.
func (s *Server) clusterProblem(err error, t *Target, ns string) *Problem {
	var se apierrors.APIStatus
	if errors.As(err, &se) && apierrors.IsInvalid(err) {
		var fields []FieldProblem
		if d := se.Status().Details; d != nil {
			for _, c := range d.Causes {
				path := strings.TrimPrefix(c.Field, ".")
				f := t.Serve.FieldAt(path)
				name := ""
				if f != nil {
					name = f.Name
				}
				msg := t.scrub(c.Message, nil)
				if name != "" {
					msg = name + " " + strings.TrimPrefix(msg, "Invalid value: ")
				}
				fields = append(fields, FieldProblem{Field: name, Message: msg})
			}
		}
		p := problem(http.StatusUnprocessableEntity, CodeRefusedByCluster, "correct the fields listed and send the intent again", "the intent was refused: %s", summarize(fields))
		p.Fields = fields
		return p
	}
	if apierrors.IsNotFound(err) && ns != "" {
		s.opts.Log.Error(err, "writing an intent", "namespace", ns)
		return problem(http.StatusServiceUnavailable, CodeUnavailable, "ask whoever runs the gateway to create namespace "+ns, "the namespace %s of this environment does not exist", ns)
	}
	if apierrors.IsForbidden(err) {
		s.opts.Log.Error(err, "writing an intent")
		return problem(http.StatusInternalServerError, CodeInternal, "ask whoever runs the gateway to grant what `inrun rbac --gateway` prints", "the gateway may not do this in the cluster")
	}
	s.opts.Log.Error(err, "calling the API server")
	return unavailable(err)
}

// event records an Event on the custom resource, for kubectl describe.
func (s *Server) event(ctx context.Context, obj *unstructured.Unstructured, reason, msg string) {
	now := metav1.NewTime(s.opts.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: obj.GetName() + ".", Namespace: eventNamespace(obj)},
		InvolvedObject: corev1.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(),
			Name: obj.GetName(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: s.opts.FieldManager},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "inrun.dev/gateway", ReportingInstance: s.opts.Holder,
	}
	if err := s.opts.Client.Create(ctx, ev); err != nil {
		s.opts.Log.Error(err, "recording an Event", "reason", reason)
	}
}

func eventNamespace(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns
	}
	return metav1.NamespaceDefault
}

func join(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// locate finds the custom resource an intent's name (and, for a target
// whose namespace a field picks, ?<field>=) names, among those the caller
// may use verb on: 404 when there is none, 409 when the name is in more
// than one environment and the query does not say which.
func (s *Server) locate(ctx context.Context, r *http.Request, req *request, t *Target, verb ir.Verb) (*unstructured.Unstructured, *Problem) {
	name := r.PathValue("name")
	if !ValidName(name) {
		return nil, problem(http.StatusNotFound, CodeNotFound, "GET /v1/targets/"+t.Name()+"/intents lists your intents", "no intent %q", name)
	}
	envs, ok := grants(req.caller, t, verb)
	if !ok {
		return nil, Authorize(req.caller, t, verb, "")
	}
	if field := t.Serve.Namespace.From; field != "" {
		if env := r.URL.Query().Get(field); env != "" {
			if _, known := t.Serve.Namespace.Map[env]; !known {
				return nil, problem(http.StatusBadRequest, CodeBadQuery, fmt.Sprintf("write %s=%s", field, orList(t.Serve.Environments())), "%s %q is not one of %s's", field, env, t.Name())
			}
			// The audit line of a refusal says where it was aimed.
			req.env = env
			if p := Authorize(req.caller, t, verb, env); p != nil {
				return nil, p
			}
			envs = []string{env}
		}
	} else {
		envs = []string{""}
	}
	var found []*unstructured.Unstructured
	for _, env := range envs {
		obj, err := s.read(ctx, t, t.Namespace(env), name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, s.clusterProblem(err, t, "")
		}
		if t.Ours(obj) {
			found = append(found, obj)
		}
	}
	switch len(found) {
	case 0:
		for _, env := range envs {
			if p := s.moved(ctx, req, t, t.Namespace(env), name); p != nil {
				return nil, p
			}
		}
		return nil, problem(http.StatusNotFound, CodeNotFound, "GET /v1/targets/"+t.Name()+"/intents lists your intents", "no intent %s of %s that your token may %s", name, t.Name(), verb)
	case 1:
		req.intent = join(found[0].GetNamespace(), name)
		req.env, _ = t.EnvironmentOf(found[0].GetNamespace())
		return found[0], nil
	}
	var in []string
	for _, o := range found {
		env, _ := t.EnvironmentOf(o.GetNamespace())
		in = append(in, env)
	}
	return nil, problem(http.StatusConflict, CodeAmbiguous, fmt.Sprintf("say which: ?%s=%s", t.Serve.Namespace.From, in[0]),
		"there is an intent %s in %s %s", name, t.Serve.Namespace.From, orList(in))
}

// get serves GET /v1/targets/{target}/intents/{name}, a long poll with
// ?wait=.
func (s *Server) get(w http.ResponseWriter, r *http.Request, req *request) (int, *Problem) {
	req.verb = ir.VerbGet
	t, p := s.target(req.target)
	if p != nil {
		return 0, p
	}
	wait, p := s.waitFor(r)
	if p != nil {
		return 0, p
	}
	obj, p := s.locate(r.Context(), r, req, t, ir.VerbGet)
	if p != nil {
		return 0, p
	}
	view := t.View(obj)
	if wait > 0 {
		view = s.settle(r.Context(), t, view, wait)
	}
	writeJSON(w, http.StatusOK, view)
	return http.StatusOK, nil
}

// IntentList is the answer to a list.
type IntentList struct {
	Items []*View `json:"items"`
}

// list serves GET /v1/targets/{target}/intents: the caller's intents (made
// with tokens of its name), in the environments it may list, or in
// ?<field>= only.
func (s *Server) list(w http.ResponseWriter, r *http.Request, req *request) (int, *Problem) {
	req.verb = ir.VerbList
	t, p := s.target(req.target)
	if p != nil {
		return 0, p
	}
	envs, ok := grants(req.caller, t, ir.VerbList)
	if !ok {
		return 0, Authorize(req.caller, t, ir.VerbList, "")
	}
	if field := t.Serve.Namespace.From; field != "" {
		if env := r.URL.Query().Get(field); env != "" {
			if p := Authorize(req.caller, t, ir.VerbList, env); p != nil {
				return 0, p
			}
			envs = []string{env}
		}
	} else {
		envs = []string{""}
	}
	out := IntentList{Items: []*View{}}
	for _, env := range envs {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(t.BP.Resource.GroupVersionKind.GroupVersion().WithKind(t.BP.Resource.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabelsSelector{Selector: t.listSelector(req.caller.Name)}}
		if ns := t.Namespace(env); ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := s.opts.Client.List(r.Context(), l, opts...); err != nil {
			return 0, s.clusterProblem(err, t, "")
		}
		for i := range l.Items {
			if t.Ours(&l.Items[i]) {
				out.Items = append(out.Items, t.View(&l.Items[i]))
			}
		}
	}
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].Links["self"] < out.Items[j].Links["self"] })
	writeJSON(w, http.StatusOK, out)
	return http.StatusOK, nil
}

// remove serves DELETE /v1/targets/{target}/intents/{name}: 202 while the
// runtime cleans up, 200 once gone (with ?wait=).
func (s *Server) remove(w http.ResponseWriter, r *http.Request, req *request) (int, *Problem) {
	req.verb = ir.VerbDelete
	t, p := s.target(req.target)
	if p != nil {
		return 0, p
	}
	wait, p := s.waitFor(r)
	if p != nil {
		return 0, p
	}
	ctx := context.WithoutCancel(r.Context())
	var rec *Record
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		key, p := ParseKey(h)
		if p != nil {
			return 0, p
		}
		var replay *Replay
		// How long the caller waits is not the request: a retry with
		// another ?wait= is the same delete.
		env := ""
		if field := t.Serve.Namespace.From; field != "" {
			env = r.URL.Query().Get(field)
		}
		rec, replay, p = s.records.Begin(ctx, req.caller.Name, key, Fingerprint(r.Method, t.Name(), r.PathValue("name"), env), r.PathValue("name"))
		if p != nil {
			return 0, p
		}
		if replay != nil {
			writeReplay(w, replay, false)
			req.change = false
			return replay.Status, nil
		}
	}
	status, view, p := s.delete(ctx, r, req, t)
	if p == nil && wait > 0 && view.State != StateDeleted {
		view = s.settle(r.Context(), t, view, wait)
		if view.State == StateDeleted {
			status = http.StatusOK
		}
	}
	status, body := answer(ctx, rec, status, view, p)
	if p != nil {
		return 0, p
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return status, nil
}

func (s *Server) delete(ctx context.Context, r *http.Request, req *request, t *Target) (int, *View, *Problem) {
	obj, p := s.locate(ctx, r, req, t, ir.VerbDelete)
	if p != nil {
		return 0, nil, p
	}
	if p := Authorize(req.caller, t, ir.VerbDelete, req.env); p != nil {
		return 0, nil, p
	}
	if obj.GetDeletionTimestamp() == nil {
		s.event(ctx, obj, "IntentDeleted", fmt.Sprintf("deleted by %s through the gateway (token %s, request %s)", req.caller.Name, req.caller.TokenID, req.id))
	}
	uid := obj.GetUID()
	err := s.opts.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return http.StatusOK, t.Deleted(obj.GetName(), t.IntentOf(obj)), nil
	case err != nil:
		return 0, nil, s.clusterProblem(err, t, "")
	}
	cur, err := s.read(ctx, t, obj.GetNamespace(), obj.GetName())
	if apierrors.IsNotFound(err) || err == nil && cur.GetUID() != uid {
		return http.StatusOK, t.Deleted(obj.GetName(), t.IntentOf(obj)), nil
	}
	if err != nil {
		cur = obj
	}
	return http.StatusAccepted, t.View(cur), nil
}

// settle waits, at most d, until the intent's custom resource settles
// (ready, failed, or gone) and returns its latest view.
func (s *Server) settle(ctx context.Context, t *Target, v *View, d time.Duration) *View {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	last := v
	_ = s.follow(ctx, t, v, func(nv *View) bool {
		last = nv
		return settled(nv)
	})
	return last
}

// settled reports whether a view will not change without an edit or the
// cluster's doing.
func settled(v *View) bool {
	return v.State == StateReady || v.State == StateFailed || v.State == StateDeleted
}

// follow calls fn with the intent's view each time it changes, starting
// with the current one, until fn returns true, the intent is gone, or ctx
// ends. It watches the custom resource, reading it again whenever the
// watch ends early.
func (s *Server) follow(ctx context.Context, t *Target, v *View, fn func(*View) bool) error {
	ns := t.Namespace(t.Environment(v.Intent))
	name := v.Name
	var lastJSON []byte
	emit := func(nv *View) bool {
		b, _ := json.Marshal(nv)
		if bytes.Equal(b, lastJSON) {
			return false
		}
		lastJSON = b
		return fn(nv) || nv.State == StateDeleted
	}
	for {
		obj, err := s.read(ctx, t, ns, name)
		switch {
		case apierrors.IsNotFound(err):
			emit(t.Deleted(name, v.Intent))
			return nil
		case err != nil:
			return err
		}
		if emit(t.View(obj)) {
			return nil
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(t.BP.Resource.GroupVersionKind.GroupVersion().WithKind(t.BP.Resource.Kind + "List"))
		opts := []client.ListOption{client.MatchingFields{"metadata.name": name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: obj.GetResourceVersion()}}}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		wi, err := s.opts.Client.Watch(ctx, l, opts...)
		if err != nil {
			return err
		}
		done, err := func() (bool, error) {
			defer wi.Stop()
			for {
				select {
				case <-ctx.Done():
					return true, ctx.Err()
				case e, ok := <-wi.ResultChan():
					if !ok {
						return false, nil
					}
					u, isObj := e.Object.(*unstructured.Unstructured)
					switch {
					case e.Type == "DELETED" && isObj && u.GetUID() == obj.GetUID():
						emit(t.Deleted(name, v.Intent))
						return true, nil
					case (e.Type == "ADDED" || e.Type == "MODIFIED") && isObj:
						if emit(t.View(u)) {
							return true, nil
						}
					case e.Type == "ERROR":
						return false, nil
					}
				}
			}
		}()
		if done {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// watch serves GET /v1/targets/{target}/intents/{name}/watch: the view as
// server-sent events, one "view" event each time it changes, until it
// settles (or, with ?follow=true, until the caller leaves or MaxWait...
// without follow), then an "end" event.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, req *request) (int, *Problem) {
	req.verb = ir.VerbGet
	t, p := s.target(req.target)
	if p != nil {
		return 0, p
	}
	obj, p := s.locate(r.Context(), r, req, t, ir.VerbGet)
	if p != nil {
		return 0, p
	}
	follow := r.URL.Query().Get("follow") == "true"
	ctx := r.Context()
	if !follow {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.MaxWait)
		defer cancel()
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	n := 0
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		n++
		fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", n, event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	err := s.follow(ctx, t, t.View(obj), func(v *View) bool {
		send("view", v)
		return !follow && settled(v)
	})
	reason := "settled"
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		reason = "timeout"
	case err != nil && ctx.Err() == nil:
		reason = "error"
	}
	if r.Context().Err() == nil {
		send("end", map[string]string{"reason": reason})
	}
	return http.StatusOK, nil
}

// TargetInfo describes a target to a caller: its fields, and what the
// caller's token may do with it.
type TargetInfo struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Fields      []FieldInfo `json:"fields"`
	// Environments are the values of the field that picks the namespace,
	// when one does.
	Environments     []string `json:"environments,omitempty"`
	EnvironmentField string   `json:"environmentField,omitempty"`
	// Allowed are the verbs the caller's token may use, each with the
	// environments it may use it in.
	Allowed map[string][]string `json:"allowed"`
	Links   map[string]string   `json:"links"`
}

// FieldInfo describes an intent field.
type FieldInfo struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required,omitempty"`
	Default     any    `json:"default,omitempty"`
	Enum        []any  `json:"enum,omitempty"`
	Pattern     string `json:"pattern,omitempty"`
	Description string `json:"description,omitempty"`
}

// Info describes t to c.
func (t *Target) Info(c *Caller) *TargetInfo {
	info := &TargetInfo{Name: t.Name(), Description: t.Serve.Description, Allowed: map[string][]string{},
		Environments: t.Serve.Environments(), EnvironmentField: t.Serve.Namespace.From,
		Links: map[string]string{"intents": "/v1/targets/" + t.Name() + "/intents"}}
	for _, f := range t.Serve.Fields {
		fi := FieldInfo{Name: f.Name, Type: string(f.Type), Required: f.Required, Pattern: f.Pattern, Description: f.Description}
		if f.Default != nil {
			fi.Default = f.Default.Literal
		}
		for _, e := range f.Enum {
			fi.Enum = append(fi.Enum, e.Literal)
		}
		if f.Name == t.Serve.Namespace.From && len(fi.Enum) == 0 {
			for _, e := range t.Serve.Environments() {
				fi.Enum = append(fi.Enum, e)
			}
		}
		info.Fields = append(info.Fields, fi)
	}
	if c != nil {
		for _, v := range ir.Verbs {
			if envs, ok := grants(c, t, v); ok {
				if envs == nil {
					envs = []string{}
				}
				info.Allowed[string(v)] = envs
			}
		}
	}
	return info
}

// NameForPut is the name of intent in replaced at path (PUT
// .../intents/<path>): path, which must be a valid name and, when the
// intent's fields name it (derived, from NameFrom), that name, since an
// intent's name cannot change.
func (t *Target) NameForPut(in Intent, derived, path string) (string, *Problem) {
	switch {
	case !ValidName(path):
		return "", problem(http.StatusBadRequest, CodeBadQuery, "name it with lower-case letters, digits and '-', at most 63", "%q cannot name an intent", path)
	case derived != "" && derived != path:
		p := invalidField(t.Serve.Name.From, fmt.Sprintf("%s %q names the intent %s, not %s: an intent's %s cannot change", t.Serve.Name.From, in[t.Serve.Name.From], derived, path, t.Serve.Name.From))
		p.Status, p.Code, p.Title = http.StatusConflict, CodeIntentImmutable, http.StatusText(http.StatusConflict)
		return "", p
	}
	return path, nil
}

// listTargets serves GET /v1/targets: the targets the caller's token may
// use.
func (s *Server) listTargets(w http.ResponseWriter, _ *http.Request, req *request) (int, *Problem) {
	out := struct {
		Items []*TargetInfo `json:"items"`
	}{Items: []*TargetInfo{}}
	for _, t := range s.Targets() {
		if info := t.Info(req.caller); len(info.Allowed) > 0 {
			out.Items = append(out.Items, info)
		}
	}
	if len(out.Items) == 0 && len(s.Targets()) > 0 {
		// A token no Blueprint grants anything is refused every request.
		c := req.caller
		return 0, problem(http.StatusForbidden, CodeOutOfScope, "ask for a token with a scope a Blueprint's serve.tokens grants",
			"token %s (%s, scopes %s) may use no target: no Blueprint's serve.tokens grants any of its scopes", c.TokenID, c.Name, strings.Join(c.Scopes, ", "))
	}
	writeJSON(w, http.StatusOK, out)
	return http.StatusOK, nil
}

// getTarget serves GET /v1/targets/{target}.
func (s *Server) getTarget(w http.ResponseWriter, _ *http.Request, req *request) (int, *Problem) {
	t, p := s.target(req.target)
	if p != nil {
		return 0, p
	}
	info := t.Info(req.caller)
	if len(info.Allowed) == 0 {
		return 0, Authorize(req.caller, t, ir.VerbGet, "")
	}
	writeJSON(w, http.StatusOK, info)
	return http.StatusOK, nil
}
