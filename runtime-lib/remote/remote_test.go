package remote_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/remote"
	"github.com/inrun/inrun/sdk"
)

// fakeClock records the waits between attempts instead of making them, so
// that tests can check a wait was asked for without spending it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sleeps = append(f.sleeps, d)
	f.now = f.now.Add(d)
	return ctx.Err()
}

func (f *fakeClock) Sleeps() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.sleeps...)
}

// server is a reconciler on loopback that counts the requests it gets.
type server struct {
	*httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	headers  []http.Header
}

func (s *server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers
}

// serve starts h, or with tls an https server, counting requests.
func serve(t *testing.T, h http.Handler, tls bool) *server {
	t.Helper()
	s := &server{}
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
	if tls {
		s.Server = httptest.NewTLSServer(counted)
	} else {
		s.Server = httptest.NewServer(counted)
	}
	t.Cleanup(s.Close)
	return s
}

// webApp is a reconciler: a Deployment always, a Service when args.expose.
func webApp(ctx context.Context, req *sdk.Request) (*sdk.Result, error) {
	if req.Finalizing {
		return &sdk.Result{Done: true}, nil
	}
	name := sdk.Resource{Object: req.Object}.Name()
	res := &sdk.Result{
		Status: map[string]any{"url": "http://" + name},
		Resources: []sdk.Resource{{ID: "deployment", Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"replicas": req.Args["replicas"]},
		}}},
	}
	if expose, _ := req.Args["expose"].(bool); expose {
		res.Resources = append(res.Resources, sdk.Resource{ID: "service", Object: map[string]any{
			"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name},
		}})
	}
	return res, nil
}

func request(args map[string]any) *sdk.Request {
	return &sdk.Request{
		APIVersion: sdk.APIVersion,
		Kind:       sdk.KindRequest,
		Object: map[string]any{
			"apiVersion": "example.inrun.dev/v1", "kind": "WebApp",
			"metadata": map[string]any{"name": "shop", "namespace": "default", "uid": "1234"},
			"spec":     map[string]any{"replicas": int64(2)},
		},
		Args: args,
	}
}

func newClient(t *testing.T, opts remote.Options) *remote.Client {
	t.Helper()
	c, err := remote.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func asError(t *testing.T, err error) *remote.Error {
	t.Helper()
	var e *remote.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want a *remote.Error", err, err)
	}
	return e
}

