package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// Call implements Caller.
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

	hreq, err := a.build(ctx, vars)
	if err != nil {
		return nil, &Error{Kind: BadReply, URL: "reconcile.api", Err: fmt.Errorf("building the request: %w", err)}
	}
	url := hreq.URL.String()
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	resp, err := a.http.Do(hreq.WithContext(ctx))
	if err != nil {
		kind := Unreachable
		if errors.Is(err, context.DeadlineExceeded) {
			kind = Timeout
		}
		return nil, &Error{Kind: kind, URL: url, Attempts: 1, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, a.opts.MaxReplyBytes))
	if err != nil {
		return nil, &Error{Kind: Unreachable, URL: url, Attempts: 1, Err: err}
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return nil, &Error{Kind: HTTPStatus, URL: url, Status: resp.StatusCode, Body: truncate(string(raw)), Attempts: 1}
	}
	vars.SetValue(expr.Response, response(resp, raw))
	out, err := a.progs.Render(resultFor(a.mapping.Result, req.Finalizing), vars)
	if err != nil {
		return nil, &Error{Kind: BadReply, URL: url, Status: resp.StatusCode, Body: truncate(string(raw)), Attempts: 1, Err: fmt.Errorf("reconcile.api.result: %w", err)}
	}
	m, _ := out.(map[string]any)
	m["apiVersion"], m["kind"] = sdk.APIVersion, sdk.KindResult
	doc, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	res, err := sdk.DecodeResult(doc, req.Finalizing)
	if err != nil {
		return nil, &Error{Kind: BadReply, URL: url, Status: resp.StatusCode, Attempts: 1, Err: fmt.Errorf("reconcile.api.result does not make a valid Result: %w", err)}
	}
	return &Result{Result: *res, Attempts: 1}, nil
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

// build renders the HTTP request.
func (a *API) build(ctx context.Context, vars *expr.Vars) (*http.Request, error) {
	u, err := a.progs.Render(a.mapping.URL, vars)
	if err != nil {
		return nil, err
	}
	url, ok := u.(string)
	if !ok || !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) {
		return nil, fmt.Errorf("reconcile.api.url rendered %v, not an absolute http(s) URL", u)
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
	method := "POST"
	if a.mapping.Method != nil {
		m, err := a.progs.Render(a.mapping.Method, vars)
		if err != nil {
			return nil, err
		}
		method = strings.ToUpper(expr.FormatString(m))
		switch method {
		case "GET", "POST", "PUT", "PATCH", "DELETE":
		default:
			return nil, fmt.Errorf("reconcile.api.method rendered %q, not GET, POST, PUT, PATCH or DELETE", method)
		}
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
