package builder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	inrun "github.com/inrun/inrun"
	"github.com/inrun/inrun/internal/outdir"
)

const (
	inrunModule = "github.com/inrun/inrun"
	// inrunVersion is the version the generated go.mod requires Inrun at;
	// the replace directive makes it third_party/inrun.
	inrunVersion = "v0.0.0-00010101000000-000000000000"
	// MainModule is the generated main package's module path.
	MainModule = "inrun.build/inrun"
	// ThirdPartyDir is where Inrun's source is written in the build
	// directory, as codegen writes it into a generated operator.
	ThirdPartyDir = "third_party/inrun"
	// BuiltWith is the variable of package cli that the linker sets to
	// the modules compiled in (-X), for inrun version --components.
	BuiltWith = inrunModule + "/cli.builtWith"
)

// Options are what Build builds and where.
type Options struct {
	// With are the modules to compile in.
	With []With
	// Dir is the build directory: the generated main module. An earlier
	// build in it is replaced; any other non-empty directory is refused.
	// Default build/inrun.
	Dir string
	// Binary is the inrun to write. Default bin/inrun.
	Binary string
	// Go is the go command. Default go.
	Go string
	// Progress receives a line per step; nil for none.
	Progress io.Writer
	// NoCompile stops before go build: the versions checked, the main
	// module generated, go mod tidy run and its versions checked again,
	// in seconds (make registry). Binary is not written.
	NoCompile bool
}

// Build builds an inrun with opts.With compiled in:
//
//  1. every module's go.mod is read and checked against Inrun's pinned
//     versions (CheckVersions), before anything is written or compiled;
//  2. opts.Dir becomes a main module: Inrun's source under
//     third_party/inrun, a go.mod requiring Inrun (replaced by that
//     directory) and every module (a local one replaced by its directory,
//     with the replace directives of its own go.mod, which is only read),
//     and main.go importing every package of the modules, for their init
//     functions, then calling cli.Main;
//  3. go build -trimpath -buildvcs=false with CGO_ENABLED=0 and fixed
//     flags, so that the same inputs give the same binary.
//
// It returns the modules as checked.
func Build(ctx context.Context, opts Options) ([]*GoMod, error) {
	if opts.Dir == "" {
		opts.Dir = filepath.Join("build", "inrun")
	}
	if opts.Binary == "" {
		opts.Binary = filepath.Join("bin", "inrun")
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	if len(opts.With) == 0 {
		return nil, errors.New("no module to compile in: name one with --with MODULE[@VERSION][=PATH]")
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	start := time.Now()
	mods, err := Check(ctx, opts.With)
	if err != nil {
		return mods, err
	}
	fmt.Fprintf(progress, "Checked the versions of %d module(s) (%s)\n", len(mods), since(start))

	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return mods, err
	}
	binary, err := filepath.Abs(opts.Binary)
	if err != nil {
		return mods, err
	}
	if info, err := os.Stat(filepath.Dir(binary)); !opts.NoCompile && (err != nil || !info.IsDir()) {
		if opts.Binary != filepath.Join("bin", "inrun") {
			return mods, fmt.Errorf("-o %s: the directory %s does not exist; create it first, or name a binary in an existing directory", opts.Binary, filepath.Dir(opts.Binary))
		}
		if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
			return mods, err
		}
	}
	gomod, err := GoModFile(dir, mods)
	if err != nil {
		return mods, err
	}
	if err := output.Prepare(dir); err != nil {
		return mods, err
	}
	if err := writeSource(dir, gomod, mods); err != nil {
		return mods, err
	}

	run := goRunner(ctx, opts.Go, dir, opts.Dir, progress, "CGO_ENABLED=0")
	pkgs, err := Packages(run, mods)
	if err != nil {
		return mods, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), MainFile(pkgs), 0o644); err != nil {
		return mods, err
	}
	if _, err := run("mod", "tidy"); err != nil {
		return mods, err
	}
	// The modules' own dependencies may have raised a pinned module
	// beyond what each go.mod said; still before compiling.
	if err := Recheck(dir, opts.Dir); err != nil {
		return mods, err
	}
	if opts.NoCompile {
		fmt.Fprintf(progress, "Prepared %s with %s, not compiled (%s); go build in it, or run again without --no-compile\n", opts.Dir, stamp(mods), since(start))
		return mods, nil
	}
	if _, err := run("build", "-trimpath", "-buildvcs=false",
		"-ldflags=-X "+BuiltWith+"="+stamp(mods), "-o", binary, "."); err != nil {
		return mods, err
	}
	fmt.Fprintf(progress, "Built %s with %s compiled in (%s)\n", opts.Binary, stamp(mods), since(start))
	return mods, nil
}

