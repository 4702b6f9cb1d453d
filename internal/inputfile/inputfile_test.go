package inputfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inrun/inrun/internal/inputfile"
)

// TestReadRefusesWhatIsNotAFile: a device would be read forever, a
// directory means nothing, and an oversized file is a wrong path.
func TestReadRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, inputfile.MaxBytes+1), 0o644); err != nil {
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
		_, err := inputfile.Read(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v; want an error saying %q", path, err, want)
		}
	}
	if _, err := inputfile.Read(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v; want fs.ErrNotExist", err)
	}
	if data, err := inputfile.Read(small); err != nil || string(data) != "kind: X\n" {
		t.Errorf("Read(cr.yaml) = %q, %v", data, err)
	}
}
