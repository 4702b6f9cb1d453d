package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
)

// Defaults of Options.
const (
	DefaultNamespace    = "inrun-system"
	DefaultFieldManager = "inrun-gateway"
	DefaultMaxBodyBytes = 64 << 10
	DefaultRateLimit    = 10
	DefaultRateBurst    = 20
	DefaultMaxWait      = time.Minute
	DefaultAddress      = "127.0.0.1:8070"
)

// Options configure a Server. New fills the defaults.
type Options struct {
	// Blueprints are the targets to serve; each must have a serve section,
	// and no two the same target. Required.
	Blueprints []*ir.Blueprint
	// Client reads and writes the cluster: custom resources, Events, the
	// tokens' Secrets and the idempotency records' Leases. Required.
	Client client.WithWatch
	// Namespace holds the tokens and idempotency records. Default
	// DefaultNamespace.
	Namespace string
	// FieldManager owns what the gateway applies. Default
	// DefaultFieldManager.
	FieldManager string
	// MaxBodyBytes bounds a request's body (413 beyond). Default
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// RateLimit is each token's requests per second (429 beyond), with
	// RateBurst at once; a negative RateLimit turns the limit off.
	// Default DefaultRateLimit and DefaultRateBurst.
	RateLimit float64
	RateBurst int
	// MaxWait bounds ?wait= and a watch without follow. Default
	// DefaultMaxWait.
	MaxWait time.Duration
	// IdempotencyTTL is how long an Idempotency-Key's answer is kept.
	// Default 24h.
	IdempotencyTTL time.Duration
	// Authenticator turns bearer tokens into callers. Default Tokens in
	// Namespace.
	Authenticator Authenticator
	// Audit receives one JSON line per change and per refused attempt at
	// one. Default os.Stderr.
	Audit io.Writer
	// Log receives what goes wrong inside the gateway. Never a token.
	Log logr.Logger
	// Holder names this replica in idempotency records. Default host and
	// process id.
	Holder string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *Options) setDefaults() error {
	if o.Client == nil {
		return errors.New("gateway: Options.Client is required")
	}
	if len(o.Blueprints) == 0 {
		return errors.New("gateway: no Blueprint to serve")
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.RateLimit == 0 {
		o.RateLimit = DefaultRateLimit
	}
	if o.RateBurst <= 0 {
		o.RateBurst = DefaultRateBurst
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Authenticator == nil {
		o.Authenticator = &Tokens{Client: o.Client, Namespace: o.Namespace, Now: o.Now}
	}
	if o.Audit == nil {
		o.Audit = os.Stderr
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	if o.Holder == "" {
		host, _ := os.Hostname()
		o.Holder = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return nil
}

// Server is the intent gateway's HTTP server.
type Server struct {
	opts    Options
	targets map[string]*Target
	order   []string
	records *Records
	limiter *limiter
	mux     *http.ServeMux
	auditMu sync.Mutex
}

// New builds a Server for the Blueprints opts name.
func New(opts Options) (*Server, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := ir.OneBlueprintPerTarget(opts.Blueprints); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, targets: map[string]*Target{}, mux: http.NewServeMux()}
	for _, bp := range opts.Blueprints {
		t, err := NewTarget(bp)
		if err != nil {
			return nil, err
		}
		if _, dup := s.targets[t.Name()]; dup {
			continue // the same Blueprint given twice
		}
		s.targets[t.Name()] = t
		s.order = append(s.order, t.Name())
	}
	sort.Strings(s.order)
	linkMoves(s.targets)
	served := map[string]bool{}
	for name := range s.targets {
		served[name] = true
	}
	for _, t := range s.targets {
		t.served = served
	}
	s.records = &Records{Client: opts.Client, Namespace: opts.Namespace, Holder: opts.Holder, TTL: opts.IdempotencyTTL, Now: opts.Now}
	limit := rate.Limit(opts.RateLimit)
	if opts.RateLimit < 0 {
		limit = rate.Inf
	}
	s.limiter = newLimiter(limit, opts.RateBurst)
	s.routes()
	return s, nil
}

// Targets returns the served targets, by name.
func (s *Server) Targets() []*Target {
	out := make([]*Target, len(s.order))
	for i, n := range s.order {
		out[i] = s.targets[n]
	}
	return out
}

// Handler is the gateway's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Handle adds a handler to the gateway's mux, beside the API: inrun serve
// mounts the web console (package console) at ConsolePath, and the play
// endpoint (package play), this way.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ConsolePath is where inrun serve mounts the web console; the index links
// it, and sends browsers there, when something is mounted.
const ConsolePath = "/console/"

// Authenticate runs a request through the first stages every API request
// goes through, authenticate and the rate limit, for a handler mounted
// with Handle: the Caller, or the Problem to answer with.
func (s *Server) Authenticate(r *http.Request) (*Caller, *Problem) {
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok && r.Header.Get("Authorization") != "" {
		return nil, problem(http.StatusUnauthorized, CodeUnauthenticated, "send Authorization: Bearer <token>", "the Authorization header is not a bearer token")
	}
	caller, p := s.opts.Authenticator.Authenticate(r.Context(), strings.TrimSpace(bearer))
	if p != nil {
		return nil, p
	}
	if p := s.limiter.allow(caller.TokenID, s.opts.Now()); p != nil {
		return nil, p
	}
	return caller, nil
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /{$}", s.index)
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /v1/openapi.json", s.openapi)
	m.HandleFunc("GET /v1/targets", s.api(s.listTargets))
	m.HandleFunc("GET /v1/targets/{target}", s.api(s.getTarget))
	m.HandleFunc("POST /v1/intents", s.api(s.create))
	m.HandleFunc("POST /v1/targets/{target}/intents", s.api(s.create))
	m.HandleFunc("GET /v1/targets/{target}/intents", s.api(s.list))
	m.HandleFunc("GET /v1/targets/{target}/intents/{name}", s.api(s.get))
	m.HandleFunc("PUT /v1/targets/{target}/intents/{name}", s.api(s.create))
	m.HandleFunc("DELETE /v1/targets/{target}/intents/{name}", s.api(s.remove))
	m.HandleFunc("GET /v1/targets/{target}/intents/{name}/watch", s.api(s.watch))
	m.HandleFunc("/v1/", s.noRoute)
}

// noRoute answers a request no route of the API takes: 405, with Allow,
// when the path has routes for other methods; else 404. (The catch-all
// /v1/ would otherwise hide the mux's own 405.)
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = method
		if _, pattern := s.mux.Handler(probe); pattern != "/v1/" && pattern != "" {
			allowed = append(allowed, method)
		}
	}
	if len(allowed) == 0 {
		problem(http.StatusNotFound, CodeNotFound, "see /v1/openapi.json for the API", "no API at %s %s", r.Method, r.URL.Path).Write(w)
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	problem(http.StatusMethodNotAllowed, CodeMethod, "send "+strings.Join(allowed, " or ")+"; see /v1/openapi.json for the API", "%s %s: the API has no %s here", r.Method, r.URL.Path, r.Method).Write(w)
}

// index answers GET /: a browser is sent to the console when one is
// mounted; anything else reads where the API is.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	console := s.mounted(http.MethodGet, ConsolePath)
	if console && strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Redirect(w, r, ConsolePath, http.StatusSeeOther)
		return
	}
	idx := map[string]any{"api": "/v1", "openapi": "/v1/openapi.json", "targets": "/v1/targets", "console": ConsolePath}
	if !console {
		idx["console"] = "off: use the JSON API"
	}
	writeJSON(w, http.StatusOK, idx)
}

