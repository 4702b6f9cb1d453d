package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

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
