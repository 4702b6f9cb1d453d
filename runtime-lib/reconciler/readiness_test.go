package reconciler

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestConditionReady(t *testing.T) {
	obj := func(gen int64, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
		u.SetGeneration(gen)
		return u
	}
	ready := func(extra ...any) map[string]any {
		c := map[string]any{"type": "Ready", "status": "True"}
		for i := 0; i+1 < len(extra); i += 2 {
			c[extra[i].(string)] = extra[i+1]
		}
		return c
	}
	for _, tt := range []struct {
		name     string
		u        *unstructured.Unstructured
		observed bool
		want     bool
	}{
		{"Ready and observed", obj(2, map[string]any{"observedGeneration": int64(2), "conditions": []any{ready()}}), true, true},
		{"Ready for an older spec", obj(3, map[string]any{"observedGeneration": int64(2), "conditions": []any{ready()}}), true, false},
		{"Ready, nothing observed, required", obj(1, map[string]any{"conditions": []any{ready()}}), true, false},
		{"Ready, nothing observed, not required", obj(1, map[string]any{"conditions": []any{ready()}}), false, true},
		{"the condition's generation is older", obj(2, map[string]any{"conditions": []any{ready("observedGeneration", int64(1))}}), false, false},
		{"the condition's generation is current", obj(2, map[string]any{"conditions": []any{ready("observedGeneration", int64(2))}}), false, true},
		{"not Ready", obj(1, map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{"type": "Ready", "status": "False"}}}), true, false},
		{"no Ready condition", obj(1, map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{"type": "Progressing", "status": "True"}}}), true, false},
		{"no status", obj(1, nil), false, false},
	} {
		if got := conditionReady(tt.u, tt.observed); got != tt.want {
			t.Errorf("%s: conditionReady = %v, want %v", tt.name, got, tt.want)
		}
	}
}