// request is one API request in progress: who sent it, and what is known
// of it so far, for the audit line.
type request struct {
	id     string
	url    *url.URL
	caller *Caller
	verb   ir.Verb
	target string
	intent string
	env    string
	status int
	code   string
	change bool
	// remote is the peer's address (a proxy's, behind one).
	remote string
}

// handler is an API handler: it writes its answer and returns the status,
// or returns a Problem for the wrapper to write.
type handler func(w http.ResponseWriter, r *http.Request, req *request) (int, *Problem)

// api wraps an API handler with the first stages every request goes
// through: authenticate, then the rate limit; and the audit line after.
func (s *Server) api(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := &request{id: randomID(12), url: r.URL, target: r.PathValue("target"), remote: clientIP(r)}
		w.Header().Set("X-Request-Id", req.id)
		req.change = r.Method != http.MethodGet
		status, p := s.serve(w, r, req, h)
		if p != nil {
			p.Write(w)
			status, req.code = p.Status, p.Code
		}
		req.status = status
		if req.change {
			s.audit(req)
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, req *request, h handler) (int, *Problem) {
	caller, p := s.Authenticate(r)
	if p != nil {
		return 0, p
	}
	req.caller = caller
	if t, ok := s.targets[req.target]; ok {
		if p := checkQuery(r.URL.Query(), t); p != nil {
			return 0, p
		}
	}
	return h(w, r, req)
}

// checkQuery refuses a query parameter a target's routes do not read: an
// ?environment= sent to a target without environments would otherwise
// act on its one namespace while the caller believes it chose one.
func checkQuery(q url.Values, t *Target) *Problem {
	known := []string{"wait", "follow"}
	if f := t.Serve.Namespace.From; f != "" {
		known = append(known, f)
	}
	var unknown []string
	for k := range q {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	why := "it has no environments"
	if f := t.Serve.Namespace.From; f != "" {
		why = "its environment is chosen with ?" + f + "="
	}
	params := make([]string, len(known))
	for i, k := range known {
		params[i] = "?" + k + "="
	}
	return problem(http.StatusBadRequest, CodeBadQuery, "drop ?"+strings.Join(unknown, "=, ?")+"=; "+t.Name()+" reads only "+orList(params),
		"target %s reads no query parameter %s (%s)", t.Name(), orList(unknown), why)
}

// target finds the target a request names.
func (s *Server) target(name string) (*Target, *Problem) {
	t, ok := s.targets[name]
	if !ok {
		fix := "GET /v1/targets lists the targets your token may use"
		return nil, problem(http.StatusNotFound, CodeUnknownTarget, fix, "no target %q", name)
	}
	return t, nil
}

// grants returns the environments the caller may use verb in on t (nil
// and true when the target's namespace is fixed), and whether it may at
// all.
func grants(c *Caller, t *Target, verb ir.Verb) ([]string, bool) {
	envs := map[string]bool{}
	any := false
	for _, g := range t.Serve.Tokens {
		if !slices.Contains(c.Scopes, g.Scope) || !slices.Contains(g.Verbs, verb) {
			continue
		}
		any = true
		if t.Serve.Namespace.From == "" {
			continue
		}
		if len(g.Environments) == 0 {
			for _, e := range t.Serve.Environments() {
				envs[e] = true
			}
		}
		for _, e := range g.Environments {
			envs[e] = true
		}
	}
	if t.Serve.Namespace.From == "" {
		return nil, any
	}
	out := make([]string, 0, len(envs))
	for e := range envs {
		out = append(out, e)
	}
	sort.Strings(out)
	return out, any
}

// Authorize is the authorize stage: it checks that the caller may use verb
// on t, in env when it is not empty, and returns a 403 Problem that says
// why not otherwise.
func Authorize(c *Caller, t *Target, verb ir.Verb, env string) *Problem {
	envs, ok := grants(c, t, verb)
	if !ok {
		var scopes []string
		for _, g := range t.Serve.Tokens {
			if slices.Contains(g.Verbs, verb) && !slices.Contains(scopes, g.Scope) {
				scopes = append(scopes, g.Scope)
			}
		}
		fix := "ask for a token with one of the scopes " + strings.Join(scopes, ", ")
		if len(scopes) == 0 {
			fix = "no scope may; the Blueprint's serve.tokens would have to grant it"
		}
		return problem(http.StatusForbidden, CodeOutOfScope, fix, "token %s (%s, scopes %s) may not %s %s intents: no scope it carries is granted %s",
			c.TokenID, c.Name, strings.Join(c.Scopes, ", "), verb, t.Name(), verb)
	}
	if env != "" && !slices.Contains(envs, env) {
		field := t.Serve.Namespace.From
		return problem(http.StatusForbidden, CodeOutOfScope, fmt.Sprintf("send it with %s %s, or ask for a token scoped to %s", field, orList(envs), env),
			"token %s (%s, scopes %s) may %s %s intents in %s %s only; %s %q is not one of them",
			c.TokenID, c.Name, strings.Join(c.Scopes, ", "), verb, t.Name(), field, orList(envs), field, env)
	}
	return nil
}

func orList(s []string) string {
	switch len(s) {
	case 0:
		return "none"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// readBody reads a JSON body within the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Problem) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return nil, problem(http.StatusUnsupportedMediaType, CodeMediaType, "send the intent as JSON with Content-Type: application/json (curl: -H 'Content-Type: application/json')",
				"the body is %s, not JSON", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, problem(http.StatusRequestEntityTooLarge, CodeTooLarge, "send only the intent's fields",
				"the body is larger than %d bytes", s.opts.MaxBodyBytes)
		}
		return nil, problem(http.StatusBadRequest, CodeMalformed, "send the body again", "the body could not be read: %v", err)
	}
	return body, nil
}

// waitFor reads ?wait=30s (or a number of seconds), or a Prefer: wait=30
// header (RFC 7240): how long to wait for the intent to settle.
func (s *Server) waitFor(r *http.Request) (time.Duration, *Problem) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		for _, pref := range r.Header.Values("Prefer") {
			for _, p := range strings.Split(pref, ",") {
				if n, ok := strings.CutPrefix(strings.TrimSpace(p), "wait="); ok {
					v = n
				}
			}
		}
	}
	if v == "" {
		return 0, nil
	}
	var d time.Duration
	if v == "true" {
		d = s.opts.MaxWait
	} else if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		d = time.Duration(n) * time.Second
	} else if pd, err := time.ParseDuration(v); err == nil && pd >= 0 {
		d = pd
	} else if strings.HasPrefix(v, "-") {
		return 0, problem(http.StatusBadRequest, CodeBadQuery, "write wait=30s, wait=30 (seconds) or wait=true; leave it out not to wait", "wait=%s is negative", v)
	} else {
		return 0, problem(http.StatusBadRequest, CodeBadQuery, "write wait=30s, wait=30 (seconds) or wait=true", "wait=%s is not a duration", v)
	}
	return min(d, s.opts.MaxWait), nil
}

