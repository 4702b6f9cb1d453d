package load_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inrun/inrun/load"
)

// TestReadFileRefusesWhatIsNotAFile: a device would be read forever, a
// directory means nothing, and an oversized file is a wrong path.
func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, load.MaxFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "cr.yaml")
	if err := os.WriteFile(small, []byte("kind: X\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "not a regular file",
		dir:         "a directory, not a file",
		big:         "over the 16 MiB",
	} {
		_, err := load.ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFile(%s) = %v; want an error saying %q", path, err, want)
		}
	}
	if _, err := load.ReadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v; want fs.ErrNotExist", err)
	}
	if data, err := load.ReadFile(small); err != nil || string(data) != "kind: X\n" {
		t.Errorf("ReadFile(cr.yaml) = %q, %v", data, err)
	}
}
