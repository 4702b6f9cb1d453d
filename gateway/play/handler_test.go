package play_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/gateway/play"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/simulate"
)

// TestHandler plays over HTTP with the caller's scopes: the stages are
// those inrun serve play prints, a refusal is an answer (not an error
// status), and who may not use the target cannot play it.
func TestHandler(t *testing.T) {
	bp := packWithReconciler(t)
	scopes := map[string][]string{"deploy-token": {"deploy"}, "idle-token": {"nothing"}}
	h := play.NewHandler(play.HandlerOptions{
		Blueprints: []*ir.Blueprint{bp},
		Authenticate: func(r *http.Request) (*gateway.Caller, *gateway.Problem) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if s, ok := scopes[tok]; ok {
				return &gateway.Caller{TokenID: tok, Name: tok, Scopes: s}, nil
			}
			return nil, &gateway.Problem{Status: 401, Title: "Unauthorized", Code: gateway.CodeUnauthenticated, Detail: "no token"}
		},
	})
	mux := http.NewServeMux()
	mux.Handle(play.HandlerPattern, h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(path, token, body string) (int, http.Header, play.Answer, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var a play.Answer
		_ = json.Unmarshal(raw, &a)
		return res.StatusCode, res.Header, a, string(raw)
	}

	intent := `{"repository": "myorg/payments-api"}`
	status, _, a, raw := post("/v1/targets/app/play", "deploy-token", intent)
	if status != 200 || !a.Accepted || len(a.Stages) != 5 || a.Problem != nil {
		t.Fatalf("an accepted play: %d %s", status, raw)
	}
	var joined strings.Builder
	for i, s := range a.Stages {
		if i > 0 {
			joined.WriteString("\n")
		}
		fmt.Fprintf(&joined, "== %s\n%s", s.Title, s.Text)
	}
	var printed bytes.Buffer
	if err := play.Run(context.Background(), play.Options{Blueprint: bp, Intent: []byte(intent), Scopes: []string{"deploy"}, Out: &printed}); err != nil {
		t.Fatal(err)
	}
	if joined.String() != printed.String() {
		t.Errorf("the stages over HTTP differ from inrun serve play's:\n%s\n---\n%s", joined.String(), printed.String())
	}
	if !strings.Contains(a.Stages[4].Text, `"running": "myorg/payments-api latest in staging"`) || !strings.HasPrefix(a.Stages[0].Title, "1. authenticate: a play token, scopes deploy") {
		t.Errorf("stages: %+v", a.Stages)
	}

	// The caller's own scopes: deploy may not create in prod.
	status, _, a, raw = post("/v1/targets/app/play", "deploy-token", `{"repository": "myorg/web", "environment": "prod"}`)
	if status != 200 || a.Accepted || a.Problem == nil || a.Problem.Code != gateway.CodeOutOfScope || len(a.Stages) != 2 {
		t.Errorf("a play out of scope: %d %s", status, raw)
	}
	status, _, a, raw = post("/v1/targets/app/play", "deploy-token", `{"repository": "myorg/web", "replica": 2}`)
	if status != 200 || a.Accepted || a.Problem == nil || len(a.Problem.Fields) != 1 || a.Problem.Fields[0].Field != "replica" {
		t.Errorf("a play with an unknown field: %d %s", status, raw)
	}

	for _, tc := range []struct {
		name, path, token string
		status            int
		code              string
	}{
		{"no token", "/v1/targets/app/play", "", 401, gateway.CodeUnauthenticated},
		{"a token with no grant", "/v1/targets/app/play", "idle-token", 403, gateway.CodeOutOfScope},
		{"an unknown target", "/v1/targets/db/play", "deploy-token", 404, gateway.CodeUnknownTarget},
	} {
		status, header, _, raw := post(tc.path, tc.token, intent)
		var p gateway.Problem
		_ = json.Unmarshal([]byte(raw), &p)
		if status != tc.status || p.Code != tc.code || header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s %s", tc.name, status, header.Get("Content-Type"), raw)
		}
		if status == 401 && header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}
}

// packWithReconciler is the intent pack's Blueprint, calling its Python
// reconciler started on a free port until the test ends.
func packWithReconciler(t *testing.T) *ir.Blueprint {
	t.Helper()
	bp, err := compiler.CompileFile(filepath.Join(packDir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	url := fmt.Sprintf("http://127.0.0.1:%d/reconcile", port)
	rec := &simulate.Reconciler{Command: []string{"python3", "reconciler/reconciler.py"}, Env: map[string]string{"PORT": fmt.Sprint(port)}}
	proc, err := rec.Start(context.Background(), simulate.StartOptions{URL: url, BaseDir: packDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.Stop() })
	return bp.WithRemoteURL(url)
}