// canonical is an intent as JSON with sorted keys, for fingerprints.
func canonical(in Intent) string {
	b, _ := json.Marshal(map[string]any(in))
	return string(b)
}

// clientIP is the peer address, for the audit line.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// auditLine is one audit record: who, what, when, outcome.
type auditLine struct {
	Time      string `json:"time"`
	Audit     string `json:"audit"`
	RequestID string `json:"requestId"`
	Caller    string `json:"caller,omitempty"`
	Token     string `json:"token,omitempty"`
	Verb      string `json:"verb,omitempty"`
	Target    string `json:"target,omitempty"`
	Intent    string `json:"intent,omitempty"`
	Env       string `json:"environment,omitempty"`
	Outcome   int    `json:"outcome"`
	Code      string `json:"code,omitempty"`
	Remote    string `json:"remote,omitempty"`
}

// audit writes the request's audit line. It names the token by id, never
// by its secret.
func (s *Server) audit(req *request) {
	l := auditLine{Time: s.opts.Now().UTC().Format(time.RFC3339Nano), Audit: "intent", RequestID: req.id, Verb: string(req.verb),
		Target: req.target, Intent: req.intent, Env: req.env, Outcome: req.status, Code: req.code, Remote: req.remote}
	if req.caller != nil {
		l.Caller, l.Token = req.caller.Name, req.caller.TokenID
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	_, _ = s.opts.Audit.Write(append(b, '\n'))
}

// Run serves on addr until ctx ends, then shuts down within 10 seconds.
func (s *Server) Run(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	// Expired idempotency records go hourly (more often with a short
	// TTL), whichever replica gets there first.
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go s.records.sweepEvery(sweepCtx, min(time.Hour, max(s.records.ttl()/4, time.Minute)), func(err error) {
		s.opts.Log.Error(err, "sweeping expired idempotency records")
	})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// get reads a custom resource of t.
// moved answers a request for intent name of t in namespace ns, when no
// custom resource of t's kind holds it, but a kind move (migrate.to) took
// the one that did to another kind: a 308 to the target that serves that
// kind, the path and query as they were; 410 when none is served here. It
// returns nil when nothing moved.
func (s *Server) moved(ctx context.Context, req *request, t *Target, ns, name string) *Problem {
	m := t.BP.Migrate
	if m == nil {
		return nil
	}
	switch {
	case !m.To.Namespaced:
		ns = ""
	case m.To.Namespace != "":
		ns = m.To.Namespace
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(m.To.GroupVersionKind)
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return nil // not moved, or not readable: the request goes on as it would
	}
	_, moved := obj.GetAnnotations()[ir.AnnotationMovedFrom]
	made := obj.GetLabels()[LabelTarget]
	if !moved || made == "" {
		return nil // not an intent's: the gateway never made it
	}
	kind := m.To.Kind + "." + m.To.GroupVersion().String()
	if to := t.movedTo; to != nil {
		p := problem(http.StatusPermanentRedirect, CodeIntentMoved, "send this and later requests to target "+to.Name()+": the Location header has the URL",
			"intent %s of %s moved to target %s: inrun migrate moved its custom resource to %s", name, t.Name(), to.Name(), kind)
		p.Location = "/v1/targets/" + to.Name() + strings.TrimPrefix(req.url.Path, "/v1/targets/"+t.Name())
		if req.url.RawQuery != "" {
			p.Location += "?" + req.url.RawQuery
		}
		return p
	}
	return problem(http.StatusGone, CodeIntentMoved, "serve "+kind+" through the gateway: move the serve section to the Blueprint that reconciles it, keeping the target name "+t.Name()+" so that callers keep their URLs",
		"intent %s of %s moved: inrun migrate moved its custom resource to %s, which this gateway does not serve", name, t.Name(), kind)
}

func (s *Server) read(ctx context.Context, t *Target, ns, name string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(t.BP.Resource.GroupVersionKind)
	if err := s.opts.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return nil, err
	}
	return obj, nil
}
