package simulate_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/internal/match"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// tenant is a Blueprint whose remote reconciler, at %s, is sent the
// bearer token of a Secret, and may return a Namespace and a ConfigMap.
const tenant = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: tenant}
schema:
  apiVersion: v1
  group: example.inrun.dev
  kind: Tenant
  spec:
    team: string
reconcile:
  url: %s
  tokenSecret: {name: reconciler-token, namespace: default}
  resources:
    - {apiVersion: v1, kind: Namespace}
    - {apiVersion: v1, kind: ConfigMap}
`

// remoteCase runs the cases of a simulate file, given as YAML, against
// the tenant Blueprint calling url, and returns their results by name.
func remoteCases(t *testing.T, url, cases string) map[string]*simulate.Result {
	t.Helper()
	bp := compileBlueprint(t, "tenant.yaml", []byte(fmt.Sprintf(tenant, url)))
	return runCases(t, bp, cases)
}

func runCases(t *testing.T, bp *ir.Blueprint, cases string) map[string]*simulate.Result {
	t.Helper()
	path := filepath.Join(t.TempDir(), "simulate.yaml")
	if err := os.WriteFile(path, []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := simulate.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := sim.Serve(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	out := map[string]*simulate.Result{}
	for i := range f.Cases {
		out[f.Cases[i].Name] = sim.RunCase(context.Background(), f, &f.Cases[i])
	}
	return out
}

func describe(r *simulate.Result) string {
	return fmt.Sprintf("error %v, failures:\n%s", r.Err, strings.Join(r.Failures, "\n"))
}

// TestBearerToken checks that simulate sends the token of the Secret
// reconcile.tokenSecret names, read from the store as the runtime reads it
// from the cluster, and fails as the runtime does when there is none. It
// used to send no token at all.
func TestBearerToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer s3cr3t" {
			http.Error(w, "want Bearer s3cr3t, got "+got, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"inrun.dev/reconciler/v1alpha1","kind":"ReconcileResult"}`)
	}))
	defer srv.Close()
	res := remoteCases(t, srv.URL, `cases:
  - name: with the Secret
    object: {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    objects:
      - {apiVersion: v1, kind: Secret, metadata: {name: reconciler-token, namespace: default}, stringData: {token: s3cr3t}}
  - name: without it
    object: {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    expect:
      errors: ['reading the reconciler''s token from Secret default/reconciler-token: secrets "reconciler-token" not found']
  - name: without its key
    object: {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    objects:
      - {apiVersion: v1, kind: Secret, metadata: {name: reconciler-token, namespace: default}, stringData: {password: s3cr3t}}
    expect:
      errors: ['Secret default/reconciler-token has no key "token"']
`)
	for name, r := range res {
		if !r.Passed() {
			t.Errorf("case %q: %s", name, describe(r))
		}
	}
}

