package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/rbac"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/simulate"
)

// These tests run the gateway against the real local control plane: the
// intent pack's Blueprint, its Python reconciler, the interpreted runtime,
// and callers over HTTP.

func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
}

const packDir = "../packs/intent"

// packBlueprint compiles the intent pack's Blueprint; with generate, a
// second target, gen, of the same kind, whose names the gateway makes.
func packBlueprint(t testing.TB, generate bool) *ir.Blueprint {
	t.Helper()
	if !generate {
		bp, err := compiler.CompileFile(filepath.Join(packDir, "blueprint.yaml"), compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return bp
	}
	data, err := os.ReadFile(filepath.Join(packDir, "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "  name: app\n", "  name: gen\n", 1)
	src = strings.Replace(src, "  target: app\n", "  target: gen\n", 1)
	src = strings.Replace(src, "  name:\n    from: repository\n", "  name:\n    generate: gen-\n", 1)
	bp, err := compiler.Compile(load.Bytes(filepath.Join(packDir, "generated.yaml"), []byte(src)), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bp.Serve.Name.Generate != "gen-" {
		t.Fatal("the generated Blueprint does not generate names")
	}
	return bp
}

// env is a gateway on the shared cluster.
type env struct {
	cfg    *rest.Config
	c      client.WithWatch
	srv    *httptest.Server
	gw     *gateway.Server
	tokens *gateway.Tokens
	audit  *syncBuffer
	ns     string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	setupOnce sync.Once
	setupErr  error
)

// prepare installs the CRD and the namespaces once per run.
func prepare(t testing.TB, cfg *rest.Config, c client.Client) {
	t.Helper()
	setupOnce.Do(func() {
		ctx := context.Background()
		if setupErr = runner.InstallCRDs(ctx, cfg, []*ir.Blueprint{packBlueprint(t, false)}); setupErr != nil {
			return
		}
		for _, ns := range []string{"apps-staging", "apps-prod", gateway.DefaultNamespace} {
			err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				setupErr = err
				return
			}
		}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// newEnv starts a gateway for the pack's targets on the shared cluster;
// opts may change its Options.
func newEnv(t testing.TB, opts func(*gateway.Options)) *env {
	t.Helper()
	lc := clustertest.Shared(t)
	cfg := rest.CopyConfig(lc.RESTConfig())
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	prepare(t, cfg, c)
	e := &env{cfg: cfg, c: c, audit: &syncBuffer{}, ns: gateway.DefaultNamespace}
	o := gateway.Options{Blueprints: []*ir.Blueprint{packBlueprint(t, false), packBlueprint(t, true)}, Client: c, Audit: e.audit}
	if opts != nil {
		opts(&o)
	}
	if e.gw, err = gateway.New(o); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.gw.Handler())
	t.Cleanup(e.srv.Close)
	e.tokens = &gateway.Tokens{Client: c, Namespace: e.ns}
	return e
}

// runtime starts the pack's reconciler and the interpreted runtime until
// the test ends.
func (e *env) runtime(t *testing.T) {
	t.Helper()
	bp := packBlueprint(t, false)
	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/reconcile", port)
	rec := &simulate.Reconciler{Command: []string{"python3", "reconciler/reconciler.py"}, Env: map[string]string{"PORT": fmt.Sprint(port)}}
	ctx := context.Background()
	proc, err := rec.Start(ctx, simulate.StartOptions{URL: url, BaseDir: packDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Stop() })
	rt := &e2e.InProcess{Blueprints: []*ir.Blueprint{bp.WithRemoteURL(url)}, SkipNameValidation: true}
	stop, err := rt.Start(ctx, e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// token makes a token with the given scopes.
func (e *env) token(t testing.TB, name string, scopes ...string) string {
	t.Helper()
	tok, _, err := e.tokens.Create(context.Background(), gateway.CreateOptions{Name: name, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// response is an answer, its body decoded.
type response struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
}

func (e *env) do(t testing.TB, method, path, token string, body any, headers ...string) *response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := &response{status: resp.StatusCode, header: resp.Header, raw: string(data)}
	_ = json.Unmarshal(data, &out.body)
	return out
}

// app reads the App a name names in a namespace; nil when there is none.
func (e *env) app(t testing.TB, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return e.object(t, "example.inrun.dev/v1", "App", ns, name)
}

// object reads the object of a kind a name names in a namespace; nil when
// there is none.
func (e *env) object(t testing.TB, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := e.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func get(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// TestIntentLifecycle: an intent with a token creates the App, the Python
// reconciler (which reads only reconcile.args) makes it run, the view
// comes back in the caller's words; it is changed and deleted through the
// gateway; a child's failure shows in the view, naming the intent field.
func TestIntentLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	e.runtime(t)
	tok := e.token(t, "lifecycle", "deploy")

	r := e.do(t, "POST", "/v1/intents?wait=90s", tok, map[string]any{"target": "app", "repository": "myorg/payments-api", "environment": "staging"})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	if r.header.Get("Location") != "/v1/targets/app/intents/myorg-payments-api?environment=staging" {
		t.Errorf("Location %q", r.header.Get("Location"))
	}
	if get(r.body, "state") != "ready" || get(r.body, "view", "phase") != "Running" || get(r.body, "view", "replicas") != float64(1) ||
		get(r.body, "view", "running") != "myorg/payments-api latest in staging" || get(r.body, "view", "url") != "http://myorg-payments-api" {
		t.Fatalf("view after create: %s", r.raw)
	}
	for _, leak := range []string{"apiVersion", "spec", "metadata", "kind"} {
		if strings.Contains(r.raw, `"`+leak+`"`) {
			t.Errorf("the view shows %q: %s", leak, r.raw)
		}
	}
	app := e.app(t, "apps-staging", "myorg-payments-api")
	if app == nil || app.GetLabels()[gateway.LabelTarget] != "app" || app.GetLabels()[gateway.LabelCaller] != "lifecycle" {
		t.Fatalf("the App: %v", app)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), app) })
	if !e.event(t, app, "IntentCreated") {
		t.Error("no IntentCreated Event on the App")
	}

	// Read it back, and list it.
	r = e.do(t, "GET", "/v1/targets/app/intents/myorg-payments-api", tok, nil)
	if r.status != 200 || get(r.body, "intent", "repository") != "myorg/payments-api" || get(r.body, "intent", "environment") != "staging" {
		t.Errorf("get: %d %s", r.status, r.raw)
	}
	r = e.do(t, "GET", "/v1/targets/app/intents", tok, nil)
	if items, _ := r.body["items"].([]any); r.status != 200 || len(items) != 1 {
		t.Errorf("list: %d %s", r.status, r.raw)
	}

	// Scale it.
	r = e.do(t, "PUT", "/v1/targets/app/intents/myorg-payments-api?wait=90s", tok, map[string]any{"repository": "myorg/payments-api", "replicas": 2})
	if r.status != 200 || get(r.body, "state") != "ready" || get(r.body, "view", "replicas") != float64(2) {
		t.Fatalf("update: %d %s", r.status, r.raw)
	}
	if e.event(t, app, "IntentUpdated") == false {
		t.Error("no IntentUpdated Event")
	}

	// A version a label cannot hold: the Deployment is refused, and the
	// view says version, not a path.
	r = e.do(t, "PUT", "/v1/targets/app/intents/myorg-payments-api?wait=90s", tok, map[string]any{"repository": "myorg/payments-api", "version": "1.0+build.5"})
	if r.status != 200 || get(r.body, "state") != "failed" {
		t.Fatalf("a failing child: %d %s", r.status, r.raw)
	}
	problems, _ := r.body["problems"].([]any)
	found := false
	for _, p := range problems {
		pm := p.(map[string]any)
		if fields, _ := pm["fields"].([]any); len(fields) == 1 && fields[0] == "version" && strings.Contains(pm["message"].(string), `version "1.0+build.5" was refused`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no problem naming version: %s", r.raw)
	}
	if strings.Contains(r.raw, "spec.") || strings.Contains(r.raw, "metadata.") {
		t.Errorf("the view leaks a path: %s", r.raw)
	}

	// Delete it, and wait until it is gone.
	r = e.do(t, "DELETE", "/v1/targets/app/intents/myorg-payments-api?environment=staging&wait=90s", tok, nil, "Idempotency-Key", `"delete-1"`)
	if r.status != 200 || get(r.body, "state") != "deleted" {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	// The retry of a delete that waits otherwise is the same request.
	r = e.do(t, "DELETE", "/v1/targets/app/intents/myorg-payments-api?environment=staging&wait=1s", tok, nil, "Idempotency-Key", `"delete-1"`)
	if r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry with another wait: %d %s; want the first answer replayed", r.status, r.raw)
	}
	if e.app(t, "apps-staging", "myorg-payments-api") != nil {
		t.Error("the App is still there")
	}
	r = e.do(t, "GET", "/v1/targets/app/intents/myorg-payments-api", tok, nil)
	if r.status != 404 {
		t.Errorf("get after delete: %d %s", r.status, r.raw)
	}

	// Every change is an audit line with who, what and the outcome, and no
	// token.
	audit := e.audit.String()
	for _, want := range []string{`"verb":"create","target":"app","intent":"apps-staging/myorg-payments-api","environment":"staging","outcome":201`, `"verb":"delete"`, `"caller":"lifecycle"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, audit)
		}
	}
	if strings.Contains(audit, tok) || strings.Contains(audit, strings.Split(tok, "_")[2]) {
		t.Error("the audit log holds the token")
	}
}

// event reports whether the App has an Event with the reason.
func (e *env) event(t testing.TB, obj *unstructured.Unstructured, reason string) bool {
	var l corev1.EventList
	if err := e.c.List(context.Background(), &l, client.InNamespace(obj.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	for _, ev := range l.Items {
		if ev.InvolvedObject.Name == obj.GetName() && ev.Reason == reason {
			return true
		}
	}
	return false
}

// snapshot is every App and Lease of the test's namespaces, and the Events
// the gateway recorded: what a refused request must not change.
func (e *env) snapshot(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, ns := range []string{"apps-staging", "apps-prod"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("example.inrun.dev/v1")
		l.SetKind("AppList")
		if err := e.c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			fmt.Fprintf(&b, "app %s/%s %s\n", ns, it.GetName(), it.GetResourceVersion())
		}
		var evs corev1.EventList
		if err := e.c.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			if ev.Source.Component == gateway.DefaultFieldManager {
				fmt.Fprintf(&b, "event %s %s\n", ev.Name, ev.ResourceVersion)
			}
		}
	}
	return b.String()
}

// TestAbuse sends what a gateway must refuse: each gets its status, a body
// that says what is wrong and what to do, and nothing is written.
func TestAbuse(t *testing.T) {
	e := newEnv(t, func(o *gateway.Options) { o.MaxBodyBytes = 4 << 10 })
	deploy := e.token(t, "abuse", "deploy")
	read := e.token(t, "reader", "read")
	revoked := e.token(t, "gone", "deploy")
	id := strings.Split(revoked, "_")[1]
	if _, err := e.tokens.Revoke(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	past := &gateway.Tokens{Client: e.c, Namespace: e.ns, Now: func() time.Time { return time.Now().Add(-2 * time.Hour) }}
	expired, _, err := past.Create(context.Background(), gateway.CreateOptions{Name: "old", Scopes: []string{"deploy"}, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret := deploy[:len(deploy)-4] + "aaaa"
	good := `{"repository": "abuse/app"}`
	before := e.snapshot(t)

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		status                    int
		code, detail              string
		headers                   []string
	}{
		{"no token", "POST", "/v1/targets/app/intents", "", good, 401, "unauthenticated", "no token", nil},
		{"not a bearer token", "POST", "/v1/targets/app/intents", "", good, 401, "unauthenticated", "not a bearer token", []string{"Authorization", "Basic YTpi"}},
		{"a bad token", "POST", "/v1/targets/app/intents", "inrun_abcdefghij_nope", good, 401, "unauthenticated", "is not known to this gateway, or does not match", nil},
		{"not an Inrun token", "POST", "/v1/targets/app/intents", "hunter2", good, 401, "unauthenticated", "not an Inrun token", nil},
		{"the wrong secret", "POST", "/v1/targets/app/intents", wrongSecret, good, 401, "unauthenticated", "is not known to this gateway, or does not match", nil},
		{"an expired token", "POST", "/v1/targets/app/intents", expired, good, 401, "token-expired", "expired at", nil},
		{"a revoked token", "POST", "/v1/targets/app/intents", revoked, good, 401, "token-revoked", "was revoked", nil},
		{"staging token, prod intent", "POST", "/v1/targets/app/intents", deploy, `{"repository": "abuse/app", "environment": "prod"}`, 403, "out-of-scope", `may create app intents in environment staging only; environment "prod" is not one of them`, nil},
		{"a read token creates", "POST", "/v1/targets/app/intents", read, good, 403, "out-of-scope", "may not create app intents", nil},
		{"staging token, prod delete", "DELETE", "/v1/targets/app/intents/x?environment=prod", deploy, nil, 403, "out-of-scope", `environment "prod" is not one of them`, nil},
		{"an unknown target", "POST", "/v1/targets/db/intents", deploy, good, 404, "unknown-target", `no target "db"`, nil},
		{"oversized", "POST", "/v1/targets/app/intents", deploy, `{"repository": "` + strings.Repeat("a", 5000) + `"}`, 413, "too-large", "larger than 4096 bytes", nil},
		{"malformed", "POST", "/v1/targets/app/intents", deploy, `{"repository": "abuse/app"`, 400, "malformed-json", "not JSON", nil},
		{"duplicate key", "POST", "/v1/targets/app/intents", deploy, `{"repository": "abuse/app", "repository": "abuse/other"}`, 400, "malformed-json", "twice", nil},
		{"unknown field", "POST", "/v1/targets/app/intents", deploy, `{"repository": "abuse/app", "spec": {"replicas": 3}}`, 422, "invalid-intent", `unknown field "spec"`, nil},
		{"wrong type", "POST", "/v1/targets/app/intents", deploy, `{"repository": "abuse/app", "replicas": "3"}`, 422, "invalid-intent", "replicas must be an integer", nil},
		{"refused by the CRD", "POST", "/v1/targets/app/intents", deploy, `{"repository": "abuse/app", "replicas": 50}`, 422, "refused", "replicas", nil},
		{"not JSON at all", "POST", "/v1/targets/app/intents", deploy, good, 415, "unsupported-media-type", "not JSON", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"a bad idempotency key", "POST", "/v1/targets/app/intents", deploy, good, 400, "idempotency-key", "Idempotency-Key", []string{"Idempotency-Key", `""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.method, tc.path, tc.token, tc.body, tc.headers...)
			if r.status != tc.status || r.body["code"] != tc.code || !strings.Contains(fmt.Sprint(r.body["detail"]), tc.detail) || r.body["fix"] == "" || r.body["fix"] == nil {
				t.Errorf("got %d %s; want %d, code %s, detail containing %q and a fix", r.status, r.raw, tc.status, tc.code, tc.detail)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	if after := e.snapshot(t); after != before {
		t.Errorf("refused requests wrote to the cluster:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// A refused attempt at a change is audited; the token never is.
	audit := e.audit.String()
	if !strings.Contains(audit, `"caller":"abuse","token":"`+strings.Split(deploy, "_")[1]+`","verb":"create","target":"app","environment":"prod","outcome":403`) {
		t.Errorf("no audit line of the refused prod intent:\n%s", audit)
	}
	if !strings.Contains(audit, `"outcome":403,"code":"out-of-scope","remote":"127.0.0.1"`) {
		t.Errorf("the audit lines do not say where the requests came from:\n%s", audit)
	}
	if !strings.Contains(audit, `"verb":"delete","target":"app","environment":"prod","outcome":403`) {
		t.Errorf("the audit line of the refused prod delete does not name its environment:\n%s", audit)
	}
	for _, tok := range []string{deploy, read, revoked, expired} {
		if strings.Contains(audit, strings.Split(tok, "_")[2]) {
			t.Errorf("the audit log holds a token's secret")
		}
	}
}

// TestFlood: a flood from one token is refused with 429 and Retry-After,
// while another token's requests go on.
func TestFlood(t *testing.T) {
	e := newEnv(t, func(o *gateway.Options) { o.RateLimit, o.RateBurst = 1, 5 })
	a := e.token(t, "flood", "read")
	b := e.token(t, "calm", "read")
	limited := 0
	for range 30 {
		r := e.do(t, "GET", "/v1/targets/app/intents", a, nil)
		switch r.status {
		case 200:
		case 429:
			limited++
			if r.header.Get("Retry-After") == "" || r.body["code"] != "rate-limited" || r.body["fix"] == nil {
				t.Errorf("429 without Retry-After, code or fix: %v %s", r.header, r.raw)
			}
		default:
			t.Fatalf("flood: %d %s", r.status, r.raw)
		}
	}
	if limited == 0 {
		t.Error("30 requests at once from one token with a burst of 5: none was refused")
	}
	if r := e.do(t, "GET", "/v1/targets/app/intents", b, nil); r.status != 200 {
		t.Errorf("another token during the flood: %d %s", r.status, r.raw)
	}
}

// TestLeastPrivilege runs the gateway as a ServiceAccount bound to what
// inrun rbac --gateway prints, and nothing else: every verb works.
func TestLeastPrivilege(t *testing.T) {
	admin := newEnv(t, nil)
	ctx := context.Background()
	cr, role := rbac.Gateway([]*ir.Blueprint{packBlueprint(t, false), packBlueprint(t, true)}, admin.ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "least-privilege", Namespace: admin.ns}}
	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}
	for _, obj := range []client.Object{sa, cr, role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "least-privilege"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name}, Subjects: []rbacv1.Subject{subject}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "least-privilege", Namespace: admin.ns}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name}, Subjects: []rbacv1.Subject{subject}},
	} {
		if err := admin.c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(admin.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + admin.ns + ":" + sa.Name}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: runner.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var l corev1.SecretList
	if err := c.List(ctx, &l, client.InNamespace(admin.ns)); !apierrors.IsForbidden(err) {
		t.Fatalf("the ServiceAccount may list Secrets (%v): the test would prove nothing", err)
	}
	e := newEnv(t, func(o *gateway.Options) { o.Client = c })
	tok := admin.token(t, "least", "release")
	r := e.do(t, "POST", "/v1/targets/gen/intents", tok, map[string]any{"repository": "least/app", "environment": "prod"}, "Idempotency-Key", `"least-1"`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	name := r.body["name"].(string)
	for _, req := range []struct{ method, path string }{
		{"GET", "/v1/targets/gen/intents/" + name + "?wait=1s"},
		{"GET", "/v1/targets/gen/intents"},
		{"PUT", "/v1/targets/gen/intents/" + name},
		{"DELETE", "/v1/targets/gen/intents/" + name},
	} {
		var body any
		if req.method == "PUT" {
			body = map[string]any{"repository": "least/app", "environment": "prod", "replicas": 2}
		}
		if r := e.do(t, req.method, req.path, tok, body); r.status >= 300 {
			t.Errorf("%s %s: %d %s", req.method, req.path, r.status, r.raw)
		}
	}
	if !strings.Contains(admin.audit.String()+e.audit.String(), `"verb":"delete","target":"gen"`) {
		t.Error("no audit line of the delete")
	}
}
