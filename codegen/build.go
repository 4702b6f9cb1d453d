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
	// Modules are the Go modules the operator links, for a Blueprint that
	// names Go code (inrun build --operator --with: package builder's
	// Operator, which checks their versions first); nil for none. With
	// them the operator is typed (Options.Typed).
	Modules Modules
	// Chart is the operator's Helm chart; see Options.Chart.
	Chart map[string][]byte
	// NoCompile stops after go mod tidy (and, with Modules, the versions
	// it resolved checked again): no go vet, tests or go build.
	NoCompile bool
}

// Modules link Go modules into a generated operator. Package builder
// implements it, with the steps it builds an inrun with.
type Modules interface {
	// Link adds the modules to the project written in dir: its go.mod
	// requires them (with their replace directives), its go.sum gets
	// theirs. It returns their packages, which ComponentsFile imports.
	Link(ctx context.Context, dir, goCmd string) ([]string, error)
	// Recheck checks, before compiling, the versions go mod tidy resolved
	// in dir; shown is dir for messages.
	Recheck(dir, shown string) error
	// Len is how many modules there are, for the progress.
	Len() int
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
	typed := opts.Modules != nil
	gen := Options{Module: opts.Module, Typed: typed, Chart: opts.Chart}
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
		step(fmt.Sprintf("%d Go module(s), their versions checked", opts.Modules.Len()), start)
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
		dir, err := filepath.Abs(opts.Out)
		if err != nil {
			return p, err
		}
		if gen.Packages, err = opts.Modules.Link(ctx, dir, opts.Go); err != nil {
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
		if err := opts.Modules.Recheck(opts.Out, opts.Out); err != nil {
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
