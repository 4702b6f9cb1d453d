package codegen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/inrun/inrun/builder"
	"github.com/inrun/inrun/ir"
)

// BuildOptions configure Build.
type BuildOptions struct {
	// Module is the generated module's path; see Options.Module.
	Module string
	// Out is the project directory. Default ./build/<name>-operator.
	Out string
	// Binary is where the operator binary goes. Default
	// ./bin/<name>-operator.
	Binary string
	// SkipTests skips the generated tests.
	SkipTests bool
	// Progress receives a line per step with its duration, and the
	// tests' output. Default: discarded.
	Progress io.Writer
	// Go is the go command. Default "go".
	Go string
	// With are the Go modules the operator links (inrun build --operator
	// --with), for a Blueprint that names Go code: their versions are
	// checked before anything is generated, as package builder checks
	// them for an inrun, and the generated go.mod requires them.
	With []builder.With
	// NoCompile stops after go mod tidy (and, with With, the versions it
	// resolved checked again): no go vet, tests or go build.
	NoCompile bool
}

// Build is inrun build once the Blueprint is compiled: it generates the
// operator of bp (see Generate; files is the Blueprint's directory) into
// opts.Out, runs go mod tidy, go vet ./... and, unless opts.SkipTests, the
// generated tests, then builds the binary. A failed step's error holds its
// output.
func Build(ctx context.Context, bp *ir.Blueprint, files fs.FS, opts BuildOptions) (*Project, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	start := time.Now()
	typed := len(opts.With) > 0
	var mods []*builder.GoMod
	if typed {
		// First, in seconds: a module made for another controller-runtime
		// would fail to compile minutes from now, deep in someone else's
		// code.
		var err error
		if mods, err = builder.Check(ctx, opts.With); err != nil {
			return nil, err
		}
	}
	gen := Options{Module: opts.Module, Typed: typed}
	p, err := Generate(bp, files, gen)
	if err != nil {
		return nil, err
	}
	if opts.Out == "" {
		opts.Out = filepath.Join("build", p.Name)
	}
	if opts.Binary == "" {
		opts.Binary = filepath.Join("bin", p.Name)
	}
	binary, err := filepath.Abs(opts.Binary)
	if err != nil {
		return nil, err
	}
	step := func(name string, t time.Time) {
		fmt.Fprintf(opts.Progress, "  %-40s %s\n", name, since(t))
	}
	fmt.Fprintf(opts.Progress, "inrun build: the %s Blueprint becomes %s, in %s\n", p.Blueprint.Name, p.Name, opts.Out)
	if typed {
		step(fmt.Sprintf("check the versions of %d Go module(s)", len(mods)), start)
	}
	step(fmt.Sprintf("generate (%d of %d expressions in Go)", p.Compiled, p.Total), start)

	t := time.Now()
	if err := p.Write(opts.Out); err != nil {
		return nil, err
	}
	step("write, with third_party/inrun", t)

	run := func(stream bool, args ...string) error {
		t := time.Now()
		name := "go " + strings.Join(args, " ")
		if args[0] == "build" {
			name = "go build ./cmd"
		}
		cmd := exec.CommandContext(ctx, opts.Go, args...)
		cmd.Dir = opts.Out
		// A go.work above --out must not pull the project into a workspace.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		var out bytes.Buffer
		if stream {
			w := &prefixWriter{w: opts.Progress, prefix: "    "}
			defer w.Flush()
			// One writer for both, so that exec writes to it from one
			// goroutine at a time.
			both := io.MultiWriter(&out, w)
			cmd.Stdout, cmd.Stderr = both, both
		} else {
			cmd.Stdout, cmd.Stderr = &out, &out
		}
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			msg := strings.TrimSpace(out.String())
			if stream {
				msg = "its output is above"
			}
			return fmt.Errorf("%s in %s failed (%v):\n%s", name, opts.Out, err, msg)
		}
		step(name, t)
		return nil
	}
	if typed {
		t := time.Now()
		gen.Packages, err = link(ctx, opts, mods)
		if err != nil {
			return p, err
		}
		// Generate is deterministic: again, with the packages to import.
		if p, err = Generate(bp, files, gen); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(opts.Out, filepath.FromSlash(ComponentsFile)), p.Files[ComponentsFile], 0o644); err != nil {
			return p, err
		}
		step(fmt.Sprintf("link %d package(s) of the Go modules", len(gen.Packages)), t)
	}
	if err := run(false, "mod", "tidy"); err != nil {
		return p, err
	}
	if typed {
		// The modules' own dependencies may have raised controller-runtime
		// or a Kubernetes module; still before compiling.
		if err := builder.Recheck(opts.Out, opts.Out); err != nil {
			return p, err
		}
	}
	if opts.NoCompile {
		fmt.Fprintf(opts.Progress, "prepared %s in %s, not compiled (--no-compile)\n", opts.Out, since(start))
		return p, nil
	}
	if err := run(false, "vet", "./..."); err != nil {
		return p, err
	}
	if !opts.SkipTests {
		if err := run(true, "test", "./..."); err != nil {
			return p, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
		return p, err
	}
	if err := run(false, "build", "-o", binary, "./cmd"); err != nil {
		return p, err
	}
	fmt.Fprintf(opts.Progress, "built %s in %s\n", opts.Binary, since(start))
	return p, nil
}

func since(t time.Time) time.Duration {
	d := time.Since(t)
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// prefixWriter indents each line written through it.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return 0, err
		}
		p.buf = p.buf[i+1:]
	}
}

// Flush writes a last line without its newline.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.buf = nil
	}
}

// link adds the Go modules mods to the project written in opts.Out: its
// go.mod requires them, with their local replace directives (package
// builder's AddModules, as for an inrun built with --with), and its go.sum
// gets theirs. It returns their packages (builder.Packages), which
// ComponentsFile imports.
func link(ctx context.Context, opts BuildOptions, mods []*builder.GoMod) ([]string, error) {
	dir, err := filepath.Abs(opts.Out)
	if err != nil {
		return nil, err
	}
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return nil, err
	}
	if err := builder.AddModules(f, dir, mods); err != nil {
		return nil, err
	}
	f.Cleanup()
	if data, err = f.Format(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(gomod, data, 0o644); err != nil {
		return nil, err
	}
	sum := append(GoSum(), builder.Sums(mods)...)
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return nil, err
	}
	return builder.Packages(func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, opts.Go, args...)
		cmd.Dir = dir
		// -mod=mod: go list resolves what go mod tidy will record.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), opts.Out, err, stderr.Bytes())
		}
		return out, nil
	}, mods)
}
