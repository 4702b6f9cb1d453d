package codegen

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// generatedRoots are the paths a generated project consists of: Write
// replaces them when it writes over an earlier generation.
var generatedRoots = []string{
	"api", "cmd", "config", "internal", ThirdPartyDir,
	".gitignore", "Dockerfile", "Makefile", "PROJECT", "README.md", "go.mod", "go.sum",
}

// Write writes p into dir: its Files, Inrun's source under
// third_party/inrun, and a go.sum started from Inrun's. dir must be empty,
// missing, or an earlier generation, which Write replaces whole; any other
// directory is refused, so that a mistyped --out cannot overwrite a
// project.
func (p *Project) Write(dir string) error {
	third, err := p.ThirdParty()
	if err != nil {
		return err
	}
	if err := prepare(dir); err != nil {
		return err
	}
	write := func(name string, data []byte) error {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, data, 0o644)
	}
	for _, name := range p.Paths() {
		if err := write(name, p.Files[name]); err != nil {
			return err
		}
	}
	for name, data := range third {
		if err := write(ThirdPartyDir+"/"+name, data); err != nil {
			return err
		}
	}
	return write("go.sum", GoSum())
}

// marker is how Write recognises an earlier generation.
const marker = "internal/blueprint/blueprint.go"

func prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) == 0:
		return nil
	}
	head, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(marker)))
	if err != nil || !bytes.HasPrefix(head, []byte("// "+Header)) {
		return fmt.Errorf("%s is not empty and holds no earlier inrun build output; choose an empty directory with --out", dir)
	}
	for _, name := range generatedRoots {
		if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			return err
		}
	}
	return nil
}
