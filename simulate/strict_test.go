package simulate_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		"a validation rule":             {`a Shop runs at most 10 replicas`},
		"a status the schema refuses":   {`writing status: Shop.example.inrun.dev "a" is invalid: status.phase: Unsupported value: "Huge"`},
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
