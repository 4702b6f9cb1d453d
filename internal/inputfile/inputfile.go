// Package inputfile reads the files Inrun takes as input: Blueprints and
// the files they name, test files, custom resources.
package inputfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxBytes bounds every input file Inrun reads: a Blueprint, a file it
// names, a test file, a CR. Inputs are small hand-written YAML; a larger
// one is a mistake, such as a path that names a log or a disk image.
const MaxBytes = 16 << 20

// Read reads the regular file at path, as os.ReadFile does, but refuses
// what is not a regular file (a device such as /dev/zero, a pipe, a
// directory), which would never end or mean nothing, and a file over
// MaxBytes. Errors are *fs.PathError, so errors.Is(err,
// fs.ErrNotExist) holds for a missing file.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		what := "not a regular file"
		if info.IsDir() {
			what = "a directory, not a file"
		}
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%s", what)}
	}
	if info.Size() > MaxBytes {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, over the %d MiB an input file may have", info.Size(), MaxBytes>>20)}
	}
	// The size can grow while the file is read.
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if len(data) > MaxBytes {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("over the %d MiB an input file may have", MaxBytes>>20)}
	}
	return data, nil
}
