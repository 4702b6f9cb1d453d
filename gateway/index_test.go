package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
)

// oneToken knows one token, "good", of scope deploy.
type oneToken struct{}

func (oneToken) Authenticate(_ context.Context, bearer string) (*gateway.Caller, *gateway.Problem) {
	if bearer == "good" {
		return &gateway.Caller{TokenID: "t1", Name: "me", Scopes: []string{"deploy"}}, nil
	}
	return nil, &gateway.Problem{Status: http.StatusUnauthorized, Title: "Unauthorized", Code: gateway.CodeUnauthenticated, Detail: "not known", Fix: "make a token"}
}

// TestIndexAndMounts: GET / sends a browser to the console once one is
// mounted, and says where the API is otherwise; a mounted handler shares
// the API's authenticate and limit stages.
func TestIndexAndMounts(t *testing.T) {
	s, err := gateway.New(gateway.Options{Blueprints: []*ir.Blueprint{packBlueprint(t, false)}, Client: fake.NewClientBuilder().Build(),
		Authenticator: oneToken{}, RateLimit: 0.001, RateBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	index := func(accept string) (int, string, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Header.Set("Accept", accept)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		b, _ := io.ReadAll(res.Body)
		_ = json.Unmarshal(b, &body)
		return res.StatusCode, res.Header.Get("Location"), body
	}

	if status, _, body := index("text/html,application/xhtml+xml"); status != 200 || body["console"] != "off: use the JSON API" || body["api"] != "/v1" {
		t.Errorf("no console mounted: %d %v", status, body)
	}
	s.Handle(gateway.ConsolePath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, p := s.Authenticate(r)
		if p != nil {
			p.Write(w)
			return
		}
		_, _ = io.WriteString(w, caller.Name)
	}))
	if status, loc, _ := index("text/html,application/xhtml+xml"); status != http.StatusSeeOther || loc != gateway.ConsolePath {
		t.Errorf("a browser, with the console mounted: %d Location %q", status, loc)
	}
	if status, _, body := index("application/json"); status != 200 || body["console"] != gateway.ConsolePath {
		t.Errorf("a client, with the console mounted: %d %v", status, body)
	}

	get := func(token string) (int, http.Header, string) {
		req, _ := http.NewRequest("GET", srv.URL+gateway.ConsolePath, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}
	if status, h, _ := get("bad"); status != 401 || h.Get("WWW-Authenticate") == "" || h.Get("Content-Type") != "application/problem+json" {
		t.Errorf("a bad token: %d %v", status, h)
	}
	if status, _, body := get("good"); status != 200 || body != "me" {
		t.Errorf("a good token: %d %q", status, body)
	}
	// The rate limit is the API's: a burst of one, spent above, and one more
	// in a quarter of an hour.
	if status, h, _ := get("good"); status != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("past the burst: %d %v", status, h)
	}
}

// TestQueryParametersTheTargetReads: a query parameter a target does not
// read is a 400 naming it, not ignored: ?environment= sent to a target
// whose namespace is fixed would act there while the caller believes it
// chose another.
func TestQueryParametersTheTargetReads(t *testing.T) {
	site, err := compiler.CompileFile("../packs/migration/field/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := gateway.New(gateway.Options{Blueprints: []*ir.Blueprint{packBlueprint(t, false), site}, Client: fake.NewClientBuilder().Build(),
		Authenticator: oneToken{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		refused  bool
		mentions string
	}{
		{"/v1/targets/site/intents?environment=production", true, "target site reads no query parameter environment (it has no environments)"},
		{"/v1/targets/site/intents/myorg-blog?environment=production", true, "drop ?environment=; site reads only ?wait= or ?follow="},
		{"/v1/targets/app/intents?env=staging&x=1", true, "target app reads no query parameter env or x (its environment is chosen with ?environment=)"},
		{"/v1/targets/site/intents?wait=5s", false, ""},
		{"/v1/targets/app/intents?environment=staging", false, ""},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.Header.Set("Authorization", "Bearer good")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		var p gateway.Problem
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		refused := w.Code == http.StatusBadRequest && p.Code == gateway.CodeBadQuery
		if refused != tc.refused || !strings.Contains(p.Detail+"; "+p.Fix, tc.mentions) {
			t.Errorf("GET %s: %d %s; want refused %v, mentioning %q", tc.path, w.Code, w.Body, tc.refused, tc.mentions)
		}
	}
}