// GoRunner runs the go command with args in the build directory and
// returns its standard output.
type GoRunner func(args ...string) ([]byte, error)

// goRunner runs goCmd in dir (shown in messages as shown) with GOWORK=off
// and GOFLAGS=-mod=mod (go list resolves what go mod tidy will record),
// and env; each step's duration goes to progress.
func goRunner(ctx context.Context, goCmd, dir, shown string, progress io.Writer, env ...string) GoRunner {
	return func(args ...string) ([]byte, error) {
		step := time.Now()
		cmd := exec.CommandContext(ctx, goCmd, args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod"), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), shown, err, stderr.Bytes())
		}
		fmt.Fprintf(progress, "go %s (%s)\n", args[0], since(step))
		return out, nil
	}
}

// Packages lists, with go list in the main module run runs in, every
// package of every module that can be imported from there: all but main
// packages and internal ones (a module's own packages import those when
// they register). A module with none is refused.
func Packages(run GoRunner, mods []*GoMod) ([]string, error) {
	var pkgs []string
	for _, m := range mods {
		out, err := run("list", "-f", "{{.ImportPath}} {{.Name}}", m.With.Module+"/...")
		if err != nil {
			return nil, err
		}
		n := len(pkgs)
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			path, name, _ := strings.Cut(line, " ")
			if name == "main" || path == "" || strings.Contains(path+"/", "/internal/") {
				continue
			}
			pkgs = append(pkgs, path)
		}
		if len(pkgs) == n {
			return nil, fmt.Errorf("%s has no package that inrun can import: a module compiled in registers from an init function of a package that is neither main nor internal", m.With)
		}
	}
	sort.Strings(pkgs)
	return pkgs, nil
}

// Recheck reads the go.mod go mod tidy left in dir and checks it with
// CheckResolved; shown is dir as the user gave it, for messages.
func Recheck(dir, shown string) error {
	pins, err := OwnPins()
	if err != nil {
		return err
	}
	resolved, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	return CheckResolved(pins, shown, resolved)
}

// Check reads every module's go.mod and checks it against Inrun's pinned
// versions (Pinned of Inrun's own go.mod, embedded): every problem at once.
func Check(ctx context.Context, with []With) ([]*GoMod, error) {
	var (
		mods []*GoMod
		errs []error
	)
	for _, w := range with {
		m, err := ReadGoMod(ctx, w)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		mods = append(mods, m)
	}
	if err := errors.Join(errs...); err != nil {
		return mods, err
	}
	pins, err := OwnPins()
	if err != nil {
		return mods, err
	}
	return mods, CheckVersions(pins, mods)
}

// OwnPins is Pinned of this inrun's own go.mod, embedded: the versions a
// module compiled into it must share.
func OwnPins() (map[string]string, error) {
	own, err := inrun.Source.ReadFile("go.mod")
	if err != nil {
		return nil, err
	}
	return Pinned(own)
}

