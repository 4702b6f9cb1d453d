package sdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inrun/inrun/sdk"
)

func TestStepRoundTrip(t *testing.T) {
	req := sdk.Request{APIVersion: sdk.APIVersion, Kind: sdk.KindRequest,
		Object: map[string]any{"apiVersion": "example.inrun.dev/v1", "kind": "Order", "metadata": map[string]any{"name": "o"}},
		Step:   &sdk.Step{Name: "Charge", Attempt: 2, IdempotencyKey: "u1/1/Charge/2"}}
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sdk.DecodeRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Step == nil || *got.Step != *req.Step {
		t.Errorf("step = %+v, want %+v", got.Step, req.Step)
	}

	// A request without a workflow sends no step at all: old reconcilers
	// read it as before.
	req.Step = nil
	raw, _ = json.Marshal(req)
	if strings.Contains(string(raw), `"step"`) {
		t.Errorf("a request without a step mentions one: %s", raw)
	}

	res, err := sdk.DecodeResult([]byte(`{`+header+`, "step": {"phase": "Succeeded", "next": "Ship", "message": "charged"}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Step == nil || res.Step.Next != "Ship" || res.Step.Message != "charged" {
		t.Errorf("step = %+v", res.Step)
	}
	if c := res.DeepCopy(); c.Step == res.Step || *c.Step != *res.Step {
		t.Error("DeepCopy shares or changes the step")
	}
}

func TestStepErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         string
		request    bool
		finalizing bool
		want       []string
	}{{
		name: "bad step result",
		in:   `{` + header + `, "step": {"phase": "Done", "next": "Ship", "messag": "x"}}`,
		want: []string{
			`step.phase "Done" is not valid (use Succeeded, Running or Failed)`,
			`step.next is only valid when the step succeeded`,
			`step.messag is not a field of a step result`,
		},
	}, {
		name:       "step in reply to a finalizing request",
		in:         `{` + header + `, "done": true, "step": {}}`,
		finalizing: true,
		want:       []string{`step is not valid in reply to a finalizing request`},
	}, {
		name: "bad step in a request",
		in: `{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileRequest",
			"object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
			"step": {"name": "", "attempt": 0.5}}`,
		request: true,
		want: []string{
			`step.attempt must be a whole number`,
			`step.name is required`,
			`step.idempotencyKey is required`,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.request {
				_, err = sdk.DecodeRequest([]byte(tc.in))
			} else {
				_, err = sdk.DecodeResult([]byte(tc.in), tc.finalizing)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
