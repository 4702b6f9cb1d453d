package expr_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
)

// TestLibraries evaluates the functions kro users call, as a Blueprint's
// status fields over a Website.
func TestLibraries(t *testing.T) {
	cases := []exprCase{
		{`base64.encode(b"inrun")`, "aW5ydW4="},
		{`string(base64.decode("aW5ydW4="))`, "inrun"},
		{`math.greatest(3, 9, 4)`, int64(9)},
		{`cel.bind(n, self.spec.replicas, n * n)`, int64(9)},
		{`json.marshal({"b": dyn(1), "a": dyn([dyn(true), dyn("x")])})`, `{"a":[true,"x"],"b":1}`},
		{`json.unmarshal('{"a": {"b": 2}}').a.b`, int64(2)},
		{`hex.encode(hash.sha256("inrun"))`, "30d85ecef90a481f9272bbb30de4ab3244c1554b4de58a270a9caa04686495a2"},
		{`size(hex.encode(hash.fnv64a("inrun")))`, int64(16)},
		{`random.seededString(12, self.metadata.uid) == random.seededString(12, self.metadata.uid)`, true},
		{`size(random.seededString(40, "seed"))`, int64(40)},
		{`random.seededString(8, "seed").matches("^[a-z0-9]{8}$")`, true},
		{`random.seededString(8, "a") != random.seededString(8, "b")`, true},
		{`random.seededInt(30000, 32768, "seed") >= 30000 && random.seededInt(30000, 32768, "seed") < 32768`, true},
		// kro's values, from its pkg/cel/library/random.go run on these
		// seeds: an instance moved from kro keeps what they derive.
		{`random.seededString(10, "00000000-0000-4000-8000-000000000001")`, "8kne6v6h8k"},
		{`random.seededString(24, "test-seed")`, "5czheg3o5czheg3o5czheg3o"},
		{`random.seededInt(30000, 32768, "00000000-0000-4000-8000-000000000001")`, int64(30368)},
		{`random.seededInt(30000, 32768, "my-service")`, int64(31247)},
		// The argument's keys win, as kro's maps library has it.
		{`{"a": 1, "b": 2}.merge({"b": 3, "c": 4})`, map[string]any{"a": int64(1), "b": int64(3), "c": int64(4)}},
		{`{"x": dyn({"a": 1, "y": 1})}.deepMerge({"x": dyn({"b": 2, "y": 2}), "y": dyn(3)})`, map[string]any{"x": map[string]any{"a": int64(1), "b": int64(2), "y": int64(2)}, "y": int64(3)}},
		{`{"a": 1, "b": 2, "c": 3}.omit(["a", "c"])`, map[string]any{"b": int64(2)}},
		{`{"a": 1}.transformMap(k, v, v + 1)`, map[string]any{"a": int64(2)}},
		{`[1, 2, 3].all(i, v, v > i)`, true},
		{`lists.range(3)`, []any{int64(0), int64(1), int64(2)}},
		{`sets.contains([1, 2], [2])`, true},
		{`"Hello".upperAscii()`, "HELLO"},
		{`"Hello".reverse()`, "olleH"},
	}
	bp, progs := statusBlueprint(t, "", cases)
	vars, err := progs.NewVars(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "w", "namespace": "default", "uid": "6a1d3a7e-0000-4000-8000-000000000001"},
		"spec":     map[string]any{"image": "nginx", "replicas": int64(3)},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	renderCases(t, bp, progs, vars, cases)
}