// CheckResolved checks the versions Go resolved for the generated main
// module (its go.mod after go mod tidy, in dir) against pins: a
// dependency of a module may require a pinned module at a later minor
// than the module's own go.mod says, and Go would then build that one for
// Inrun too. Every such requirement is reported at once.
func CheckResolved(pins map[string]string, dir string, gomod []byte) error {
	f, err := modfile.ParseLax(filepath.Join(dir, "go.mod"), gomod, nil)
	if err != nil {
		return err
	}
	k8sMinor := majorMinor(pins["k8s.io/api"])
	var errs []error
	for _, r := range f.Require {
		want, ok := pins[r.Mod.Path]
		wantMinor := majorMinor(want)
		if !ok {
			if !staging(r.Mod.Path, r.Mod.Version) || k8sMinor == "" {
				continue
			}
			want, wantMinor = k8sMinor+".x", k8sMinor
		}
		if majorMinor(r.Mod.Version) == wantMinor {
			continue
		}
		errs = append(errs, fmt.Errorf("the modules' dependencies require %s %s (inrun has %s): Go would build that version for inrun too, and it would not compile. Fix: find who requires it (go mod graph | grep %s@%s, in %s) and use a version of that dependency made for %s",
			r.Mod.Path, r.Mod.Version, want, r.Mod.Path, r.Mod.Version, dir, want))
	}
	return errors.Join(errs...)
}

// stamp is the modules as the binary records them: MODULE[@VERSION], a
// local directory left out so that where it is does not change the
// binary.
func stamp(mods []*GoMod) string {
	var s []string
	for _, m := range mods {
		w := m.With
		w.Dir = ""
		if m.With.Dir != "" {
			w.Version = ""
		}
		s = append(s, w.String())
	}
	return strings.Join(s, ",")
}

// mainHeader starts the generated main.go.
const mainHeader = "// Code generated by inrun build --with. DO NOT EDIT."

// MainFile is the generated main package: a blank import of every package
// of the modules, whose init functions register, then cli.Main.
func MainFile(pkgs []string) []byte {
	pkgs = append([]string(nil), pkgs...)
	sort.Strings(pkgs)
	var b bytes.Buffer
	b.WriteString(mainHeader + "\n\n")
	b.WriteString("// Command inrun is an inrun with Go modules compiled in: each package\n// imported here registers its reconcilers and hooks from an init function.\npackage main\n\nimport (\n")
	b.WriteString("\t\"" + inrunModule + "/cli\"\n\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\t_ %q\n", p)
	}
	b.WriteString(")\n\nfunc main() { cli.Main() }\n")
	return b.Bytes()
}

// GoModFile is the go.mod of the main module generated in dir (absolute):
// Inrun's go version, Inrun required and replaced by third_party/inrun,
// each module required (a local one at v0.0.0 and replaced by its
// directory, relative to dir), and the replace directives of each local
// module's go.mod, which Go would ignore in a module that is not the main
// one. A replacement of Inrun itself is dropped: the one written here is
// the inrun being built. Two modules replacing one path differently are
// refused.
func GoModFile(dir string, mods []*GoMod) ([]byte, error) {
	own, err := inrun.Source.ReadFile("go.mod")
	if err != nil {
		return nil, err
	}
	ownFile, err := modfile.ParseLax("go.mod", own, nil)
	if err != nil {
		return nil, err
	}
	f := &modfile.File{}
	f.AddModuleStmt(MainModule)
	if ownFile.Go != nil {
		_ = f.AddGoStmt(ownFile.Go.Version)
	}
	f.AddNewRequire(inrunModule, inrunVersion, false)
	if err := f.AddReplace(inrunModule, "", "./"+ThirdPartyDir, ""); err != nil {
		return nil, err
	}
	if err := AddModules(f, dir, mods); err != nil {
		return nil, err
	}
	f.Cleanup()
	return f.Format()
}

