package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
)

// TestNoRoute: a method the API does not have on a path it serves is 405
// with Allow; a path it does not serve is 404. Neither reaches a stage.
func TestNoRoute(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/intent/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Blueprints: []*ir.Blueprint{bp}, Client: fake.NewClientBuilder().Build()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		allow, code  string
	}{
		{http.MethodPatch, "/v1/targets/app/intents/myorg-hello", http.StatusMethodNotAllowed, "GET, PUT, DELETE", CodeMethod},
		{http.MethodDelete, "/v1/targets/app/intents", http.StatusMethodNotAllowed, "GET, POST", CodeMethod},
		{http.MethodGet, "/v1/intents", http.StatusMethodNotAllowed, "POST", CodeMethod},
		{http.MethodGet, "/v1/nothing/here", http.StatusNotFound, "", CodeNotFound},
	} {
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		if w.Code != tc.status || w.Header().Get("Allow") != tc.allow || p.Code != tc.code {
			t.Errorf("%s %s: %d, Allow %q, code %q; want %d, Allow %q, code %q", tc.method, tc.path, w.Code, w.Header().Get("Allow"), p.Code, tc.status, tc.allow, tc.code)
		}
	}
}

// TestOpenAPIDocumentsPlay: the document served lists the play endpoint
// when one is mounted beside the API, and is still valid OpenAPI 3; it
// does not when none is.
func TestOpenAPIDocumentsPlay(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/intent/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mount := range []bool{false, true} {
		s, err := New(Options{Blueprints: []*ir.Blueprint{bp}, Client: fake.NewClientBuilder().Build()})
		if err != nil {
			t.Fatal(err)
		}
		if mount {
			s.Handle("POST /v1/targets/{target}/play", http.NotFoundHandler())
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
		loaded, err := openapi3.NewLoader().LoadFromData(w.Body.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if err := loaded.Validate(context.Background()); err != nil {
			t.Fatalf("mounted %v: the document is not valid OpenAPI 3: %v", mount, err)
		}
		if play := loaded.Paths.Find("/v1/targets/app/play"); (play != nil && play.Post != nil) != mount {
			t.Errorf("play mounted %v, documented %v", mount, play != nil)
		}
	}
}

// fixedCaller authenticates every request as one caller.
type fixedCaller Caller

func (f fixedCaller) Authenticate(context.Context, string) (*Caller, *Problem) {
	c := Caller(f)
	return &c, nil
}

// TestTokenWithNoGrantedScope: a token whose scopes no Blueprint's
// serve.tokens grants is refused GET /v1/targets too (403), as every other
// request, where it listed no target with 200.
func TestTokenWithNoGrantedScope(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/intent/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scope  string
		status int
	}{{"nothing", http.StatusForbidden}, {"deploy", http.StatusOK}} {
		s, err := New(Options{Blueprints: []*ir.Blueprint{bp}, Client: fake.NewClientBuilder().Build(),
			Authenticator: fixedCaller{TokenID: "abcdefghij", Name: "t", Scopes: []string{tc.scope}}})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/v1/targets", nil)
		r.Header.Set("Authorization", "Bearer x")
		s.Handler().ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Errorf("scope %s: GET /v1/targets = %d %s; want %d", tc.scope, w.Code, w.Body, tc.status)
		}
	}
}
