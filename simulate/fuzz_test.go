package simulate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/simulate"
)

// FuzzParse reads arbitrary simulate files. Parse must not panic, and must
// return either a File or diagnostics, never both or neither, each
// diagnostic with a code and a message. The seeds are the simulate files
// of the packs and of testdata.
func FuzzParse(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../packs/*/test/simulate.yaml", "../packs/*/*/test/simulate.yaml", "testdata/*.yaml", "testdata/errors/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) < 10 {
		f.Fatalf("only %d seeds", len(seeds))
	}
	for _, file := range seeds {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer watchdog(data)()
		file, err := simulate.Parse("fuzz/test/simulate.yaml", data)
		if err == nil {
			if file == nil {
				t.Fatal("Parse returned neither a File nor an error")
			}
			return
		}
		if file != nil {
			t.Errorf("Parse returned a File and an error: %v", err)
		}
		checkDiagnostics(t, err)
	})
}

// watchdog crashes the fuzzing process, so that the fuzzer keeps the input,
// when Parse has not returned in 10 seconds: it takes milliseconds, and a
// hang is a bug the fuzzer would not report otherwise. Call the function it
// returns when Parse returns.
func watchdog(data []byte) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			panic(fmt.Sprintf("Parse has not returned in 10s on %q", data))
		}
	}()
	return func() { close(done) }
}

// checkDiagnostics checks that err holds diagnostics, each with a code and
// a message.
func checkDiagnostics(t *testing.T, err error) {
	t.Helper()
	errs := diag.All(err)
	if len(errs) == 0 {
		t.Fatalf("the error holds no diagnostic: %v", err)
	}
	for _, e := range errs {
		if e.Code < 1 || e.Msg == "" || e.Pos.Line < 0 || e.Pos.Col < 0 {
			t.Errorf("malformed diagnostic %#v", e)
		}
	}
}
