package sdk_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/inrun/inrun/sdk"
)

// The fuzz tests feed the strict readers arbitrary bytes, as a reconciler
// (DecodeResult) or the runtime (DecodeRequest) on the other end of the
// wire could. A reader must not panic, must return either a document or
// an ErrorList with at least one problem, never both or neither, and what
// it accepts must be valid and read back the same once written again.

// seeds are documents to start from: the JSON examples of the contract,
// and one of each kind of mistake.
func seeds(f *testing.F) [][]byte {
	f.Helper()
	doc, err := os.ReadFile("../docs/reconciler-contract.md")
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	if len(out) < 3 {
		f.Fatalf("only %d JSON examples in the contract", len(out))
	}
	for _, s := range []string{
		`{` + header + `}`,
		`{` + header + `, "done": true}`,
		`{` + header + `, "status": {"n": 1, "f": 0.5, "big": 1e300, "neg": -3, "s": "é\u00e9"}, "requeueAfter": 30}`,
		`{` + header + `, "labels": {"a.b/c": "d", "inrun.dev/x": "y"}, "annotations": {"k": "v"}}`,
		`{` + header + `, "resources": [{"id": "a", "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, {"id": "a", "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}}]}`,
		`{` + header + `, "conditions": [{"type": "Ready", "status": "Maybe", "reason": "no reason"}], "events": [{"type": "Info"}]}`,
		`{` + header + `, "status": {"a": 1, "a": 2}}`,
		`{"apiVersion": "inrun.dev/reconciler/v9", "kind": "ReconcileResult", "statuz": {}}`,
		`{"apiVersion": "inrun.dev/reconciler/v1alpha1", "kind": "ReconcileRequest", "object": {"apiVersion": "v1", "kind": "X", "metadata": {"name": "n"}}, "args": {}, "observed": [], "finalizing": false}`,
		`{` + header + `, "status": {`,
		`[]`, `null`, `"x"`, ``,
	} {
		out = append(out, []byte(s))
	}
	return out
}

func FuzzDecodeResult(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, finalizing bool) {
		res, err := sdk.DecodeResult(data, finalizing)
		if !checkOutcome(t, res != nil, err) {
			return
		}
		if err := res.Validate(finalizing); err != nil {
			t.Fatalf("DecodeResult accepted %q, which Validate refuses: %v", data, err)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("a Result DecodeResult accepted does not encode: %v", err)
		}
		again, err := sdk.DecodeResult(raw, finalizing)
		if err != nil {
			t.Fatalf("%q was accepted, but written again as %q it is refused: %v", data, raw, err)
		}
		if raw2, _ := json.Marshal(again); string(raw2) != string(raw) {
			t.Fatalf("%q reads back differently:\n%s\n%s", data, raw, raw2)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := sdk.DecodeRequest(data)
		if !checkOutcome(t, req != nil, err) {
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("DecodeRequest accepted %q, which Validate refuses: %v", data, err)
		}
		raw, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("a request DecodeRequest accepted does not encode: %v", err)
		}
		again, err := sdk.DecodeRequest(raw)
		if err != nil {
			t.Fatalf("%q was accepted, but written again as %q it is refused: %v", data, raw, err)
		}
		if raw2, _ := json.Marshal(again); string(raw2) != string(raw) {
			t.Fatalf("%q reads back differently:\n%s\n%s", data, raw, raw2)
		}
	})
}

// checkOutcome checks that a reader returned a document or an error, not
// both or neither, and that its error lists problems; it reports whether
// there is a document to check further.
func checkOutcome(t *testing.T, got bool, err error) bool {
	t.Helper()
	if err == nil {
		if !got {
			t.Fatal("neither a document nor an error")
		}
		return true
	}
	if got {
		t.Fatalf("a document and an error: %v", err)
	}
	var list sdk.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		t.Fatalf("the error is not an ErrorList with problems: %#v", err)
	}
	for _, e := range list {
		if e == nil || e.Problem == "" {
			t.Fatalf("a problem without words in %v", err)
		}
	}
	return false
}
