package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
)

// packTarget is the intent pack's target.
func packTarget(t *testing.T) *Target {
	t.Helper()
	bp, err := compiler.CompileFile("../packs/intent/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := NewTarget(bp)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestValidate(t *testing.T) {
	tg := packTarget(t)
	for _, tc := range []struct {
		name, body string
		want       Intent
		status     int
		fields     []string
		detail     string
	}{
		{name: "defaults filled", body: `{"target": "app", "repository": "myorg/payments-api"}`,
			want: Intent{"repository": "myorg/payments-api", "environment": "staging"}},
		{name: "every field", body: `{"repository": "a/b", "environment": "prod", "version": "1.2", "replicas": 3}`,
			want: Intent{"repository": "a/b", "environment": "prod", "version": "1.2", "replicas": int64(3)}},
		{name: "an integer written as 2.0", body: `{"repository": "a/b", "replicas": 2.0}`,
			want: Intent{"repository": "a/b", "environment": "staging", "replicas": int64(2)}},
		{name: "empty", body: ``, status: 400, detail: "empty"},
		{name: "not JSON", body: `{"repository": `, status: 400, detail: "not JSON"},
		{name: "a list", body: `[1]`, status: 400, detail: "a list, not a JSON object"},
		{name: "two values", body: `{"repository": "a/b"} {}`, status: 400, detail: "more than one"},
		{name: "duplicate key", body: `{"repository": "a/b", "repository": "c/d"}`, status: 400, fields: []string{"repository"}, detail: `"repository" is in the body twice`},
		{name: "unknown field", body: `{"repository": "a/b", "replica": 2}`, status: 422, fields: []string{"replica"}, detail: "did you mean replicas"},
		{name: "spec is not a field", body: `{"spec": {"repository": "a/b"}}`, status: 422, fields: []string{"repository", "spec"}, detail: "unknown field \"spec\""},
		{name: "wrong types", body: `{"repository": 7, "replicas": "two", "version": null}`, status: 422, fields: []string{"replicas", "repository", "version"}, detail: "replicas must be an integer, not the string \"two\""},
		{name: "a fraction", body: `{"repository": "a/b", "replicas": 2.5}`, status: 422, fields: []string{"replicas"}},
		{name: "missing required", body: `{}`, status: 422, fields: []string{"repository"}, detail: "repository is required: The repository the app is built from"},
		{name: "pattern", body: `{"repository": "My Org/x"}`, status: 422, fields: []string{"repository"}, detail: "does not match the pattern"},
		{name: "environment not mapped", body: `{"repository": "a/b", "environment": "dev"}`, status: 422, fields: []string{"environment"}, detail: `environment "dev" is not one of prod, staging`},
		{name: "a NUL", body: `{"repository": "a/b", "version": "1.0\u0000; rm -rf /"}`, status: 422, fields: []string{"version"}, detail: `version holds a NUL character (\u0000)`},
		{name: "another target", body: `{"target": "db", "repository": "a/b"}`, status: 422, fields: []string{"target"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, p := tg.Validate([]byte(tc.body))
			if tc.status == 0 {
				if p != nil {
					t.Fatalf("Validate: %+v", p)
				}
				if diff := cmp.Diff(tc.want, in); diff != "" {
					t.Errorf("intent (-want +got):\n%s", diff)
				}
				return
			}
			if p == nil {
				t.Fatalf("Validate accepted it: %v", in)
			}
			if p.Status != tc.status || p.Fix == "" || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("problem %+v; want status %d, a fix, and detail containing %q", p, tc.status, tc.detail)
			}
			var fields []string
			for _, f := range p.Fields {
				fields = append(fields, f.Field)
			}
			if diff := cmp.Diff(tc.fields, fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOtherTarget: an intent whose target field names another target is
// pointed there when the gateway serves that one, and otherwise told the
// name probably meant, never a target that does not exist.
func TestOtherTarget(t *testing.T) {
	tg := packTarget(t)
	for _, tc := range []struct {
		served     []string
		body, want string
	}{
		{nil, `{"target": "ap", "repository": "a/b"}`, `no target of that name is served: did you mean app? Write "app", or leave target out`},
		{[]string{"app", "db"}, `{"target": "db", "repository": "a/b"}`, "but this is target app: send it to /v1/targets/db/intents, or leave target out"},
		{[]string{"app", "database"}, `{"target": "databse", "repository": "a/b"}`, "did you mean database? Send it to /v1/targets/database/intents"},
		{nil, `{"target": "zzzzzz", "repository": "a/b"}`, "no target of that name is served (it serves app): leave target out"},
		{nil, `{"target": 7, "repository": "a/b"}`, "target is the number 7"},
	} {
		tg.served = map[string]bool{}
		for _, n := range tc.served {
			tg.served[n] = true
		}
		_, p := tg.Validate([]byte(tc.body))
		if p == nil || len(p.Fields) != 1 || !strings.Contains(p.Fields[0].Message, tc.want) {
			t.Errorf("%s served %v: %+v; want %q", tc.body, tc.served, p, tc.want)
		}
	}
}

func TestMapAndBack(t *testing.T) {
	tg := packTarget(t)
	in, p := tg.Validate([]byte(`{"repository": "MyOrg/Payments-API", "environment": "prod", "replicas": 2}`))
	if p == nil {
		t.Fatal("the pattern should refuse upper case")
	}
	in, p = tg.Validate([]byte(`{"repository": "myorg/payments.api", "environment": "prod", "replicas": 2}`))
	if p != nil {
		t.Fatal(p)
	}
	name, p := tg.NameFrom(in)
	if p != nil || name != "myorg-payments-api" {
		t.Fatalf("NameFrom = %q, %v", name, p)
	}
	obj := tg.Map(in, name, "ci")
	want := map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "App",
		"metadata": map[string]any{"name": "myorg-payments-api", "namespace": "apps-prod",
			"labels": map[string]any{LabelTarget: "app", LabelCaller: "ci"}},
		"spec": map[string]any{"repository": "myorg/payments.api", "replicas": int64(2)},
	}
	if diff := cmp.Diff(want, obj.Object); diff != "" {
		t.Errorf("CR (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(in, tg.IntentOf(obj)); diff != "" {
		t.Errorf("IntentOf (-want +got):\n%s", diff)
	}
}

// TestViewStates reads views of custom resources in each state, and checks
// that a child's failure names the intent field, never a path.
func TestViewStates(t *testing.T) {
	tg := packTarget(t)
	cr := func(gen int64, status map[string]any) *unstructured.Unstructured {
		u := tg.Map(Intent{"repository": "myorg/payments-api", "environment": "staging", "version": "1.0+build.5", "replicas": int64(1)}, "myorg-payments-api", "ci")
		u.SetGeneration(gen)
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	cond := func(typ, status, msg string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": "R", "message": msg, "lastTransitionTime": "2026-01-01T00:00:00Z"}
	}
	v := tg.View(cr(1, nil))
	if v.State != StateProgressing || v.Ready || len(v.View) != 1 {
		t.Errorf("fresh: %+v", v)
	}
	if v.View["running"] != "myorg/payments-api 1.0+build.5 in staging" {
		t.Errorf("view.running = %v", v.View["running"])
	}
	v = tg.View(cr(1, map[string]any{"observedGeneration": int64(1), "phase": "Running", "url": "http://x", "readyReplicas": int64(1),
		"conditions": []any{cond("Ready", "True", "ok"), cond("Degraded", "False", "")}}))
	if v.State != StateReady || !v.Ready || v.View["url"] != "http://x" || v.View["replicas"] != int64(1) {
		t.Errorf("ready: %+v", v)
	}
	degraded := `child "remote.deployment": Deployment.apps "myorg-payments-api" is invalid: metadata.labels: Invalid value: "1.0+build.5": a valid label must be an empty string or consist of alphanumeric characters
remote reconciler: calling http://127.0.0.1:8090/reconcile: connection refused
blueprint.yaml:12:5: emit.status.x: ${self.spec.replicas + 1}: no such overload on spec.replicas`
	v = tg.View(cr(1, map[string]any{"observedGeneration": int64(1), "conditions": []any{cond("Ready", "False", "see Degraded"), cond("Degraded", "True", degraded)}}))
	if v.State != StateFailed || len(v.Problems) != 3 {
		t.Fatalf("failed: %+v", v)
	}
	if p := v.Problems[0]; !cmp.Equal(p.Fields, []string{"version"}) || !strings.HasPrefix(p.Message, `deployment failed: version "1.0+build.5" was refused: a valid label must be`) {
		t.Errorf("problem 0: %+v", p)
	}
	if p := v.Problems[1]; !cmp.Equal(p.Fields, []string{"replicas", "repository", "version"}) {
		t.Errorf("problem 1: %+v", p)
	}
	b, _ := json.Marshal(v)
	for _, leak := range []string{"spec.", "metadata.", "blueprint.yaml", "${", "Deployment.apps"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("the view leaks %q: %s", leak, b)
		}
	}
	if !strings.Contains(v.Problems[2].Message, "replicas") {
		t.Errorf("problem 2 should name replicas instead of its path: %+v", v.Problems[2])
	}
}

// TestOpenAPI validates the document generated for the pack's target with
// kin-openapi.
func TestOpenAPI(t *testing.T) {
	tg := packTarget(t)
	doc := OpenAPI([]*Target{tg})
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3: %v", err)
	}
	intent := loaded.Components.Schemas["AppIntent"].Value
	if intent == nil || !cmp.Equal(intent.Required, []string{"repository"}) || intent.Properties["replicas"].Value.Type.Slice()[0] != "integer" {
		t.Fatalf("AppIntent: %+v", intent)
	}
	if env := intent.Properties["environment"].Value; len(env.Enum) != 2 {
		t.Errorf("environment enum %v", env.Enum)
	}
	// The schema accepts the pack's intent and refuses a misspelt field,
	// as the gateway does.
	var good, bad any
	_ = json.Unmarshal([]byte(`{"target": "app", "repository": "myorg/payments-api", "environment": "staging"}`), &good)
	_ = json.Unmarshal([]byte(`{"repository": "myorg/payments-api", "replica": 2}`), &bad)
	if err := intent.VisitJSON(good); err != nil {
		t.Errorf("the pack's intent does not validate: %v", err)
	}
	if err := intent.VisitJSON(bad); err == nil {
		t.Error("an unknown field validates")
	}
	view := loaded.Components.Schemas["AppView"].Value.Properties["view"].Value
	if view.Properties["replicas"].Value.Type.Slice()[0] != "integer" || view.Properties["running"].Value.Type.Slice()[0] != "string" {
		t.Errorf("AppView.view: %+v", view.Properties)
	}
	if loaded.Paths.Find("/v1/targets/app/intents/{name}").Put == nil {
		t.Error("no PUT of an intent")
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(1, 2)
	now := testNow
	for i := range 2 {
		if p := l.allow("a", now); p != nil {
			t.Fatalf("request %d refused: %v", i, p)
		}
	}
	p := l.allow("a", now)
	if p == nil || p.Status != http.StatusTooManyRequests || p.RetryAfter <= 0 {
		t.Fatalf("third request: %+v", p)
	}
	if p := l.allow("b", now); p != nil {
		t.Errorf("another token refused: %v", p)
	}
}

func TestMakeName(t *testing.T) {
	for in, want := range map[string]string{"myorg/payments-api": "myorg-payments-api", "A__B..c": "a-b-c", "--x--": "x", "@@": ""} {
		if got := MakeName(in); got != want {
			t.Errorf("MakeName(%q) = %q; want %q", in, got, want)
		}
	}
}

var _ = ir.VerbGet

var testNow = mustTime("2026-01-01T00:00:00Z")
