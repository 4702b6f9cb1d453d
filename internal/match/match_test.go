package match

import (
	"strings"
	"testing"
)

func TestPartial(t *testing.T) {
	have := map[string]any{
		"spec":   map[string]any{"replicas": int64(2), "image": "nginx", "ports": []any{map[string]any{"port": int64(80), "name": "http"}}},
		"status": map[string]any{"ready": true},
	}
	for _, tc := range []struct {
		name string
		want any
		ok   bool
	}{
		{"subset", map[string]any{"spec": map[string]any{"replicas": 2.0}}, true},
		{"list items partially", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": 80}}}}, true},
		{"wrong scalar", map[string]any{"spec": map[string]any{"replicas": 3}}, false},
		{"missing key", map[string]any{"spec": map[string]any{"paused": false}}, false},
		{"list length", map[string]any{"spec": map[string]any{"ports": []any{}}}, false},
		{"type", map[string]any{"status": "ready"}, false},
	} {
		if got := Partial(have, tc.want); got != tc.ok {
			t.Errorf("%s: Partial = %v, want %v (mismatches %v)", tc.name, got, tc.ok, Mismatches(have, tc.want))
		}
	}
}

func TestMismatchesNamePathExpectedAndGot(t *testing.T) {
	have := map[string]any{"spec": map[string]any{"replicas": int64(2)}}
	got := Mismatches(have, map[string]any{"spec": map[string]any{"replicas": 7, "image": "x"}})
	want := []string{`spec.image: missing, expected "x"`, "spec.replicas: expected 7, got 2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Mismatches = %q, want %q", got, want)
	}
	if d := Diff(have, map[string]any{"spec": map[string]any{"replicas": 7}}); !strings.Contains(d, "7") || !strings.Contains(d, "2") {
		t.Errorf("Diff does not show both values:\n%s", d)
	}
}

// TestDiffShowsOnlyWhatDiffers: a key expected absent, and absent, is no
// difference; a !contains item that matches nothing is shown against the
// whole list, not against an empty one.
func TestDiffShowsOnlyWhatDiffers(t *testing.T) {
	have := map[string]any{"phase": "Done", "conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}
	want := map[string]any{"phase": "Running", "gone": Absent, "conditions": Contains{map[string]any{"type": "Ready", "status": "True"}}}
	d := Diff(have, want)
	if strings.Contains(d, "absent") || strings.Contains(d, "gone") {
		t.Errorf("Diff shows the absent key that matched:\n%s", d)
	}
	if !strings.Contains(d, `"status": string("False")`) || strings.Contains(d, "[]any{}") {
		t.Errorf("Diff does not show the conditions there are:\n%s", d)
	}
	if !strings.Contains(d, `"Running"`) {
		t.Errorf("Diff lacks the difference:\n%s", d)
	}
}
