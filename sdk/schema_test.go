package sdk

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestSchemaAgrees keeps docs/reconciler-contract.schema.json, which
// reconcilers in other languages validate against, in step with the rules
// this package enforces: the same fields, enums, versions and patterns.
func TestSchemaAgrees(t *testing.T) {
	raw, err := os.ReadFile("../docs/reconciler-contract.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("the schema is not JSON: %v", err)
	}
	// at walks the schema: a string steps into an object, an int into an
	// array.
	at := func(path ...any) any {
		v := schema
		for _, p := range path {
			switch p := p.(type) {
			case string:
				m, _ := v.(map[string]any)
				v = m[p]
			case int:
				s, _ := v.([]any)
				if p >= len(s) {
					return nil
				}
				v = s[p]
			}
		}
		return v
	}
	keys := func(path ...any) []string {
		m, _ := at(path...).(map[string]any)
		return sortedKeys(m)
	}
	strs := func(path ...any) []string {
		var out []string
		s, _ := at(path...).([]any)
		for _, v := range s {
			out = append(out, v.(string))
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { s = slices.Clone(s); slices.Sort(s); return s }

	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"request fields", keys("$defs", "ReconcileRequest", "properties"), sorted(requestFields...)},
		{"result fields", keys("$defs", "ReconcileResult", "properties"), sorted(resultFields...)},
		{"condition fields", keys("$defs", "condition", "properties"), sorted(conditionFields...)},
		{"event fields", keys("$defs", "event", "properties"), sorted(eventFields...)},
		{"step fields", keys("$defs", "step", "properties"), sorted(stepFields...)},
		{"step result fields", keys("$defs", "stepResult", "properties"), sorted(stepResultFields...)},
		{"step phases", strs("$defs", "stepResult", "properties", "phase", "enum"), sorted(StepSucceeded, StepRunning, StepFailed)},
		{"step message limit", at("$defs", "stepResult", "properties", "message", "maxLength"), float64(maxStepMessage)},
		{"condition statuses", strs("$defs", "condition", "properties", "status", "enum"), sorted(ConditionTrue, ConditionFalse, ConditionUnknown)},
		{"event types", strs("$defs", "event", "properties", "type", "enum"), sorted(EventNormal, EventWarning)},
		{"runtime conditions", strs("$defs", "condition", "properties", "type", "allOf", 1, "not", "enum"), sorted(runtimeConditions...)},
		{"request apiVersion", at("$defs", "ReconcileRequest", "properties", "apiVersion", "const"), APIVersion},
		{"result apiVersion", at("$defs", "ReconcileResult", "properties", "apiVersion", "const"), APIVersion},
		{"request kind", at("$defs", "ReconcileRequest", "properties", "kind", "const"), KindRequest},
		{"result kind", at("$defs", "ReconcileResult", "properties", "kind", "const"), KindResult},
		{"apiVersion pattern", at("$defs", "object", "properties", "apiVersion", "pattern"), apiVersionRE.String()},
		{"kind pattern", at("$defs", "object", "properties", "kind", "pattern"), kindRE.String()},
		{"id pattern", at("$defs", "resource", "properties", "id", "pattern"), labelNameRE.String()},
		{"reason pattern", at("$defs", "reason", "pattern"), reasonRE.String()},
		{"event message limit", at("$defs", "event", "properties", "message", "maxLength"), float64(maxEventNote)},
		{"condition message limit", at("$defs", "condition", "properties", "message", "maxLength"), float64(maxCondMsg)},
	} {
		if !equalJSON(tc.got, tc.want) {
			t.Errorf("%s: the schema says %v, the Go code %v", tc.name, tc.got, tc.want)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
