package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/sdk"
)

// API is a Caller for an existing HTTP API that knows nothing about Inrun:
// the Blueprint's reconcile.api builds the HTTP call from the request (self,
// args, finalizing) and the Result from the response. It makes one attempt
// per Call; the runtime's work queue retries failures with backoff.
type API struct {
	mapping *ir.APIMapping
	progs   *expr.Programs
	http    *http.Client
	opts    APIOptions
}

// APIOptions configure an API.
type APIOptions struct {
	// Timeout bounds one call. Default DefaultTimeout.
	Timeout time.Duration
	// TokenSource, when set, gives a bearer token for each call.
	TokenSource func(ctx context.Context) (string, error)
	// CABundle is PEM that verifies an https API.
	CABundle []byte
	// MaxReplyBytes bounds the response read. Default 16 MiB.
	MaxReplyBytes int64
}

var _ Caller = &API{}

// NewAPI returns the Caller of bp's reconcile.api, evaluated with progs
// (which expr.Compile built for bp).
func NewAPI(bp *ir.Blueprint, progs *expr.Programs, opts APIOptions) (*API, error) {
	if bp.Reconcile == nil || bp.Reconcile.Remote == nil || bp.Reconcile.Remote.API == nil {
		return nil, errors.New("remote: the Blueprint has no reconcile.api")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxReplyBytes <= 0 {
		opts.MaxReplyBytes = 16 << 20
	}
	o := &Options{CABundle: opts.CABundle}
	return &API{mapping: bp.Reconcile.Remote.API, progs: progs, http: o.httpClient(), opts: opts}, nil
}

// Call implements Caller. With reconcile.api.id, a custom resource whose
// status holds no id yet gets the create call, and keeps the id its reply
// names; later calls are the update (or, finalizing, the delete) call with
// that id. reconcile.api.statuses say what other replies mean.
func (a *API) Call(ctx context.Context, req *sdk.Request) (*Result, error) {
	vars, err := a.progs.NewVars(&unstructured.Unstructured{Object: req.Object}, nil)
	if err != nil {
		return nil, err
	}
	args := req.Args
	if args == nil {
		args = map[string]any{}
	}
	vars.SetValue(expr.Args, args)
	vars.SetValue(expr.Finalizing, req.Finalizing)
	vars.SetValue(expr.Response, map[string]any{})
	step := map[string]any{"name": "", "attempt": int64(0), "idempotencyKey": ""}
	if s := req.Step; s != nil {
		step = map[string]any{"name": s.Name, "attempt": s.Attempt, "idempotencyKey": s.IdempotencyKey}
	}
	vars.SetValue(expr.Step, step)
	c := &apiCall{API: a, req: req, vars: vars}
	c.setID(a.storedID(req.Object))
	res, err := c.run(ctx)
	var e *Error
	if errors.As(err, &e) {
		e.API = true
		if a.mapping.ID != nil && c.id != "" && c.id != a.storedID(req.Object) {
			e.KeepStatus = map[string]any{a.mapping.ID.Field: c.id}
		}
	}
	return res, err
}

// storedID is the id the custom resource's status holds, or "".
func (a *API) storedID(cr map[string]any) string {
	if a.mapping.ID == nil {
		return ""
	}
	v, _, _ := unstructured.NestedFieldNoCopy(cr, "status", a.mapping.ID.Field)
	if v == nil {
		return ""
	}
	return expr.FormatString(v)
}

// apiCall is one Call: the request, its variables and the id as it stands.
type apiCall struct {
	*API
	req  *sdk.Request
	vars *expr.Vars
	id   string
	// replacing is the id of a record found gone, which a create replaces.
	replacing string
}

func (c *apiCall) setID(id string) {
	c.id = id
	c.vars.SetValue(expr.ID, id)
}

// run makes the calls one request needs.
func (c *apiCall) run(ctx context.Context) (*Result, error) {
	m := c.mapping
	if m.ID != nil && c.id == "" {
		if c.req.Finalizing {
			// Nothing was ever created: nothing to delete.
			return &Result{Result: sdk.Result{APIVersion: sdk.APIVersion, Kind: sdk.KindResult, Done: true}}, nil
		}
		return c.create(ctx)
	}
	reply, err := c.send(ctx, m.Method, m.URL, http.MethodPost)
	if err != nil {
		return nil, err
	}
	switch c.action(reply) {
	case ir.StatusRecreate:
		if c.req.Finalizing {
			return &Result{Result: sdk.Result{APIVersion: sdk.APIVersion, Kind: sdk.KindResult, Done: true}, Attempts: 1}, nil
		}
		// The record is gone: forget its id and create it again, under a
		// key of its own (the first create's would answer the gone record).
		c.replacing = c.id
		c.setID("")
		return c.create(ctx)
	case ir.StatusAdopt:
		return nil, c.refused(reply, "adopt applies to a create's reply; this was the update")
	case ir.StatusFail:
		return nil, c.refused(reply, "")
	}
	return c.result(reply)
}

// create makes the create call and keeps the id its reply names, adopting
// the record that already exists when the statuses say so.
func (c *apiCall) create(ctx context.Context) (*Result, error) {
	m := c.mapping
	reply, err := c.send(ctx, m.Create.Method, m.Create.URL, http.MethodPost)
	if err != nil {
		return nil, err
	}
	switch c.action(reply) {
	case ir.StatusAdopt:
		id, err := c.adopt(ctx, reply)
		if err != nil {
			return nil, err
		}
		c.setID(id)
		// The record exists as someone left it: update it like any other.
		reply, err := c.send(ctx, m.Method, m.URL, http.MethodPost)
		if err != nil {
			return nil, err
		}
		if act := c.action(reply); act != ir.StatusResult {
			return nil, c.refused(reply, "the update after adopting the record")
		}
		return c.result(reply)
	case ir.StatusFail, ir.StatusRecreate:
		return nil, c.refused(reply, "")
	}
	id, err := c.readID(m.ID.From, reply, "reconcile.api.id.from")
	if err != nil {
		return nil, err
	}
	c.setID(id)
	return c.result(reply)
}

// adopt finds the id of a record that already exists: from the create's
// reply, or from the reply of reconcile.api.adopt's call.
func (c *apiCall) adopt(ctx context.Context, conflict *apiReply) (string, error) {
	from, where := c.mapping.ID.From, "reconcile.api.id.from"
	adopt := c.mapping.Adopt
	if adopt != nil && adopt.From != nil {
		from, where = adopt.From, "reconcile.api.adopt.from"
	}
	reply := conflict
	if adopt != nil && adopt.URL != nil {
		var err error
		if reply, err = c.send(ctx, adopt.Method, adopt.URL, http.MethodGet); err != nil {
			return "", err
		}
		if reply.status < 200 || reply.status > 299 {
			return "", c.refused(reply, "looking up the record to adopt")
		}
	}
	return c.readID(from, reply, where)
}

// readID evaluates where a reply has the id.
func (c *apiCall) readID(from *ir.Value, reply *apiReply, where string) (string, error) {
	c.vars.SetValue(expr.Response, reply.value)
	v, err := c.progs.Render(from, c.vars)
	if err == nil && (v == nil || expr.FormatString(v) == "") {
		err = errors.New("it is empty")
	}
	if err != nil {
		return "", &Error{Kind: BadReply, URL: reply.url, Status: reply.status, Body: excerpt(reply.raw), Attempts: 1,
			Err: fmt.Errorf("%s found no id in the reply: %w", where, err)}
	}
	return expr.FormatString(v), nil
}

// result maps a reply onto a Result, keeping the id in its status.
func (c *apiCall) result(reply *apiReply) (*Result, error) {
	c.vars.SetValue(expr.Response, reply.value)
	out, err := c.progs.Render(resultFor(c.mapping.Result, c.req.Finalizing), c.vars)
	if err != nil {
		return nil, &Error{Kind: BadReply, URL: reply.url, Status: reply.status, Body: excerpt(reply.raw), Attempts: 1, Err: fmt.Errorf("reconcile.api.result: %w", err)}
	}
	m, _ := out.(map[string]any)
	if id := c.mapping.ID; id != nil && !c.req.Finalizing {
		status, _ := m["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
		}
		status[id.Field] = c.id
		m["status"] = status
	}
	m["apiVersion"], m["kind"] = sdk.APIVersion, sdk.KindResult
	doc, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	res, err := sdk.DecodeResult(doc, c.req.Finalizing)
	if err != nil {
		return nil, &Error{Kind: BadReply, URL: reply.url, Status: reply.status, Attempts: 1, Err: fmt.Errorf("reconcile.api.result does not make a valid Result: %w", err)}
	}
	return &Result{Result: *res, Attempts: 1}, nil
}

// apiReply is an API's answer.
type apiReply struct {
	url    string
	status int
	raw    []byte
	// value is what expressions read as response.
	value map[string]any
}

// action says what reply means: reconcile.api.statuses by code, then by
// class; 2xx is the result's; any other 4xx is a failure once the mapping
// says what some statuses mean (statuses or id), and the result's before.
func (c *apiCall) action(reply *apiReply) ir.APIStatusAction {
	code := strconv.Itoa(reply.status)
	if act, ok := c.mapping.Statuses[code]; ok {
		return act
	}
	if act, ok := c.mapping.Statuses[code[:1]+"xx"]; ok {
		return act
	}
	switch {
	case reply.status >= 200 && reply.status <= 299:
		return ir.StatusResult
	case c.req.Finalizing && c.mapping.ID != nil && (reply.status == http.StatusNotFound || reply.status == http.StatusGone):
		return ir.StatusRecreate // deleting what is gone is done
	case reply.status >= 400 && (c.mapping.Statuses != nil || c.mapping.ID != nil):
		return ir.StatusFail
	}
	return ir.StatusResult
}

// refused is the failure of a reply the mapping says is one.
func (c *apiCall) refused(reply *apiReply, why string) error {
	e := &Error{Kind: Refused, URL: reply.url, Status: reply.status, Body: excerpt(reply.raw), Attempts: 1}
	if why != "" {
		e.Err = errors.New(why)
	}
	return e
}

// send builds and makes one HTTP call; 5xx and 429 are failures the work
// queue retries.
func (c *apiCall) send(ctx context.Context, method, url *ir.Value, defaultMethod string) (*apiReply, error) {
	hreq, err := c.build(ctx, c.vars, method, url, defaultMethod)
	if err != nil {
		return nil, &Error{Kind: Request, URL: "reconcile.api", Err: err}
	}
	// The key goes with the methods that are not idempotent by
	// themselves, as the IETF draft says. A PUT or DELETE needs none, and
	// must not have one: an API would answer a later PUT with the same key
	// with its first reply, hiding what changed at the API since.
	if key := c.mapping.IdempotencyKey; key != "" && (hreq.Method == http.MethodPost || hreq.Method == http.MethodPatch) {
		hreq.Header.Set(key, c.idempotencyKey(hreq.Method))
	}
	target := hreq.URL.String()
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.http.Do(hreq.WithContext(ctx))
	if err != nil {
		kind := Unreachable
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			kind = Timeout
		case hungUp(err):
			kind = Closed
		}
		return nil, &Error{Kind: kind, URL: target, Attempts: 1, Err: unwrapURL(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxReplyBytes))
	if err != nil {
		return nil, &Error{Kind: Unreachable, URL: target, Attempts: 1, Err: err}
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return nil, &Error{Kind: HTTPStatus, URL: target, Status: resp.StatusCode, Body: excerpt(raw), Attempts: 1}
	}
	return &apiReply{url: target, status: resp.StatusCode, raw: raw, value: response(resp, raw)}, nil
}

// idempotencyKey is the same for every retry of one call of one generation
// of the custom resource, and differs between calls:
// <uid>/<generation>/<method>, and /replacing/<id> for a create that
// replaces a record found gone.
func (c *apiCall) idempotencyKey(method string) string {
	u := unstructured.Unstructured{Object: c.req.Object}
	key := fmt.Sprintf("%s/%d/%s", u.GetUID(), u.GetGeneration(), method)
	if c.replacing != "" && method == http.MethodPost {
		key += "/replacing/" + c.replacing
	}
	return key
}

// finalizingFields are what a Result may say to a finalizing request.
var finalizingFields = map[string]bool{"done": true, "events": true, "requeueAfter": true}

// resultFor keeps the fields of result that answer the request: a
// finalizing request reads only done, events and requeueAfter, so that the
// rest need not cope with the API's answer to a delete; any other request
// reads everything but done.
func resultFor(result *ir.Value, finalizing bool) *ir.Value {
	out := *result
	out.Fields = nil
	for _, f := range result.Fields {
		if finalizingFields[f.Key] && (finalizing || f.Key != "done") || !finalizing && !finalizingFields[f.Key] {
			out.Fields = append(out.Fields, f)
		}
	}
	return &out
}

// build renders one HTTP request: method and url, with the mapping's
// headers and body.
func (a *API) build(ctx context.Context, vars *expr.Vars, methodValue, urlValue *ir.Value, defaultMethod string) (*http.Request, error) {
	u, err := a.progs.Render(urlValue, vars)
	if err != nil {
		return nil, err
	}
	url, ok := u.(string)
	if !ok || !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) {
		return nil, fmt.Errorf("the URL rendered %v, not an absolute http(s) URL", u)
	}
	var body io.Reader
	if a.mapping.Body != nil {
		b, err := a.progs.Render(a.mapping.Body, vars)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(raw)
	}
	method := defaultMethod
	if methodValue != nil {
		m, err := a.progs.Render(methodValue, vars)
		if err != nil {
			return nil, err
		}
		method = strings.ToUpper(expr.FormatString(m))
		switch method {
		case "GET", "POST", "PUT", "PATCH", "DELETE":
		default:
			return nil, fmt.Errorf("the method rendered %q, not GET, POST, PUT, PATCH or DELETE", method)
		}
	}
	if method == http.MethodGet || method == http.MethodDelete {
		body = nil // a GET or DELETE carries no body
	}
	hreq, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("User-Agent", "inrun")
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if a.mapping.Headers != nil {
		h, err := a.progs.Render(a.mapping.Headers, vars)
		if err != nil {
			return nil, err
		}
		for k, v := range h.(map[string]any) {
			hreq.Header.Set(k, expr.FormatString(v))
		}
	}
	if a.opts.TokenSource != nil {
		token, err := a.opts.TokenSource(ctx)
		if err != nil {
			return nil, err
		}
		hreq.Header.Set("Authorization", "Bearer "+token)
	}
	return hreq, nil
}

// response is what reconcile.api.result reads as response: the status,
// the headers (lower-case names, first value) and the body, parsed as JSON
// when it is JSON and as text otherwise.
func response(resp *http.Response, raw []byte) map[string]any {
	headers := map[string]any{}
	for k, v := range resp.Header {
		if len(v) > 0 {
			headers[strings.ToLower(k)] = v[0]
		}
	}
	var body any = string(raw)
	var parsed any
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &parsed) == nil {
		body = expr.NormalizeNumbers(parsed)
	}
	return map[string]any{"status": int64(resp.StatusCode), "headers": headers, "body": body}
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