// TestMetaTimes: a built-in kind's time fields are metav1.Time (and
// MicroTime) structs, not CEL timestamps; string() and timestamp() convert
// them, an unset one too.
func TestMetaTimes(t *testing.T) {
	cases := []exprCase{
		{`string(job.status.startTime)`, "2026-12-03T10:00:00Z"},
		{`string(job.status.completionTime)`, ""},
		{`timestamp(job.status.startTime) < timestamp("2026-12-03T10:00:01Z")`, true},
		{`timestamp(job.status.startTime) == job.status.startTime.Time`, true},
		{`timestamp(job.status.completionTime) == job.status.completionTime.Time`, true},
		{`timestamp(job.status.completionTime) == timestamp(0)`, true},
		{`string(event.eventTime)`, "2026-12-03T10:00:00.250000Z"},
		{`timestamp(event.eventTime) > timestamp(job.status.startTime)`, true},
	}
	bp, progs := statusBlueprint(t, `onReconcile:
  - id: job
    template:
      apiVersion: batch/v1
      kind: Job
      metadata:
        name: ${self.metadata.name}
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
              - name: x
                image: ${self.spec.image}
  - id: event
    template:
      apiVersion: events.k8s.io/v1
      kind: Event
      metadata:
        name: ${self.metadata.name}
      eventTime: "2026-12-03T10:00:00.250000Z"
      reportingController: inrun.dev/w
      reportingInstance: w
      action: Test
      reason: Test
`, cases)
	vars, err := progs.NewVars(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
	}}, map[string]*unstructured.Unstructured{
		"job": {Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": "w", "namespace": "default"},
			"status":   map[string]any{"startTime": "2026-12-03T10:00:00Z"},
		}},
		"event": {Object: map[string]any{
			"apiVersion": "events.k8s.io/v1", "kind": "Event",
			"metadata":  map[string]any{"name": "w", "namespace": "default"},
			"eventTime": "2026-12-03T10:00:00.250000Z",
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	renderCases(t, bp, progs, vars, cases)
}

// exprCase is an expression and what it renders to.
type exprCase struct {
	src  string
	want any
}

// statusBlueprint compiles a Website Blueprint whose children are
// onReconcile (YAML, or "" for none) and whose status field fI is the
// expression of cases[I].
func statusBlueprint(t *testing.T, onReconcile string, cases []exprCase) (*ir.Blueprint, *expr.Programs) {
	t.Helper()
	var status strings.Builder
	for i, c := range cases {
		fmt.Fprintf(&status, "    f%d: '${%s}'\n", i, strings.ReplaceAll(c.src, "'", "''"))
	}
	return compileSource(t, "../packs/website/blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: w
crd:
  file: manifests/crd.yaml
`+onReconcile+`emit:
  status:
`+status.String())
}

// compileSource compiles a Blueprint's source, read as if from file, and
// its CEL programs.
func compileSource(t *testing.T, file, src string) (*ir.Blueprint, *expr.Programs) {
	t.Helper()
	bp, err := compiler.Compile(load.Bytes(file, []byte(src)), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	progs, err := expr.Compile(bp)
	if err != nil {
		t.Fatal(err)
	}
	return bp, progs
}

// renderCases renders each case's status field with vars and compares.
func renderCases(t *testing.T, bp *ir.Blueprint, progs *expr.Programs, vars *expr.Vars, cases []exprCase) {
	t.Helper()
	for i, c := range cases {
		got, err := progs.Render(bp.Status.Lookup(fmt.Sprintf("f%d", i)), vars)
		if err != nil {
			t.Errorf("${%s}: %v", c.src, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("${%s} (-want +got):\n%s", c.src, diff)
		}
	}
}

// TestObjectFields: an object field that keeps unknown fields (SimpleSchema's
// object) reads whole in json.marshal, merge and deepMerge. The API
// server's CEL value of one iterates its fields as nil keys: json.marshal
// said "map key <nil> is not a string", deepMerge "map key 0".
func TestObjectFields(t *testing.T) {
	bp, progs := compileSource(t, "blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: objects
schema:
  apiVersion: v1alpha1
  group: example.inrun.dev
  kind: Defaults
  spec:
    podSpec: object
emit:
  status:
    raw: ${json.marshal(self.spec.podSpec)}
    deep: '${json.marshal({"securityContext": {"runAsNonRoot": true, "runAsUser": 1}}.deepMerge(self.spec.podSpec))}'
`)
	vars, err := progs.NewVars(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1alpha1", "kind": "Defaults",
		"metadata": map[string]any{"name": "d", "namespace": "default"},
		"spec": map[string]any{"podSpec": map[string]any{
			"securityContext": map[string]any{"runAsUser": int64(1000)},
			"hostNetwork":     false,
		}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for field, want := range map[string]string{
		"raw":  `{"hostNetwork":false,"securityContext":{"runAsUser":1000}}`,
		"deep": `{"hostNetwork":false,"securityContext":{"runAsNonRoot":true,"runAsUser":1000}}`,
	} {
		got, err := progs.Render(bp.Status.Lookup(field), vars)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %s", field, got, err, want)
		}
	}
}

// TestRandomString: random.string gives letters and digits of the length
// asked, another string on every call, even with a constant argument
// (constant folding would make it one string per process).
func TestRandomString(t *testing.T) {
	bp, progs := compileSource(t, "../packs/website/blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: w
crd:
  file: manifests/crd.yaml
onCreate:
  - id: password
    template:
      apiVersion: v1
      kind: Secret
      metadata:
        name: ${self.metadata.name}-password
      stringData:
        password: ${random.string(24)}
`)
	vars, err := progs.NewVars(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "w", "namespace": "default"},
		"spec":     map[string]any{"image": "nginx"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	field := bp.Children[0].Template.Lookup("stringData").Lookup("password")
	seen := map[string]bool{}
	for range 20 {
		got, err := progs.Render(field, vars)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := got.(string)
		if len(s) != 24 || strings.Trim(s, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			t.Fatalf("random.string(24) = %q, want 24 letters and digits", got)
		}
		seen[s] = true
	}
	if len(seen) != 20 {
		t.Errorf("20 calls gave %d different strings", len(seen))
	}
}
