package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/internal/diag"
)

// FuzzParse reads arbitrary e2e files. Parse must not panic, and must
// return either a File or diagnostics, never both or neither, each
// diagnostic with a code and a message. The seeds are the e2e files of the
// packs and of testdata. The file is read as if in an empty directory, so
// that the CR files it names are missing unless given by absolute path.
func FuzzParse(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../packs/*/test/e2e.yaml", "../packs/*/*/test/e2e.yaml", "testdata/*.yaml", "testdata/errors/*.yaml"} {
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
	path := filepath.Join(f.TempDir(), "test", "e2e.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		// Parse takes milliseconds; a hang is a bug the fuzzer would not
		// report unless the process crashes, keeping the input.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("Parse has not returned in 10s on %q", data))
			}
		}()
		file, err := e2e.Parse(path, data)
		if err == nil {
			if file == nil {
				t.Fatal("Parse returned neither a File nor an error")
			}
			return
		}
		if file != nil {
			t.Errorf("Parse returned a File and an error: %v", err)
		}
		errs := diag.All(err)
		if len(errs) == 0 {
			t.Fatalf("the error holds no diagnostic: %v", err)
		}
		for _, e := range errs {
			if e.Code < 1 || e.Msg == "" || e.Pos.Line < 0 || e.Pos.Col < 0 {
				t.Errorf("malformed diagnostic %#v", e)
			}
		}
	})
}