// AddModules adds mods to the main module f generated in dir (absolute):
// each required (a local one at v0.0.0 and replaced by its directory,
// relative to dir) with the replace directives of each local module's
// go.mod, which Go would ignore in a module that is not the main one. A
// replacement of Inrun itself is dropped: f's is the inrun being built. A
// path replaced twice differently (by two modules, or by a module and f)
// is refused. inrun build --with and inrun build --operator --with share
// it.
func AddModules(f *modfile.File, dir string, mods []*GoMod) error {
	// The replacements so far, by old path, and who asked for each.
	type repl struct{ to, by string }
	replaced := map[string]repl{}
	for _, r := range f.Replace {
		key, show := r.Old.Path, r.New.Path
		if r.Old.Version != "" {
			key += "@" + r.Old.Version
		}
		if r.New.Version != "" {
			show += " " + r.New.Version
		}
		replaced[key] = repl{show, "inrun"}
	}
	var errs []error
	replace := func(old, oldV, to, toV, by string) {
		key := old
		if oldV != "" {
			key += "@" + oldV
		}
		show := to
		if toV != "" {
			show += " " + toV
		}
		if r, ok := replaced[key]; ok {
			if r.to != show {
				errs = append(errs, fmt.Errorf("%s and %s replace %s differently (%s and %s); make them agree", r.by, by, key, r.to, show))
			}
			return
		}
		replaced[key] = repl{show, by}
		if err := f.AddReplace(old, oldV, to, toV); err != nil {
			errs = append(errs, err)
		}
	}
	rel := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		r, err := filepath.Rel(dir, abs)
		if err != nil {
			return filepath.ToSlash(abs)
		}
		r = filepath.ToSlash(r)
		if !strings.HasPrefix(r, "../") && r != ".." {
			r = "./" + r
		}
		return r
	}
	for _, m := range mods {
		w := m.With
		if w.Dir == "" {
			f.AddNewRequire(w.Module, w.Version, false)
			continue
		}
		f.AddNewRequire(w.Module, "v0.0.0-00010101000000-000000000000", false)
		replace(w.Module, "", rel(w.Dir), "", w.String())
		// Parse, not ParseLax, which drops replace directives.
		theirs, err := modfile.Parse(m.File, m.Data, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", w, err))
			continue
		}
		for _, r := range theirs.Replace {
			if r.Old.Path == inrunModule {
				continue
			}
			to := r.New.Path
			if r.New.Version == "" && modfile.IsDirectoryPath(to) {
				// Relative to the module's directory there; to the
				// build directory here.
				if !filepath.IsAbs(to) {
					to = filepath.Join(w.Dir, to)
				}
				to = rel(to)
			}
			replace(r.Old.Path, r.Old.Version, to, r.New.Version, fmt.Sprintf("%s (%s)", w.Module, m.File))
		}
	}
	return errors.Join(errs...)
}

// Sums are the go.sum lines of mods' local directories, which a main
// module adds to its own so that go mod tidy verifies what they already
// verified.
func Sums(mods []*GoMod) []byte {
	var sums []byte
	for _, m := range mods {
		if m.With.Dir == "" {
			continue
		}
		if theirs, err := os.ReadFile(filepath.Join(m.With.Dir, "go.sum")); err == nil {
			sums = append(sums, theirs...)
		}
	}
	return sums
}

// marker is the file that marks a build directory: main.go, written
// first.
const marker = "main.go"

// output is how Build recognises an earlier build directory, which it
// replaces whole.
var output = outdir.Output{Marker: marker, Header: mainHeader, What: "inrun build --with"}

// HoldsOutput reports whether dir holds a build directory of inrun build
// --with.
func HoldsOutput(dir string) bool { return output.Holds(dir) }

// writeSource writes Inrun's embedded source into dir/third_party/inrun,
// the go.mod, and a go.sum started from Inrun's and each local module's,
// so that go mod tidy verifies what they already verified. main.go is
// written last, once the modules' packages are known, and marks the
// directory as a build.
func writeSource(dir string, gomod []byte, mods []*GoMod) error {
	// The marker first, so that a build stopped halfway can be replaced.
	if err := os.WriteFile(filepath.Join(dir, marker), MainFile(nil), 0o644); err != nil {
		return err
	}
	files, err := inrun.Files()
	if err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, ThirdPartyDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	sum, err := inrun.Source.ReadFile("go.sum")
	if err != nil {
		return err
	}
	sums := append(append([]byte(nil), sum...), Sums(mods)...)
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644)
}

func since(t time.Time) string { return time.Since(t).Round(10 * time.Millisecond).String() }