func TestCall(t *testing.T) {
	srv := serve(t, sdk.Handler(webApp), false)
	c := newClient(t, remote.Options{URL: srv.URL + "/reconcile"})
	res, err := c.Call(t.Context(), request(map[string]any{"replicas": int64(3), "expose": true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Cached || res.Attempts != 1 {
		t.Errorf("Cached = %v, Attempts = %d, want a fresh result from one attempt", res.Cached, res.Attempts)
	}
	if len(res.Resources) != 2 || res.Resources[0].ID != "deployment" || res.Resources[1].Ref().String() != "Service shop" {
		t.Fatalf("resources = %+v", res.Resources)
	}
	spec := res.Resources[0].Object["spec"].(map[string]any)
	if spec["replicas"] != int64(3) {
		t.Errorf("replicas = %#v: args must reach the reconciler and its numbers come back as int64", spec["replicas"])
	}
	if res.Status["url"] != "http://shop" {
		t.Errorf("status = %v", res.Status)
	}
	h := srv.Headers()[0]
	if h.Get("Content-Type") != "application/json" || h.Get("Authorization") != "" {
		t.Errorf("headers = %v", h)
	}
}

func TestUnreachable(t *testing.T) {
	// A port that was just free and is now closed: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	clock := newFakeClock()
	c := newClient(t, remote.Options{URL: "http://" + addr + "/", MaxAttempts: 3, Clock: clock})
	_, err = c.Call(t.Context(), request(nil))
	e := asError(t, err)
	if e.Kind != remote.Unreachable || e.Attempts != 3 {
		t.Errorf("Kind = %s, Attempts = %d, want Unreachable after 3", e.Kind, e.Attempts)
	}
	if n := len(clock.Sleeps()); n != 2 {
		t.Errorf("waited %d times, want 2 (between 3 attempts)", n)
	}
	want := fmt.Sprintf("reconciler at http://%s/ is unreachable after 3 attempts: dial tcp %s: connect: connection refused", addr, addr)
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the request, so that the server notices when the client
		// hangs up, then never answer.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}), false)
	defer close(stop)
	clock := newFakeClock()
	c := newClient(t, remote.Options{URL: srv.URL, Timeout: 50 * time.Millisecond, MaxAttempts: 2, Clock: clock})
	_, err := c.Call(t.Context(), request(nil))
	e := asError(t, err)
	if e.Kind != remote.Timeout || e.Attempts != 2 {
		t.Errorf("Kind = %s, Attempts = %d, want Timeout after 2", e.Kind, e.Attempts)
	}
	want := "reconciler at " + srv.URL + " did not answer in time after 2 attempts: no reply within 50ms (make it answer faster, or raise reconcile.timeout)"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("the server saw %d requests, want 2", n)
	}
}

// failFirst answers the first n requests with status and header, then
// passes requests to h.
func failFirst(n int32, status int, header map[string]string, body string, h http.Handler) http.Handler {
	var seen atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) <= n {
			for k, v := range header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestRetry5xx(t *testing.T) {
	srv := serve(t, failFirst(1, 500, nil, "database is down", sdk.Handler(webApp)), false)
	clock := newFakeClock()
	c := newClient(t, remote.Options{URL: srv.URL, Backoff: 100 * time.Millisecond, Clock: clock})
	res, err := c.Call(t.Context(), request(nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || srv.requests.Load() != 2 {
		t.Errorf("Attempts = %d, requests = %d, want 2", res.Attempts, srv.requests.Load())
	}
	sleeps := clock.Sleeps()
	if len(sleeps) != 1 || sleeps[0] < 50*time.Millisecond || sleeps[0] > 100*time.Millisecond {
		t.Errorf("waits = %v, want one between half the backoff and the backoff (jitter)", sleeps)
	}
}

func TestRetryAfter(t *testing.T) {
	clock := newFakeClock()
	for _, tc := range []struct {
		name       string
		retryAfter string
		want       time.Duration
	}{
		{"seconds", "1", time.Second},
		{"HTTP date", clock.Now().Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			srv := serve(t, failFirst(1, 429, map[string]string{"Retry-After": tc.retryAfter}, "slow down", sdk.Handler(webApp)), false)
			c := newClient(t, remote.Options{URL: srv.URL, Clock: clock})
			res, err := c.Call(t.Context(), request(nil))
			if err != nil {
				t.Fatal(err)
			}
			if res.Attempts != 2 {
				t.Errorf("Attempts = %d, want 2", res.Attempts)
			}
			if sleeps := clock.Sleeps(); len(sleeps) != 1 || sleeps[0] < tc.want {
				t.Errorf("waits = %v, want one of at least %s", sleeps, tc.want)
			}
		})
	}

	t.Run("longer than the budget", func(t *testing.T) {
		clock := newFakeClock()
		srv := serve(t, failFirst(1, 503, map[string]string{"Retry-After": "120"}, "maintenance", sdk.Handler(webApp)), false)
		c := newClient(t, remote.Options{URL: srv.URL, Clock: clock, MaxElapsed: 30 * time.Second})
		_, err := c.Call(t.Context(), request(nil))
		e := asError(t, err)
		if e.Kind != remote.HTTPStatus || e.Status != 503 || e.RetryAfter != 120*time.Second || e.Attempts != 1 {
			t.Errorf("got %+v, want a 503 after one attempt that passes Retry-After on", e)
		}
		if len(clock.Sleeps()) != 0 {
			t.Errorf("waited %v: a wait past MaxElapsed is the runtime's requeue, not the client's", clock.Sleeps())
		}
		want := "reconciler at " + srv.URL + " answered 503 Service Unavailable: maintenance (it asks to be called again in 2m0s)"
		if err.Error() != want {
			t.Errorf("got  %s\nwant %s", err, want)
		}
	})
}

func TestHTTPStatus(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		status   int
		body     string
		attempts int
		want     string
	}{
		{500, "panic:\n  database is down\n", 3, "answered 500 Internal Server Error after 3 attempts: panic: database is down"},
		{500, long, 3, "answered 500 Internal Server Error after 3 attempts: " + strings.Repeat("x", 200) + "…"},
		{401, "", 1, "answered 401 Unauthorized (check the bearer token the runtime sends)"},
		{404, "404 page not found", 1, "answered 404 Not Found: 404 page not found (check the reconciler's URL or Service path; requests are POSTed)"},
		{400, "bad", 1, "answered 400 Bad Request: bad"},
		{302, "", 1, "answered 302 Found (redirects are not followed: use the address it redirects to)"},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv := serve(t, failFirst(100, tc.status, map[string]string{"Location": "/elsewhere"}, tc.body, nil), false)
			c := newClient(t, remote.Options{URL: srv.URL, Clock: newFakeClock()})
			_, err := c.Call(t.Context(), request(nil))
			e := asError(t, err)
			if e.Kind != remote.HTTPStatus || e.Status != tc.status || e.Attempts != tc.attempts {
				t.Errorf("Kind = %s, Status = %d, Attempts = %d", e.Kind, e.Status, e.Attempts)
			}
			if want := "reconciler at " + srv.URL + " " + tc.want; err.Error() != want {
				t.Errorf("got  %s\nwant %s", err, want)
			}
		})
	}
}

func TestBadReply(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reply    string
		problems int
		want     string
	}{{
		name:     "not JSON",
		reply:    "<html>oops</html>",
		problems: 1,
		want:     "the reply is not valid JSON: invalid character '<' looking for beginning of value at line 1, column 1 (send one JSON object)",
	}, {
		name: "several mistakes",
		reply: `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileResult",
			"resources": [{"apiVersion": "v1", "metadata": {"name": "x"}}],
			"events": [{"type": "Info", "reason": "Hi"}], "requeueAfter": "soon"}`,
		problems: 3,
		want: `resources[0].kind is required (every object needs apiVersion, kind and metadata.name); ` +
			`events[0].type "Info" is not valid (use Normal or Warning); ` +
			`requeueAfter "soon" is not a duration (use a Go duration such as "30s" or "1m30s", or a number of seconds)`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, tc.reply)
			}), false)
			c := newClient(t, remote.Options{URL: srv.URL, Clock: newFakeClock()})
			_, err := c.Call(t.Context(), request(nil))
			e := asError(t, err)
			if e.Kind != remote.BadReply || e.Attempts != 1 {
				t.Errorf("Kind = %s, Attempts = %d, want BadReply, not retried", e.Kind, e.Attempts)
			}
			var list sdk.ErrorList
			if !errors.As(err, &list) || len(list) != tc.problems {
				t.Errorf("problems = %v, want %d", list, tc.problems)
			}
			if want := "reply of reconciler at " + srv.URL + " is not a valid ReconcileResult: " + tc.want; err.Error() != want {
				t.Errorf("got  %s\nwant %s", err, want)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	srv := serve(t, sdk.Handler(webApp), false)

	c := newClient(t, remote.Options{URL: srv.URL, Token: "s3cret", DisableCache: true})
	if _, err := c.Call(t.Context(), request(nil)); err != nil {
		t.Fatal(err)
	}
	tokens := []string{"one", "two"}
	c = newClient(t, remote.Options{URL: srv.URL, DisableCache: true, TokenSource: func(context.Context) (string, error) {
		t := tokens[0]
		tokens = tokens[1:]
		return t, nil
	}})
	for range 2 {
		if _, err := c.Call(t.Context(), request(nil)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, h := range srv.Headers() {
		got = append(got, h.Get("Authorization"))
	}
	if want := "Bearer s3cret,Bearer one,Bearer two"; strings.Join(got, ",") != want {
		t.Errorf("Authorization headers = %v, want %s: a TokenSource is asked before every request", got, want)
	}

	c = newClient(t, remote.Options{URL: srv.URL, TokenSource: func(context.Context) (string, error) {
		return "", errors.New(`secret default/reconciler-token not found`)
	}})
	_, err := c.Call(t.Context(), request(nil))
	if e := asError(t, err); e.Kind != remote.Credentials || srv.requests.Load() != 3 {
		t.Errorf("Kind = %s, requests = %d: without a token nothing is sent", e.Kind, srv.requests.Load())
	}
	if want := "no bearer token for reconciler at " + srv.URL + ": secret default/reconciler-token not found"; err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestTLS(t *testing.T) {
	srv := serve(t, sdk.Handler(webApp), true)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	c := newClient(t, remote.Options{URL: srv.URL, CABundle: ca})
	if _, err := c.Call(t.Context(), request(nil)); err != nil {
		t.Fatalf("with the CA bundle: %v", err)
	}

	clock := newFakeClock()
	c = newClient(t, remote.Options{URL: srv.URL, Clock: clock})
	_, err := c.Call(t.Context(), request(nil))
	e := asError(t, err)
	if e.Kind != remote.Unreachable || e.Attempts != 1 || len(clock.Sleeps()) != 0 {
		t.Errorf("Kind = %s, Attempts = %d: a refused certificate is not retried", e.Kind, e.Attempts)
	}
	if want := "(its certificate is not signed by a CA the runtime trusts: give the reconciler's CA bundle)"; !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got %s\nwant it to end with %s", err, want)
	}
	if !strings.HasPrefix(err.Error(), "reconciler at "+srv.URL+" is unreachable: tls: failed to verify certificate: x509: certificate signed by unknown authority") {
		t.Errorf("got %s", err)
	}
}

func TestCache(t *testing.T) {
	srv := serve(t, sdk.Handler(webApp), false)
	c := newClient(t, remote.Options{URL: srv.URL})
	ctx := t.Context()
	calls := func() int32 { return srv.requests.Load() }

	req := request(map[string]any{"replicas": int64(2)})
	req.Observed = []sdk.Resource{
		{ID: "deployment", Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "shop"}}},
		{ID: "service", Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "shop"}}},
	}
	first, err := c.Call(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	first.Status["url"] = "changed by the caller"

	// The same request, its observed children listed in another order.
	same := request(map[string]any{"replicas": int64(2)})
	same.Observed = []sdk.Resource{req.Observed[1], req.Observed[0]}
	second, err := c.Call(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Cached || second.Attempts != 0 || calls() != 1 {
		t.Fatalf("Cached = %v, requests = %d: an unchanged request must not be sent", second.Cached, calls())
	}
	if second.Status["url"] != "http://shop" {
		t.Errorf("status = %v: a cached Result must not share maps with one handed out before", second.Status)
	}

	changed := request(map[string]any{"replicas": int64(3)})
	if res, err := c.Call(ctx, changed); err != nil || res.Cached || calls() != 2 {
		t.Fatalf("err = %v, requests = %d: a changed request must be sent", err, calls())
	}

	fin := request(nil)
	fin.Finalizing = true
	for i := range 2 {
		res, err := c.Call(ctx, fin)
		if err != nil || res.Cached || !res.Done {
			t.Fatalf("finalizing call %d: %v, %+v", i, err, res)
		}
	}
	if calls() != 4 {
		t.Errorf("requests = %d: finalizing requests are always sent", calls())
	}

	c.Forget(sdk.ObjectRef{Group: "example.inrun.dev", Kind: "WebApp", Namespace: "default", Name: "shop"})
	c.Call(ctx, changed)
	c.Call(ctx, changed)
	if calls() != 5 {
		t.Errorf("requests = %d, want one more after Forget, then cached", calls())
	}

	off := newClient(t, remote.Options{URL: srv.URL, DisableCache: true})
	off.Call(ctx, changed)
	off.Call(ctx, changed)
	if calls() != 7 {
		t.Errorf("requests = %d: DisableCache must send every request", calls())
	}
}

// TestCacheRequeueAndFailure checks the two things that make the next
// request go out even when it is unchanged: a Result that asked for a
// requeue, and a failure.
func TestCacheRequeueAndFailure(t *testing.T) {
	var requeue atomic.Bool
	requeue.Store(true)
	srv := serve(t, failFirst(0, 0, nil, "", sdk.Handler(func(ctx context.Context, req *sdk.Request) (*sdk.Result, error) {
		if requeue.Load() {
			return &sdk.Result{RequeueAfter: sdk.Duration(time.Minute)}, nil
		}
		return &sdk.Result{}, nil
	})), false)
	c := newClient(t, remote.Options{URL: srv.URL})
	req := request(nil)
	c.Call(t.Context(), req)
	c.Call(t.Context(), req)
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("requests = %d: a Result that asks for a requeue is not reused", n)
	}
	requeue.Store(false)
	c.Call(t.Context(), req)
	c.Call(t.Context(), req)
	if n := srv.requests.Load(); n != 3 {
		t.Errorf("requests = %d, want the last one cached", n)
	}

	bad := serve(t, failFirst(1, 400, nil, "no", sdk.Handler(webApp)), false)
	c = newClient(t, remote.Options{URL: bad.URL})
	if _, err := c.Call(t.Context(), req); err == nil {
		t.Fatal("want the 400")
	}
	if res, err := c.Call(t.Context(), req); err != nil || res.Cached {
		t.Errorf("after a failure: %v, %+v", err, res)
	}
}

