package sdk_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/inrun/inrun/sdk"
)

// TestContractExamples: every request and Result that
// docs/reconciler-contract.md shows is one the runtime takes, and the one
// it shows refused ("is refused") is refused with the message printed
// after it, since reconcilers are written from that page alone.
func TestContractExamples(t *testing.T) {
	doc, err := os.ReadFile("../docs/reconciler-contract.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("(?s)```json\n(.*?)```\n\n(is refused.*?\n```\n(.*?)\n```)?").FindAllSubmatch(doc, -1)
	seen := map[string]int{}
	for i, m := range examples {
		var head struct{ Kind string }
		if err := json.Unmarshal(m[1], &head); err != nil {
			t.Errorf("example %d is not JSON: %v", i, err)
			continue
		}
		seen[head.Kind]++
		switch head.Kind {
		case sdk.KindRequest:
			_, err = sdk.DecodeRequest(m[1])
		case sdk.KindResult:
			_, err = sdk.DecodeResult(m[1], false)
		default:
			t.Errorf("example %d is a %q, neither a request nor a Result", i, head.Kind)
			continue
		}
		refused := len(m[2]) > 0
		if refused {
			seen["refused"]++
		}
		switch {
		case refused && err == nil:
			t.Errorf("example %d (%s) is shown refused, and is taken:\n%s", i, head.Kind, m[1])
		case refused && !strings.Contains(string(m[3]), err.Error()):
			t.Errorf("example %d (%s) is refused with\n%v\nnot as the page shows:\n%s", i, head.Kind, err, m[3])
		case !refused && err != nil:
			t.Errorf("example %d (%s) is refused:\n%v\n%s", i, head.Kind, err, m[1])
		}
	}
	if seen[sdk.KindRequest] == 0 || seen[sdk.KindResult] == 0 || seen["refused"] == 0 {
		t.Errorf("examples by kind: %v; want a request, a Result and a refused one at least", seen)
	}
}
