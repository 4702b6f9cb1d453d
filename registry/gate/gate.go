package gate

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/inrun/inrun/builder"
	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/simulate"
)

// MaxPatternSize bounds the bytes of one pattern: a pattern is text, and a
// stray binary in its directory should be a clear error, not an upload.
const MaxPatternSize = 16 << 20

// Collect reads the pattern whose Blueprint is at blueprintPath: the
// Blueprint (as registry.BlueprintFile), every file it names, and every
// other file of its directory tree but hidden ones (names starting with
// ".") and Inrun's generated output (inrun build's project, inrun install's
// chart): test/, README.md, and what the tests name (manifests/cr.yaml, a
// reconciler). A Blueprint that does not compile, a named file outside its
// directory, a symbolic link, or more than MaxPatternSize bytes is an
// error.
func Collect(blueprintPath string) (map[string][]byte, error) {
	src, err := load.File(blueprintPath)
	if err != nil {
		return nil, err
	}
	rec := &recorder{inner: src.Files, read: map[string][]byte{}}
	src.Files = rec
	if _, err := compiler.Compile(src, compiler.Options{}); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	var l diag.List
	for name, data := range rec.read {
		clean := path.Clean(filepath.ToSlash(name))
		if filepath.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
			l.Add(diag.Pos{File: blueprintPath}, diag.InvalidValue, "a pattern carries only the files of its Blueprint's directory: move the file there and name it from there",
				"the Blueprint names %s, outside its directory", name)
			continue
		}
		files[clean] = data
	}
	dir := filepath.Dir(blueprintPath)
	self, _ := filepath.Abs(blueprintPath)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if p != dir && d.IsDir() && generated(p) {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if abs, _ := filepath.Abs(p); abs == self {
			return nil
		}
		if !d.Type().IsRegular() {
			l.Add(diag.Pos{File: p}, diag.UnreadableFile, "a pattern carries files: copy it in, or move it out of the directory", "not a regular file (a symbolic link?)")
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		l.Add(diag.Pos{File: dir}, diag.UnreadableFile, "", "cannot read the pattern's directory: %v", err)
	}
	// The Blueprint goes by its pattern name, whatever its file is called.
	files[registry.BlueprintFile] = src.Data
	size, largest := 0, ""
	for name, data := range files {
		size += len(data)
		if largest == "" || len(data) > len(files[largest]) {
			largest = name
		}
	}
	if size > MaxPatternSize {
		l.Add(diag.Pos{File: filepath.Join(dir, filepath.FromSlash(largest))}, diag.InvalidValue, "move what the pattern does not need out of its directory",
			"the pattern holds %d bytes, more than %d; this, its largest file, holds %d", size, MaxPatternSize, len(files[largest]))
	}
	return files, l.Err()
}

// generated reports whether dir holds what an Inrun generator wrote
// (inrun build's project, inrun build --with's, inrun install's chart or
// base): made again from the pattern, so never part of it.
func generated(dir string) bool {
	return codegen.HoldsOutput(dir) || builder.HoldsOutput(dir) || install.HoldsOutput(dir)
}

// recorder keeps every file the compiler reads through it.
type recorder struct {
	inner load.Files
	read  map[string][]byte
}

func (r *recorder) ReadFile(name string) ([]byte, error) {
	data, err := r.inner.ReadFile(name)
	if err == nil {
		r.read[name] = data
	}
	return data, err
}

func (r *recorder) Path(name string) string { return r.inner.Path(name) }

// Options configures Test.
type Options struct {
	// Out receives each case's result as it comes.
	Out io.Writer
	// AssetsDir holds the control plane binaries; BuildAssets builds them
	// when they are missing.
	AssetsDir   string
	BuildAssets bool
	// Log receives the runtime's logs during e2e. Zero discards them.
	Log logr.Logger
	// SkipE2E runs simulate only: the Results' E2E ran no case, so they
	// are registry.Results.SimulateOnly at best, which do not verify.
	SkipE2E bool
}

// Test runs the pattern's simulate and e2e cases on exactly files, and
// returns their results. Failing cases are in the Results, not an error;
// the error is for what kept the tests from running.
func Test(ctx context.Context, files map[string][]byte, opts Options) (registry.Results, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	res := registry.Results{InrunVersion: registry.InrunVersion(), KubernetesVersion: assets.KubernetesVersion}
	dir, err := os.MkdirTemp("", "inrun-pattern-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return res, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return res, err
		}
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, registry.BlueprintFile), compiler.Options{})
	if err != nil {
		return res, err
	}
	simFile := path.Join(registry.TestDir, "simulate.yaml")
	e2eFile := path.Join(registry.TestDir, "e2e.yaml")
	for _, f := range []string{simFile, e2eFile} {
		if _, ok := files[f]; !ok {
			return res, fmt.Errorf("the pattern has no %s: a pattern is pushed with its tests, and both simulate and e2e must pass; write it (docs/simulate.md, docs/e2e.md)", f)
		}
	}

	fmt.Fprintf(opts.Out, "Running %s (simulate)\n", simFile)
	if res.Simulate, err = runSimulate(ctx, bp, filepath.Join(dir, filepath.FromSlash(simFile)), opts.Out); err != nil {
		return res, err
	}
	res.Simulate.File = simFile
	if res.Simulate.Passed != res.Simulate.Cases || opts.SkipE2E {
		// e2e would take a cluster's start to learn nothing new.
		res.Finished = time.Now().UTC().Truncate(time.Second)
		return res, nil
	}

	fmt.Fprintf(opts.Out, "Running %s (e2e, on a local control plane %s)\n", e2eFile, assets.KubernetesVersion)
	rep, err := e2e.Run(ctx, e2e.Options{
		Blueprint:   bp,
		File:        filepath.Join(dir, filepath.FromSlash(e2eFile)),
		AssetsDir:   opts.AssetsDir,
		BuildAssets: opts.BuildAssets,
		Runtime:     &e2e.InProcess{Blueprints: ir.WithUsed([]*ir.Blueprint{bp}), Log: opts.Log},
		Out:         opts.Out,
	})
	if err != nil {
		return res, err
	}
	res.E2E = registry.Suite{File: e2eFile, Cases: len(rep.Cases), Passed: rep.Passed(), Duration: rep.Duration.Round(time.Millisecond).String()}
	res.Finished = time.Now().UTC().Truncate(time.Second)
	return res, nil
}

func runSimulate(ctx context.Context, bp *ir.Blueprint, file string, out io.Writer) (registry.Suite, error) {
	var s registry.Suite
	sim, err := simulate.New(bp)
	if err != nil {
		return s, err
	}
	f, err := sim.Load(file)
	if err != nil {
		return s, err
	}
	stop, err := sim.Serve(ctx, f)
	if err != nil {
		return s, err
	}
	defer func() { _ = stop() }()
	start := time.Now()
	for i := range f.Cases {
		c := &f.Cases[i]
		r := sim.RunCase(ctx, f, c)
		s.Cases++
		if r.Passed() {
			s.Passed++
			fmt.Fprintf(out, "PASS  %s\n", c.Name)
			continue
		}
		fmt.Fprintf(out, "FAIL  %s\n", c.Name)
		if r.Err != nil {
			fmt.Fprintf(out, "  error: %v\n", r.Err)
		}
		for _, msg := range r.Failures {
			fmt.Fprintf(out, "  %s\n", msg)
		}
	}
	s.Duration = time.Since(start).Round(time.Millisecond).String()
	return s, nil
}
