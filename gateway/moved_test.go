package gateway_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/gateway"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/migrate"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// appV2 is the kind the intent pack's Apps move to in TestKindMoveFollowed,
// served as target app2 with the same fields.
const appV2 = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: app2
schema:
  apiVersion: v1
  group: moved.inrun.dev
  kind: AppV2
  spec:
    repository: string
    version: string
    replicas: integer
serve:
  target: app2
  fields:
    repository: {path: spec.repository, required: true}
    environment: {default: staging}
    version: {path: spec.version}
    replicas: {path: spec.replicas}
  name: {from: repository}
  namespace:
    from: environment
    map: {staging: apps-staging, prod: apps-prod}
  tokens:
    - scope: release
      verbs: [create, get, list, delete]
`

// movingBlueprints compiles the intent pack's App with a kind move of the
// Apps the caller mover made to AppV2, and AppV2's Blueprint.
func movingBlueprints(t *testing.T) (from, to *ir.Blueprint) {
	t.Helper()
	dir := t.TempDir()
	toFile := filepath.Join(dir, "app2.yaml")
	if err := os.WriteFile(toFile, []byte(appV2), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(packDir, "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(data) + `uses:
  - blueprint: ` + toFile + `
migrate:
  to: {apiVersion: moved.inrun.dev/v1, kind: AppV2}
  selection:
    matchLabels: {gateway.inrun.dev/caller: mover}
`
	from, err = compiler.Compile(load.Bytes(filepath.Join(packDir, "moving.yaml"), []byte(src)), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	to, err = compiler.CompileFile(toFile, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return from, to
}

// TestKindMoveFollowed: once inrun migrate moved an intent's App to
// another kind, the old target answers for it with a 308 to the target
// serving that kind, which a caller's HTTP client follows, so that the
// same requests read and change it there; it is never made again as an
// App. A gateway that does not serve the new kind answers 410, saying
// what to do.
func TestKindMoveFollowed(t *testing.T) {
	from, to := movingBlueprints(t)
	e := newEnv(t, func(o *gateway.Options) { o.Blueprints = []*ir.Blueprint{from, to} })
	ctx := context.Background()
	if err := runner.InstallCRDs(ctx, e.cfg, []*ir.Blueprint{to}); err != nil {
		t.Fatal(err)
	}
	tok := e.token(t, "mover", "release")
	const path = "/v1/targets/app/intents/org-moved"
	if r := e.do(t, "PUT", path, tok, map[string]any{"repository": "org/moved", "version": "v1", "replicas": 1}); r.status != http.StatusCreated {
		t.Fatalf("PUT before the move: %d %s", r.status, r.raw)
	}
	k, err := migrate.KindFromBlueprint(from)
	if err != nil {
		t.Fatal(err)
	}
	if _, res, err := k.Apply(ctx, migrate.Options{Client: e.c}); err != nil || res.Moved != 1 {
		t.Fatalf("migrate apply: %+v %v", res, err)
	}
	t.Cleanup(func() {
		moved := e.appV2(t, "apps-staging", "org-moved")
		if moved != nil {
			_ = e.c.Delete(context.Background(), moved)
		}
	})

	// Not followed: the answer says where.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", e.srv.URL+path+"?environment=staging", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusPermanentRedirect || loc != "/v1/targets/app2/intents/org-moved?environment=staging" {
		t.Errorf("GET of a moved intent: %d, Location %q", resp.StatusCode, loc)
	}

	// Followed, as HTTP clients do: read and changed where it is now.
	r := e.do(t, "GET", path, tok, nil)
	if r.status != http.StatusOK || r.body["target"] != "app2" || get(r.body, "intent", "version") != "v1" {
		t.Errorf("GET followed: %d %s", r.status, r.raw)
	}
	r = e.do(t, "PUT", path, tok, map[string]any{"repository": "org/moved", "version": "v2", "replicas": 1})
	if r.status != http.StatusOK {
		t.Errorf("PUT followed: %d %s", r.status, r.raw)
	}
	if moved := e.appV2(t, "apps-staging", "org-moved"); moved == nil || get(moved.Object, "spec", "version") != "v2" {
		t.Errorf("the AppV2 after the PUT: %v", moved)
	}
	if e.app(t, "apps-staging", "org-moved") != nil {
		t.Error("a PUT to the old target made the App again")
	}
	r = e.do(t, "GET", "/v1/targets/app2/intents", tok, nil)
	if items, _ := r.body["items"].([]any); r.status != http.StatusOK || len(items) != 1 {
		t.Errorf("the new target's list: %d %s", r.status, r.raw)
	}

	// A gateway serving the old kind alone: 410, and nothing made.
	alone := newEnv(t, func(o *gateway.Options) { o.Blueprints = []*ir.Blueprint{from} })
	r = alone.do(t, "GET", path, tok, nil)
	if r.status != http.StatusGone || r.body["code"] != gateway.CodeIntentMoved || !strings.Contains(r.raw, "move the serve section") {
		t.Errorf("GET, AppV2 not served: %d %s", r.status, r.raw)
	}
	r = alone.do(t, "PUT", path, tok, map[string]any{"repository": "org/moved", "version": "v3"})
	if r.status != http.StatusGone || e.app(t, "apps-staging", "org-moved") != nil {
		t.Errorf("PUT, AppV2 not served: %d %s", r.status, r.raw)
	}
}

// appV2 reads an AppV2; nil when there is none.
func (e *env) appV2(t testing.TB, ns, name string) *unstructured.Unstructured {
	t.Helper()
	return e.object(t, "moved.inrun.dev/v1", "AppV2", ns, name)
}