// TestExpectationsBeforeTheIdlePass checks that a case's expectations hold
// of the state its own passes left, not of the state after the further
// pass that checks idempotence: a reconciler that counts its calls has
// answered one after one pass. That pass still finds it not idempotent.
func TestExpectationsBeforeTheIdlePass(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"inrun.dev/reconciler/v1alpha1","kind":"ReconcileResult","status":{"calls":%d}}`, calls.Add(1))
	}))
	defer srv.Close()
	res := remoteCases(t, srv.URL, `cases:
  - name: one pass
    object: {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    objects:
      - {apiVersion: v1, kind: Secret, metadata: {name: reconciler-token, namespace: default}, stringData: {token: t}}
    passes: 1
    expect:
      status: {calls: 1}
`)["one pass"]
	if res.Err != nil || len(res.Failures) != 1 || !strings.HasPrefix(res.Failures[0], "not idempotent: a further pass wrote again (apply Tenant default/a (status))") {
		t.Errorf("%s\nwant only that the further pass wrote the status again", describe(res))
	}
}

// finalizing answers with a Namespace, which garbage collection cannot
// reach, and a ConfigMap, which it can; and done to finalizing requests.
const finalizing = `reply:
  resources:
    - {id: namespace, apiVersion: v1, kind: Namespace, metadata: {name: tenant-a}}
    - {id: info, apiVersion: v1, kind: ConfigMap, metadata: {name: a-info}, data: {k: v}}
cases:
  - name: one pass is not enough
    object: &o {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    objects: &s
      - {apiVersion: v1, kind: Secret, metadata: {name: reconciler-token, namespace: default}, stringData: {token: t}}
    steps:
      - delete: true
        passes: 1
        expect: {gone: true}
  - name: after one pass the ConfigMap is still there
    object: *o
    objects: *s
    steps:
      - delete: true
        passes: 1
        expect:
          children: [{id: remote.info}]
          absent: [remote.namespace]
  - name: two passes
    object: *o
    objects: *s
    steps:
      - delete: true
        passes: 2
        expect:
          gone: true
          absent: [remote.namespace, remote.info]
`

// TestDeletionTakesPasses checks a deletion that takes two passes: the
// finalizer deletes the Namespace in the first and releases the CR in the
// second, after which its ConfigMap goes. After one pass the CR is still
// there, and the further pass, which finishes the deletion, is no failure
// of idempotence. It used to check the expectations after that pass, and
// call its writes not idempotent.
func TestDeletionTakesPasses(t *testing.T) {
	res := remoteCases(t, "http://127.0.0.1:1/reconcile", finalizing)
	if r := res["one pass is not enough"]; r.Err != nil || len(r.Failures) != 2 ||
		!strings.Contains(r.Failures[0], "expected the CR to be gone, but finalizers [inrun.dev/cleanup] still hold it") ||
		!strings.Contains(r.Failures[1], "the CR was still being deleted after 1 pass, and one more released it") {
		t.Errorf("one pass: %s\nwant the CR still there, and one more pass said to release it", describe(r))
	}
	for _, name := range []string{"after one pass the ConfigMap is still there", "two passes"} {
		if r := res[name]; !r.Passed() {
			t.Errorf("case %q: %s", name, describe(r))
		}
	}
}

// TestProcessExitsDuringTheCase checks that a reconciler process, kept
// for every case, that exits during a case fails it with its exit status
// and last output, whatever the case expects; and that the case after it
// starts a process of its own. It used to pass a case that expected the
// connection refused. The script sets SO_REUSEADDR, as Go's listeners do:
// the first process, exiting with a connection open, leaves the port in
// TIME_WAIT, and the second one's bind would fail now and then.
func TestProcessExitsDuringTheCase(t *testing.T) {
	bp := compileBlueprint(t, "tenant.yaml", []byte(fmt.Sprintf(tenant, "http://127.0.0.1:1/reconcile")))
	r := &simulate.Reconciler{}
	onPort(t, r)
	res := runCases(t, bp, fmt.Sprintf(`reconciler:
  command: [python3, -c, "import os,socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', int(os.environ['PORT']))); s.listen(); c,_=s.accept(); print('crashing on purpose', flush=True); sys.exit(3)"]
  url: %s
  env: {PORT: "%s"}
cases:
  - name: expects the refusal
    object: {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    passes: 1
    expect: {errors: ["connection"]}
  - name: the next case
    object: {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    passes: 1
    expect: {errors: ["connection"]}
`, r.URL, r.Env["PORT"]))
	for name, r := range res {
		if r.Err == nil || !strings.Contains(r.Err.Error(), "exited during the case: exit status 3; its last output:\n    crashing on purpose") {
			t.Errorf("case %q: %s\nwant it failed with the exit status and the last output", name, describe(r))
		}
	}
}

// TestReplyStepWithoutWorkflow checks that a recorded reply with a step,
// for a Blueprint without reconcile.workflow, is refused with the file's
// other mistakes, before any case runs, at its line: the runtime refuses
// it, as no request has a step. It used to fail only the case that ran it.
func TestReplyStepWithoutWorkflow(t *testing.T) {
	bp := compileBlueprint(t, "tenant.yaml", []byte(fmt.Sprintf(tenant, "http://127.0.0.1:1/reconcile")))
	f, sim, got := checkFile(t, bp, `reply:
  step: {phase: Succeeded}
  resources: [{apiVersion: v1, kind: Secret, metadata: {name: s}}]
cases:
  - name: a
    object: {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    reply: {step: {phase: Running}}
    steps:
      - patch: {spec: {team: dev}}
        reply:
          step: {phase: Failed}
      - delete: true
`)

	for _, want := range []string{
		"simulate.yaml:2:3: E0005 reply: step is only valid in reply to a request with a step, and this Blueprint declares no reconcile.workflow",
		"simulate.yaml:3:32: E0005 reply: resources[0] is of kind v1 Secret, not a kind reconcile.resources declares",
		`simulate.yaml:7:13: E0005 case "a": reply: step is only valid`,
		`simulate.yaml:11:11: E0005 case "a": steps[0].reply: step is only valid`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CheckFile = %s\nwant %q", got, want)
		}
	}
	if res := sim.RunCase(context.Background(), f, &f.Cases[0]); res.Err == nil || !strings.Contains(res.Err.Error(), "reply: step is only valid") {
		t.Errorf("RunCase: %s\nwant the step refused before the case ran", describe(res))
	}
}

// TestDiffShowsWhatIsThere checks that a !contains that matches nothing
// is shown against the whole list: it used to show as an empty list,
// hiding the conditions there are.
func TestDiffShowsWhatIsThere(t *testing.T) {
	cr := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "Waiting"},
			map[string]any{"type": "Progressing", "status": "True"},
		},
	}}}
	out := &simulate.Outcome{CR: cr, Reports: []*reconciler.Report{{}}}
	exp := simulate.Expectation{Status: map[string]any{
		"conditions": match.Contains{map[string]any{"type": "Degraded", "status": "True"}},
	}}
	got := strings.Join(simulate.Check(out, exp), "\n")
	if !strings.Contains(got, `"Ready"`) || !strings.Contains(got, `"Waiting"`) || !strings.Contains(got, `"Progressing"`) {
		t.Errorf("Check = %s\nwant the conditions there are shown", got)
	}
}

// TestEventsAndMetadata checks expect.events and expect.metadata: the
// Events a reconciler's Result asks for, and the labels and annotations it
// sets on the CR, as the runtime records and writes them.
func TestEventsAndMetadata(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"inrun.dev/reconciler/v1alpha1","kind":"ReconcileResult",
		  "labels":{"tenant.example.com/tier":"gold"},"annotations":{"tenant.example.com/owner":"ops"},
		  "events":[{"type":"Normal","reason":"Provisioned","message":"tenant ready"}]}`)
	}))
	defer srv.Close()
	res := remoteCases(t, srv.URL, `cases:
  - name: held
    object: &o {apiVersion: example.inrun.dev/v1, kind: Tenant, metadata: {name: a}, spec: {team: ops}}
    objects: &s
      - {apiVersion: v1, kind: Secret, metadata: {name: reconciler-token, namespace: default}, stringData: {token: t}}
    expect:
      metadata:
        labels: {tenant.example.com/tier: gold}
        annotations: {tenant.example.com/owner: ops}
      # Each pass's call asks for the Event; a series is one Event.
      events: [{type: Normal, reason: Provisioned, message: tenant ready}]
  - name: differs
    object: *o
    objects: *s
    expect:
      metadata: {labels: {tenant.example.com/tier: silver}}
      events: !contains [{type: Warning, reason: Provisioned}]
`)
	if r := res["held"]; !r.Passed() {
		t.Errorf("held: %s", describe(r))
	}
	r := res["differs"]
	if r.Passed() || len(r.Failures) != 2 || !strings.Contains(r.Failures[0], `"silver"`) || !strings.Contains(r.Failures[1], "events differ") || !strings.Contains(r.Failures[1], `"Provisioned"`) {
		t.Errorf("differs: want the metadata and the events named: %s", describe(r))
	}
}

