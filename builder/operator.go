package builder

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/ir"
)

// Operator builds the operator of bp, a typed Blueprint (one that names
// Go code), with the modules with linked: inrun build --operator --with.
// As Build does for an inrun, it checks the modules' versions first,
// before anything is generated; codegen.Build then generates the
// project, links the modules (Modules) and builds it. files is the
// Blueprint's directory.
func Operator(ctx context.Context, bp *ir.Blueprint, files fs.FS, with []With, opts codegen.BuildOptions) (*codegen.Project, error) {
	if len(with) == 0 {
		return nil, fmt.Errorf("no module to link: name one with --with MODULE[@VERSION][=PATH]")
	}
	mods, err := Check(ctx, with)
	if err != nil {
		return nil, err
	}
	opts.Modules = Modules(mods)
	return codegen.Build(ctx, bp, files, opts)
}

// Modules are checked modules as codegen.Build links them into an
// operator, with the steps Build uses for an inrun.
type Modules []*GoMod

var _ codegen.Modules = Modules(nil)

// Len is how many modules there are.
func (m Modules) Len() int { return len(m) }

// Link adds the modules to the generated project in dir: its go.mod
// requires them (AddModules: a local one replaced by its directory, its
// replace directives kept; their go.mod files are only read), its go.sum
// gets their go.sum lines (Sums), and their packages are listed with go
// list (Packages).
func (m Modules) Link(ctx context.Context, dir, goCmd string) ([]string, error) {
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return nil, err
	}
	if err := AddModules(f, dir, m); err != nil {
		return nil, err
	}
	f.Cleanup()
	if data, err = f.Format(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(gomod, data, 0o644); err != nil {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), append(sum, Sums(m)...), 0o644); err != nil {
		return nil, err
	}
	return Packages(goRunner(ctx, goCmd, dir, dir, io.Discard), m)
}

// Recheck checks the versions go mod tidy resolved in dir (see the
// function Recheck).
func (m Modules) Recheck(dir, shown string) error { return Recheck(dir, shown) }