func TestCanceled(t *testing.T) {
	srv := serve(t, failFirst(100, 503, nil, "", nil), false)
	ctx, cancel := context.WithCancel(t.Context())
	clock := &cancelingClock{fakeClock: newFakeClock(), cancel: cancel}
	c := newClient(t, remote.Options{URL: srv.URL, Clock: clock})
	_, err := c.Call(ctx, request(nil))
	var e *remote.Error
	if errors.As(err, &e) || !errors.Is(err, context.Canceled) {
		t.Errorf("got %v: a canceled context is not the reconciler's failure", err)
	}
}

// cancelingClock cancels the call's context while it waits, as a
// shutting-down manager does.
type cancelingClock struct {
	*fakeClock
	cancel func()
}

func (c *cancelingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.cancel()
	return c.fakeClock.Sleep(ctx, d)
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		opts remote.Options
		url  string
	}{
		{remote.OptionsFor(&ir.Remote{Service: &ir.ServiceRef{Namespace: "shop", Name: "web", Port: 8080, Path: "/reconcile"}}), "http://web.shop.svc:8080/reconcile"},
		{remote.Options{Service: &remote.ServiceRef{Namespace: "shop", Name: "web"}}, "http://web.shop.svc:80/"},
		{remote.Options{Service: &remote.ServiceRef{Namespace: "shop", Name: "web", Scheme: "https"}}, "https://web.shop.svc:443/"},
		{remote.OptionsFor(&ir.Remote{URL: "https://reconciler.example.com/v1", Timeout: time.Second}), "https://reconciler.example.com/v1"},
	} {
		c, err := remote.New(tc.opts)
		if err != nil {
			t.Errorf("%+v: %v", tc.opts, err)
			continue
		}
		if c.URL() != tc.url {
			t.Errorf("URL() = %s, want %s", c.URL(), tc.url)
		}
	}

	_, err := remote.New(remote.Options{
		URL: "reconciler:8080", Token: "t",
		TokenSource: func(context.Context) (string, error) { return "", nil },
		CABundle:    []byte("not PEM"), Timeout: -time.Second,
	})
	want := "remote: URL \"reconciler:8080\" is not an absolute http:// or https:// URL\n" +
		"set Token or TokenSource, not both\n" +
		"CABundle holds no PEM certificate\n" +
		"Timeout -1s is negative"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestTruncatedReply: a reply whose connection closes before the end of
