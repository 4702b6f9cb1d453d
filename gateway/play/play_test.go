package play_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/gateway/play"
	"github.com/inrun/inrun/simulate"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const packDir = "../../packs/intent"

// TestPackIntent plays the intent pack's intent, with the pack's Python
// reconciler, and compares every stage with testdata/intent.golden.
func TestPackIntent(t *testing.T) {
	out := playPack(t, filepath.Join(packDir, "intents", "payments-api.json"), nil)
	golden := filepath.Join("testdata", "intent.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./gateway/play -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("play output differs from %s (-want +got; go test ./gateway/play -update rewrites it):\n%s", golden, diff)
	}
}

// TestRefused: a stage that refuses prints the gateway's answer and stops
// before anything is simulated.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name, intent string
		scopes       []string
		want         string
		intentName   string
	}{
		{"a field is unknown", `{"repository": "a/b", "replica": 2}`, nil, `did you mean replicas?`, ""},
		{"out of the token's scope", `{"repository": "a/b", "environment": "prod"}`, []string{"deploy"}, `is not one of them`, ""},
		// --name, as PUT .../intents/<name> has it.
		{"a name the intent's fields contradict", `{"repository": "a/b"}`, nil, `names the intent a-b, not zzz`, "zzz"},
		{"a name that is none", `{"repository": "a/b"}`, nil, `../x\" cannot name an intent`, "../../x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			bp, err := compiler.CompileFile(filepath.Join(packDir, "blueprint.yaml"), compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = play.Run(context.Background(), play.Options{Blueprint: bp, Intent: []byte(tc.intent), Scopes: tc.scopes, Out: &buf, Name: tc.intentName,
				Reply: map[string]any{"status": map[string]any{}}})
			if !errors.Is(err, play.ErrRefused) {
				t.Fatalf("Run = %v; want ErrRefused", err)
			}
			if !strings.Contains(buf.String(), tc.want) || strings.Contains(buf.String(), "== 4.") {
				t.Errorf("output:\n%s", buf.String())
			}
		})
	}
}

func playPack(t *testing.T, intentFile string, scopes []string) string {
	t.Helper()
	bp, err := compiler.CompileFile(filepath.Join(packDir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	intent, err := os.ReadFile(intentFile)
	if err != nil {
		t.Fatal(err)
	}
	simFile := filepath.Join(packDir, "test", "simulate.yaml")
	f, err := simulate.ReadFile(simFile)
	if err != nil {
		t.Fatal(err)
	}
	// The file's port may be taken by another package's test of the same
	// pack running at the same time: the reconciler gets a free one.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	f.Reconciler.URL = fmt.Sprintf("http://127.0.0.1:%d/reconcile", port)
	f.Reconciler.Env["PORT"] = fmt.Sprint(port)
	var buf bytes.Buffer
	err = play.Run(context.Background(), play.Options{Blueprint: bp, Intent: intent, Scopes: scopes, Reconciler: f.Reconciler, BaseDir: filepath.Dir(simFile), Out: &buf})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, buf.String())
	}
	return buf.String()
}
