package sdk_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inrun/inrun/sdk"
)

const header = `"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileResult"`

func TestDecodeResultValid(t *testing.T) {
	res, err := sdk.DecodeResult([]byte(`{`+header+`,
		"status": {"url": "http://web", "replicas": 2, "ratio": 0.5},
		"labels": {"app.kubernetes.io/name": "web", "tier": ""},
		"annotations": {"example.com/note": "anything at all"},
		"resources": [
			{"id": "web", "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}},
			{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "other"}}
		],
		"conditions": [{"type": "DatabaseReady", "status": "True", "reason": "Provisioned", "message": "db is up"}],
		"events": [{"type": "Normal", "reason": "Provisioned", "message": "created the database"}],
		"requeueAfter": "1m30s"
	}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Status["replicas"]; got != int64(2) {
		t.Errorf("status.replicas = %#v, want int64(2): integers must decode as Kubernetes' unstructured objects hold them", got)
	}
	if got := res.Status["ratio"]; got != 0.5 {
		t.Errorf("status.ratio = %#v, want 0.5", got)
	}
	if len(res.Resources) != 2 || res.Resources[0].ID != "web" || res.Resources[1].ID != "" {
		t.Fatalf("resources = %+v", res.Resources)
	}
	if _, ok := res.Resources[0].Object["id"]; ok {
		t.Error("the id stayed in the object: it would be applied to the cluster")
	}
	if got, want := res.Resources[1].Ref().String(), "Service other/web"; got != want {
		t.Errorf("Ref = %q, want %q", got, want)
	}
	if got, want := res.Resources[0].Ref().String(), "Deployment.apps web"; got != want {
		t.Errorf("Ref = %q, want %q", got, want)
	}
	if time.Duration(res.RequeueAfter) != 90*time.Second {
		t.Errorf("requeueAfter = %v, want 1m30s", res.RequeueAfter)
	}
	if len(res.Conditions) != 1 || res.Conditions[0].Reason != "Provisioned" || len(res.Events) != 1 {
		t.Errorf("conditions = %+v, events = %+v", res.Conditions, res.Events)
	}
}

func TestDecodeResultDurations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{`"30s"`, 30 * time.Second},
		{`30`, 30 * time.Second},
		{`0.5`, 500 * time.Millisecond},
		{`"0s"`, 0},
	} {
		res, err := sdk.DecodeResult([]byte(`{`+header+`, "requeueAfter": `+tc.in+`}`), false)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got := time.Duration(res.RequeueAfter); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestDecodeErrors lists, for each bad document, every message it must
// produce, in order: the messages are what people read in conditions and
// Events, so they are part of the contract.
func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		request    bool
		finalizing bool
		in         string
		want       []string
	}{{
		name: "several mistakes at once",
		in: `{` + header + `,
			"statuz": {},
			"resources": [
				{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}},
				{"apiVersion": "v1", "metadata": {"name": "b"}},
				{"apiVersion": "v1", "kind": "Service", "metadata": {}}
			],
			"events": [{"type": "Info", "reason": "Hello"}],
			"requeueAfter": "5 minutes"
		}`,
		want: []string{
			`resources[1].kind is required (every object needs apiVersion, kind and metadata.name)`,
			`resources[2].metadata.name is required (every object needs apiVersion, kind and metadata.name)`,
			`events[0].type "Info" is not valid (use Normal or Warning)`,
			`requeueAfter "5 minutes" is not a duration (use a Go duration such as "30s" or "1m30s", or a number of seconds)`,
			`statuz is not a field of a ReconcileResult (did you mean status?)`,
		},
	}, {
		name: "not JSON",
		in:   "{\n  \"apiVersion\": \"inrun.dev/reconciler/v1alpha1\",\n  kind: ReconcileResult\n}",
		want: []string{`the reply is not valid JSON: invalid character 'k' looking for beginning of object key string at line 3, column 3 (send one JSON object)`},
	}, {
		name: "truncated",
		in:   `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "status": {`,
		want: []string{`the reply is not valid JSON: it ends too early (send one JSON object)`},
	}, {
		name: "empty",
		in:   "  \n",
		want: []string{`the reply is empty (send one JSON object)`},
	}, {
		name: "two documents",
		in:   `{` + header + `} {}`,
		want: []string{`the reply is not valid JSON: invalid character '{' after top-level value at line 1, column 76 (send one JSON object)`},
	}, {
		name: "not an object",
		in:   `[]`,
		want: []string{`must be an object, not an array`},
	}, {
		name: "missing header",
		in:   `{}`,
		want: []string{
			`apiVersion is required (use inrun.dev/reconciler/v1alpha1)`,
			`kind is required (use ReconcileResult)`,
		},
	}, {
		name: "unsupported version stops there",
		in:   `{"apiVersion": "inrun.dev/reconciler/v2", "kind": "ReconcileResult", "resources": "nope", "statuz": 1, "whatever": 1, "done": true}`,
		want: []string{
			`apiVersion "inrun.dev/reconciler/v2" is not supported (this runtime speaks inrun.dev/reconciler/v1alpha1)`,
		},
	}, {
		name:    "a request of another version stops there too",
		request: true,
		in:      `{"apiVersion": "inrun.dev/reconciler/v2", "kind": "Request", "object": [], "stepz": 1}`,
		want: []string{
			`apiVersion "inrun.dev/reconciler/v2" is not supported (this runtime speaks inrun.dev/reconciler/v1alpha1)`,
		},
	}, {
		name: "a request where a Result belongs",
		in:   `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileRequest"}`,
		want: []string{`kind "ReconcileRequest" is not valid here (use ReconcileResult)`},
	}, {
		name: "wrong types, once each",
		in: `{` + header + `, "status": [], "labels": {"a": 1}, "resources": {}, "conditions": [3],
			"events": [{"type": true}], "requeueAfter": true, "done": "yes"}`,
		want: []string{
			`status must be an object, not an array`,
			`labels.a must be a string, not a number`,
			`resources must be an array, not an object`,
			`conditions[0] must be an object, not a number`,
			`events[0].type must be a string, not a boolean`,
			`events[0].reason is required (use a CamelCase word such as Provisioning)`,
			`requeueAfter must be a string or a number, not a boolean (use a Go duration such as "30s" or "1m30s", or a number of seconds)`,
			`done must be a boolean (true or false), not a string`,
		},
	}, {
		name: "a key given twice",
		in:   `{` + header + `, "status": {"a": 1, "a": 2}}`,
		want: []string{`status.a is given twice (give each field once)`},
	}, {
		name: "resources",
		in: `{` + header + `, "resources": [
			{"id": "web", "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
			{"id": "web", "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}},
			{"id": "a b", "apiVersion": "Apps/V1", "kind": "deployment", "metadata": {"name": "x", "labels": {"n": 1}}},
			{"id": 7, "apiVersion": "v1", "kind": "Service", "metadata": "svc"},
			"svc"
		]}`,
		want: []string{
			`resources[1].id "web" is also the id of resources[0] (give each resource its own id)`,
			`resources[1] is Deployment.apps web again, as resources[0] (return each object once)`,
			`resources[2].id "a b" is not a valid id (use up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
			`resources[2].apiVersion "Apps/V1" is not an API version (use "v1" or "group/version", e.g. apps/v1)`,
			`resources[2].kind "deployment" is not a kind (kinds are CamelCase, e.g. Deployment)`,
			`resources[2].metadata.labels.n must be a string, not a number`,
			`resources[3].id must be a string, not a number`,
			`resources[3].metadata must be an object, not a string`,
			`resources[4] must be an object, not a string`,
		},
	}, {
		name: "status, labels and annotations",
		in: `{` + header + `, "status": {"conditions": [], "observedGeneration": 1, "ok": true},
			"labels": {"a b": "x", "inrun.dev/owner": "me", "team": "not ok!"},
			"annotations": {"example.com/": "x", "fine": "any value at all, even this"}}`,
		want: []string{
			`status.conditions is written by the runtime (return conditions in the Result's conditions field)`,
			`status.observedGeneration is written by the runtime (leave it out)`,
			`labels["a b"] is not a valid key (use a name of up to 63 letters, digits, '-', '_' or '.', optionally prefixed by a DNS subdomain and a slash, e.g. example.com/team)`,
			`labels["inrun.dev/owner"] is reserved for the runtime (use a key outside inrun.dev/)`,
			`labels.team "not ok!" is not a valid label value (use up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
			`annotations["example.com/"] is not a valid key (use a name of up to 63 letters, digits, '-', '_' or '.', optionally prefixed by a DNS subdomain and a slash, e.g. example.com/team)`,
		},
	}, {
		name: "conditions and events",
		in: `{` + header + `,
			"conditions": [
				{"type": "Ready", "status": "True", "reason": "Fine"},
				{"type": "DatabaseReady", "status": "yes", "reason": "not a reason", "lastTransitionTime": "2026-01-01T00:00:00Z"},
				{"type": "DatabaseReady", "status": "False", "reason": "Down"},
				{"status": "Unknown", "reason": "X"}
			],
			"events": [{"type": "Warning", "reason": "Failed", "note": "x"}, {"reason": "Hi", "message": "` + strings.Repeat("x", 1025) + `"}]}`,
		want: []string{
			`conditions[0].type "Ready" is the runtime's own condition (use another type; the runtime sets Ready, Progressing and Degraded)`,
			`conditions[1].lastTransitionTime is not a field of a condition (the runtime sets it when the status changes)`,
			`conditions[1].status "yes" is not valid (use True, False or Unknown)`,
			`conditions[1].reason "not a reason" is not a reason (use a CamelCase word such as Provisioning)`,
			`conditions[2].type "DatabaseReady" is also the type of conditions[1] (give each condition its own type)`,
			`conditions[3].type is required (a CamelCase condition type such as DatabaseReady)`,
			`events[0].note is not a field of an event (use message)`,
			`events[1].type is required (use Normal or Warning)`,
			`events[1].message is 1025 bytes long (at most 1024)`,
		},
	}, {
		name: "negative durations",
		in:   `{` + header + `, "requeueAfter": "-5s"}`,
		want: []string{`requeueAfter "-5s" is negative (use a Go duration such as "30s" or "1m30s", or a number of seconds)`},
	}, {
		name: "done without finalizing",
		in:   `{` + header + `, "done": true}`,
		want: []string{`done is only valid in reply to a finalizing request (leave it out, or false)`},
	}, {
		name:       "resources while finalizing",
		finalizing: true,
		in:         `{` + header + `, "done": true, "resources": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}`,
		want:       []string{`resources must be empty in reply to a finalizing request (the custom resource is being deleted; clean up, then answer done: true)`},
	}, {
		name:    "request: every problem",
		request: true,
		in: `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileRequest", "args": [],
			"observed": [{"id": "web", "kind": "Deployment", "metadata": {"name": "web"}}], "finalising": true}`,
		want: []string{
			`object is required (the custom resource being reconciled)`,
			`args must be an object, not an array`,
			`observed[0].apiVersion is required (every object needs apiVersion, kind and metadata.name)`,
			`finalising is not a field of a ReconcileRequest (did you mean finalizing?)`,
		},
	}, {
		name:    "request: not JSON",
		request: true,
		in:      `apiVersion: x`,
		want:    []string{`the request is not valid JSON: invalid character 'a' looking for beginning of value at line 1, column 1 (send one JSON object)`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.request {
				_, err = sdk.DecodeRequest([]byte(tc.in))
			} else {
				_, err = sdk.DecodeResult([]byte(tc.in), tc.finalizing)
			}
			var list sdk.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("got %v, want an ErrorList", err)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if want := strings.Join(tc.want, "; "); err.Error() != want {
				t.Errorf("Error() = %q, want the problems joined by \"; \"", err.Error())
			}
		})
	}
}

func TestDecodeRequest(t *testing.T) {
	req, err := sdk.DecodeRequest([]byte(`{
		"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileRequest",
		"object": {"apiVersion": "example.inrun.dev/v1", "kind": "WebApp", "metadata": {"name": "shop", "namespace": "default"}, "spec": {"replicas": 3}},
		"observed": [{"id": "web", "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"}, "status": {"readyReplicas": 3}}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Args == nil || req.Finalizing {
		t.Errorf("args = %v, finalizing = %v: absent args must read as an empty object", req.Args, req.Finalizing)
	}
	dep := req.ObservedByID("web")
	if got := dep["status"].(map[string]any)["readyReplicas"]; got != int64(3) {
		t.Errorf("observed web readyReplicas = %#v", got)
	}
	if req.ObservedByID("nope") != nil {
		t.Error("ObservedByID of an unknown id is not nil")
	}
}

// TestValidateGo checks that a Result built in Go is held to the rules a
// reply is, plus the one only Go can break: an id in the object map.
func TestValidateGo(t *testing.T) {
	res := &sdk.Result{
		APIVersion: sdk.APIVersion, Kind: sdk.KindResult,
		Resources:    []sdk.Resource{{ID: "x", Object: map[string]any{"id": "y", "apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}},
		Events:       []sdk.Event{{Type: "Normal"}},
		RequeueAfter: sdk.Duration(-time.Second),
	}
	want := `resources[0].id is set in Object["id"] (set Resource.ID instead); events[0].reason is required (use a CamelCase word such as Provisioning); requeueAfter -1s is negative (use a Go duration such as "30s" or "1m30s", or a number of seconds)`
	if err := res.Validate(false); err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestNewResource(t *testing.T) {
	type meta struct {
		Name string `json:"name"`
	}
	type object struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
		Metadata   meta   `json:"metadata"`
		Replicas   int    `json:"replicas"`
	}
	r, err := sdk.NewResource("web", object{APIVersion: "apps/v1", Kind: "Deployment", Metadata: meta{Name: "web"}, Replicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Object["replicas"] != int64(2) || r.Name() != "web" || r.ID != "web" {
		t.Errorf("got %+v", r)
	}
	_, err = sdk.NewResource("", object{Metadata: meta{Name: "web"}})
	if want := "sdk.NewResource: apiVersion is required (every object needs apiVersion, kind and metadata.name); kind is required (every object needs apiVersion, kind and metadata.name)"; err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// TestRoundTrip checks that what Go writes, the strict reader reads back.
func TestRoundTrip(t *testing.T) {
	in := &sdk.Result{
		APIVersion: sdk.APIVersion, Kind: sdk.KindResult,
		Status:       map[string]any{"phase": "Running"},
		Resources:    []sdk.Resource{{ID: "cm", Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}},
		RequeueAfter: sdk.Duration(2 * time.Minute),
	}
	raw, err := jsonMarshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sdk.DecodeResult(raw, false)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if out.Resources[0].ID != "cm" || time.Duration(out.RequeueAfter) != 2*time.Minute || out.Status["phase"] != "Running" {
		t.Errorf("round trip lost something: %s -> %+v", raw, out)
	}
}

// TestResultBounds: what a Result writes into the custom resource and the
// Events it records are bounded, so that a hostile reconciler cannot make
// every status write fail (12,000 conditions) or flood the API server.
func TestResultBounds(t *testing.T) {
	conds := make([]sdk.Condition, 3000)
	for i := range conds {
		conds[i] = sdk.Condition{Type: fmt.Sprintf("Cond%d", i), Status: sdk.ConditionTrue, Reason: "Fine", Message: strings.Repeat("x", 80)}
	}
	events := make([]sdk.Event, sdk.MaxEvents+1)
	for i := range events {
		events[i] = sdk.Event{Type: sdk.EventNormal, Reason: "Step", Message: "done"}
	}
	res := &sdk.Result{APIVersion: sdk.APIVersion, Kind: sdk.KindResult, Conditions: conds, Events: events,
		Annotations: map[string]string{"example.com/blob": strings.Repeat("y", sdk.MaxAnnotationBytes)}}
	err := res.Validate(false)
	for _, want := range []string{"conditions are ", "(3000 conditions)", "annotations are 262160 bytes long", "events has 33 events"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors %v; want %q", err, want)
		}
	}
	res.Conditions, res.Events, res.Annotations = conds[:10], events[:sdk.MaxEvents], map[string]string{"example.com/small": "z"}
	if err := res.Validate(false); err != nil {
		t.Errorf("a Result within the bounds: %v", err)
	}
}
