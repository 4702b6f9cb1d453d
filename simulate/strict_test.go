package simulate_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/simulate"
)

// TestStrictCR checks that the in-memory store refuses, prunes and
// defaults the custom resource as the API server does: each case names
// what must appear in its error or failures, as the API server words it.
func TestStrictCR(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/strict/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := simulate.ReadFile("testdata/strict/test/simulate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		// A patch that spells out a default makes no new generation; one
		// that breaks the rule is refused.
		"defaults":       {`step 2 (patch): patching the CR: Shop.example.inrun.dev "a" is invalid: spec: Invalid value: a Shop runs at most 10 replicas`},
		"unknown fields": {`unknown field "spec.replicaz", unknown field "spec.x"`},
		"invalid values": {
			`metadata.name: Invalid value: "A_b"`,
			`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
			`spec.tier: Unsupported value: "medium": supported values: "small", "large"`,
		},
		"a validation rule": {`a Shop runs at most 10 replicas`},
		// The CRD has rules, which the API server does not run over a
		// value its schema refuses, and says so.
		"a status the schema refuses":   {`writing status: Shop.example.inrun.dev "a" is invalid: [status.phase: Unsupported value: "Huge"`, "some validation rules were not checked"},
		"a patch with an unknown field": {`step 1 (patch): patching the CR: Shop "a": strict decoding error: unknown field "spec.colour"`},
		// Unknown fields are refused first, each at its place in the file.
		"from a file": {`cr.yaml:8:3: E0002 Shop: unknown field spec.replica: the CRD does not declare it, and the API server refuses it; did you mean spec.replicas?`},
	}
	for i := range f.Cases {
		c := &f.Cases[i]
		res := sim.RunCase(context.Background(), f, c)
		got := strings.Join(res.Failures, "\n")
		if res.Err != nil {
			got = res.Err.Error() + "\n" + got
		}
		for _, w := range want[c.Name] {
			if !strings.Contains(got, w) {
				t.Errorf("case %q: want %q in:\n%s", c.Name, w, got)
			}
		}
		// A write the store refuses changes nothing: Degraded says so, and
		// a pass that tries it again is no write.
		if c.Name == "a status the schema refuses" && strings.Contains(got, "not idempotent") {
			t.Errorf("case %q: a refused status write counted as a write:\n%s", c.Name, got)
		}
		if c.Name == "defaults" && strings.Contains(got, "observedGeneration") {
			t.Errorf("case %q: a patch to the default value made a new generation:\n%s", c.Name, got)
		}
	}
}

// TestStrictCRFileValues checks that a CR file's invalid values are
// reported at their lines once it has no unknown fields.
func TestStrictCRFileValues(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/strict/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := dir + "/cr.yaml"
	writeFile(t, path, "apiVersion: example.inrun.dev/v1\nkind: Shop\nmetadata:\n  name: corner\nspec:\n  replicas: -3\n  tier: medium\n")
	cr, err := simulate.ReadObject(path)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sim.Run(context.Background(), simulate.Input{CR: cr, CRFile: path})
	for _, w := range []string{
		"cr.yaml:6:13: E0005 Shop is invalid: spec.replicas: Invalid value: -3",
		`cr.yaml:7:9: E0005 Shop is invalid: spec.tier: Unsupported value: "medium"`,
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("want %q in %v", w, err)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWrittenNamesSuccessfulWrites: the store names the writes it took, in
// order, for the message of a pass that is not idempotent; a write it
// refused is not among them.
func TestWrittenNamesSuccessfulWrites(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/strict/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := simulate.NewStore(bp)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "a"}, Data: map[string]string{"k": "v"}}
	if err := store.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := store.Create(ctx, cm.DeepCopy()); err == nil {
		t.Fatal("a second create of shop/a succeeded")
	}
	cm.Data["k"] = "w"
	if err := store.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	want := []string{"create ConfigMap shop/a", "update ConfigMap shop/a"}
	if got := store.Written(0); !slices.Equal(got, want) {
		t.Errorf("Written(0) = %q, want %q", got, want)
	}
	if got := store.Written(1); !slices.Equal(got, want[1:]) {
		t.Errorf("Written(1) = %q, want %q", got, want[1:])
	}
	if got := store.Writes(); got != 3 {
		t.Errorf("Writes() = %d, want 3: every request counts there, refused or not", got)
	}
}

// TestResourceVersionsGrow: every write of the custom resource, its status
// applied included, gives it a greater resourceVersion, and the answer
// carries it, as an API server's does; an object with no status has no
// status field, not a null one.
func TestResourceVersionsGrow(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/strict/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := simulate.NewStore(bp)
	ctx := context.Background()
	obj := func(fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": bp.Resource.GroupVersion().String(), "kind": bp.Resource.Kind}}
		for k, v := range fields {
			u.Object[k] = v
		}
		return u
	}
	meta := func(extra map[string]any) map[string]any {
		m := map[string]any{"name": "a", "namespace": "shop"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	cr := obj(map[string]any{"metadata": meta(nil), "spec": map[string]any{}})
	if err := store.CreateCR(ctx, cr); err != nil {
		t.Fatal(err)
	}
	last := int64(0)
	check := func(what string, answer *unstructured.Unstructured) {
		t.Helper()
		got := obj(nil)
		if err := store.Get(ctx, client.ObjectKeyFromObject(cr), got); err != nil {
			t.Fatal(err)
		}
		rv, _ := strconv.ParseInt(got.GetResourceVersion(), 10, 64)
		if rv <= last {
			t.Errorf("%s: resourceVersion %d, not past %d", what, rv, last)
		}
		if answer != nil && answer.GetResourceVersion() != got.GetResourceVersion() {
			t.Errorf("%s: the answer has resourceVersion %s, the store %s", what, answer.GetResourceVersion(), got.GetResourceVersion())
		}
		if st, ok := got.Object["status"]; ok && st == nil {
			t.Errorf("%s: a null status field", what)
		}
		last = rv
	}
	check("created", nil)
	fin := obj(map[string]any{"metadata": meta(map[string]any{"finalizers": []any{"x/y"}})})
	if err := store.Patch(ctx, fin, client.Apply, client.FieldOwner("inrun"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	check("a finalizer applied", fin)
	for _, phase := range []string{"Open", "Closed"} {
		st := obj(map[string]any{"metadata": meta(nil), "status": map[string]any{"phase": phase}})
		if err := store.Status().Patch(ctx, st, client.Apply, client.FieldOwner("inrun"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		check("status "+phase+" applied", st)
	}
}
