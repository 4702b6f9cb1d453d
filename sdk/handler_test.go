package sdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/inrun/inrun/sdk"
)

const validRequest = `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileRequest",
	"object": {"apiVersion": "example.inrun.dev/v1", "kind": "WebApp", "metadata": {"name": "shop"}},
	"args": {"n": 1}, "observed": [], "finalizing": false}`

func post(t *testing.T, h http.Handler, method, body string) (int, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(method, srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(out))
}

func TestHandler(t *testing.T) {
	ok := func(ctx context.Context, req *sdk.Request) (*sdk.Result, error) {
		return &sdk.Result{Status: map[string]any{"n": req.Args["n"]}}, nil
	}
	for _, tc := range []struct {
		name   string
		fn     sdk.Func
		method string
		body   string
		status int
		want   string
	}{{
		name: "fills in apiVersion and kind", fn: ok, body: validRequest,
		status: 200, want: `{"apiVersion":"inrun.dev/reconciler/v1alpha1","kind":"ReconcileResult","status":{"n":1}}`,
	}, {
		name: "nil means nothing to do", body: validRequest, status: 200,
		fn:   func(context.Context, *sdk.Request) (*sdk.Result, error) { return nil, nil },
		want: `{"apiVersion":"inrun.dev/reconciler/v1alpha1","kind":"ReconcileResult"}`,
	}, {
		name: "only POST", fn: ok, method: http.MethodGet, status: 405,
		want: "send a ReconcileRequest with POST",
	}, {
		name: "a bad request lists every problem", fn: ok, status: 400,
		body: `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileRequest", "objekt": {}}`,
		want: "not a valid ReconcileRequest: object is required (the custom resource being reconciled); objekt is not a field of a ReconcileRequest (did you mean object?)",
	}, {
		name: "an error is a 500 with its message", body: validRequest, status: 500,
		fn:   func(context.Context, *sdk.Request) (*sdk.Result, error) { return nil, errors.New("database is down") },
		want: "database is down",
	}, {
		name: "a panic is a 500, not a dropped connection", body: validRequest, status: 500,
		fn:   func(context.Context, *sdk.Request) (*sdk.Result, error) { panic("boom") },
		want: "the reconciler panicked: boom",
	}, {
		name: "an invalid Result is caught before it is sent", body: validRequest, status: 500,
		fn: func(context.Context, *sdk.Request) (*sdk.Result, error) {
			return &sdk.Result{Done: true, Events: []sdk.Event{{Type: "Info", Reason: "X"}}}, nil
		},
		want: `the reconciler returned an invalid Result: events[0].type "Info" is not valid (use Normal or Warning); done is only valid in reply to a finalizing request (leave it out, or false)`,
	}, {
		name: "a step answers only a request with one", body: validRequest, status: 500,
		fn: func(context.Context, *sdk.Request) (*sdk.Result, error) {
			return &sdk.Result{Step: &sdk.StepResult{Phase: sdk.StepFailed}}, nil
		},
		want: `the reconciler returned an invalid Result: step is only valid in reply to a request with a step (leave it out: the Blueprint declares no reconcile.workflow)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			status, body := post(t, sdk.Handler(tc.fn), method, tc.body)
			if status != tc.status || body != tc.want {
				t.Errorf("got %d %s\nwant %d %s", status, body, tc.status, tc.want)
			}
		})
	}
}