// its body is retried, and reported as cut short, not as unreachable.
func TestTruncatedReply(t *testing.T) {
	const body = `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileResult"}`
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:20])
		buf.Flush()
	}), false)
	clock := newFakeClock()
	c := newClient(t, remote.Options{URL: srv.URL + "/", MaxAttempts: 3, Clock: clock})
	_, err := c.Call(t.Context(), request(nil))
	e := asError(t, err)
	if e.Kind != remote.Truncated || e.Attempts != 3 || srv.requests.Load() != 3 {
		t.Errorf("Kind = %s, Attempts = %d, requests = %d; want Truncated after 3", e.Kind, e.Attempts, srv.requests.Load())
	}
	want := fmt.Sprintf("reply of reconciler at %s/ was cut short after 3 attempts: the connection closed after 20 of the %d bytes its Content-Length announced", srv.URL, len(body))
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

// TestClosedWithoutReply: a server that reads the request and hangs up
// was reachable; the message says it closed the connection, not that it
// is unreachable with a bare EOF.
func TestClosedWithoutReply(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}), false)
	clock := newFakeClock()
	c := newClient(t, remote.Options{URL: srv.URL + "/", MaxAttempts: 3, Clock: clock})
	_, err := c.Call(t.Context(), request(nil))
	e := asError(t, err)
	if e.Kind != remote.Closed || e.Attempts != 3 || srv.requests.Load() != 3 {
		t.Errorf("Kind = %s, Attempts = %d, requests = %d; want Closed after 3", e.Kind, e.Attempts, srv.requests.Load())
	}
	want := fmt.Sprintf("reconciler at %s/ closed the connection without answering after 3 attempts (did it crash or give up while handling the request? its log may say)", srv.URL)
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}