// TestReplyNextNamesAStep checks that a recorded reply's step.next that
// names no step of the workflow is refused up front, at the reply's step,
// as the runtime would refuse the reply: a file's, a case's and a step's.
func TestReplyNextNamesAStep(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/workflow/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, got := checkFile(t, bp, `reply:
  step: {next: Chrage}
cases:
  - name: a
    object: {apiVersion: example.inrun.dev/v1, kind: Order, metadata: {name: a}, spec: {item: tea}}
    reply: {step: {next: Archive}}
    steps:
      - patch: {spec: {item: cake}}
        reply:
          step: {next: Ship}
`)

	for _, want := range []string{
		`simulate.yaml:2:10: E0008 reply: step.next "Chrage" is not a step of reconcile.workflow (Reserve, Charge, Ship); did you mean Charge?`,
		`simulate.yaml:6:20: E0008 case "a": reply: step.next "Archive" is not a step of reconcile.workflow (Reserve, Charge, Ship)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CheckFile = %s\nwant %q", got, want)
		}
	}
	if strings.Contains(got, `"Ship"`) {
		t.Errorf("CheckFile = %s\nrefuses next: Ship, a step", got)
	}
}

// TestWorkflowStatusFields checks that the fields of status.workflow and
// of the conditions, which only the runtime writes, are checked up front
// below the top level too: a misspelt one with !absent would hold
// whatever the runtime wrote.
func TestWorkflowStatusFields(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/workflow/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, got := checkFile(t, bp, `cases:
  - name: a
    object: {apiVersion: example.inrun.dev/v1, kind: Order, metadata: {name: a}, spec: {item: tea}}
    expect:
      status:
        workflow:
          phase: Running
          sumary: !absent
          steps: !contains [{name: Reserve, atempts: 1}]
          startTime: !absent
        conditions: !contains [{type: Ready, reson: Progressing}]
`)
	for _, want := range []string{
		`simulate.yaml:8:11: E0002 case "a": expect.status.workflow.sumary is no field of the Order's status; did you mean summary?`,
		`simulate.yaml:9:45: E0002 case "a": expect.status.workflow.steps[0].atempts is no field of the Order's status; did you mean attempts?`,
		`simulate.yaml:11:46: E0002 case "a": expect.status.conditions[0].reson is no field of the Order's status; did you mean reason?`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CheckFile = %s\nwant %q", got, want)
		}
	}
	if n := strings.Count(got, "E0002"); n != 3 {
		t.Errorf("CheckFile = %s\nwant 3 problems, got %d", got, n)
	}
}

// compileBlueprint compiles a Blueprint given as YAML, named file in
// messages, failing the test on any error.
func compileBlueprint(t *testing.T, file string, src []byte) *ir.Blueprint {
	t.Helper()
	bp, err := compiler.Compile(load.Bytes(file, src), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// checkFile parses a simulate file, given as YAML, for bp and returns it,
// its Simulator, and what CheckFile says of it.
func checkFile(t *testing.T, bp *ir.Blueprint, file string) (*simulate.File, *simulate.Simulator, string) {
	t.Helper()
	f, err := simulate.Parse(filepath.Join(t.TempDir(), "simulate.yaml"), []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	return f, sim, fmt.Sprint(sim.CheckFile(f))
}
