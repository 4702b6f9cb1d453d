package builder_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/modfile"

	inrun "github.com/inrun/inrun"
	"github.com/inrun/inrun/builder"
)

// The test module: example.com/webapp registers reconciler webapp
// (package reconciler, with a name from an internal package) and
// transform size (package hooks), has a main package (cmd/tool), and
// replaces example.com/greeting with ../greeting in its go.mod.
const webapp = "example.com/webapp=testdata/webapp"

// scratch holds what the tests of this package build; removed by TestMain.
var scratch string

func TestMain(m *testing.M) {
	var err error
	if scratch, err = os.MkdirTemp("", "inrun-builder-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(scratch)
	os.Exit(code)
}

// built is an inrun built with the test module: once per test binary, as
// a build takes minutes on a small machine (every package, with
// -trimpath, the first time).
var built = sync.OnceValues(func() (string, error) {
	w, err := builder.ParseWith(webapp)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(scratch, "typed", "inrun")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	var progress bytes.Buffer
	_, err = builder.Build(context.Background(), builder.Options{
		With:     []builder.With{w},
		Dir:      filepath.Join(scratch, "build"),
		Binary:   bin,
		Progress: &progress,
	})
	if err != nil {
		return "", fmt.Errorf("%v\n%s", err, progress.Bytes())
	}
	return bin, nil
})

func builtInrun(t *testing.T) string {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// inrunCmd runs bin with args in dir and returns its combined output.
func inrunCmd(t *testing.T, dir, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBuiltInrunListsAndRunsTheModule: the inrun built with the module
// lists what it compiled in and checks a Blueprint that names it; a plain
// inrun cannot run that Blueprint.
func TestBuiltInrunListsAndRunsTheModule(t *testing.T) {
	bin := builtInrun(t)
	out, err := inrunCmd(t, ".", bin, "version", "--components")
	for _, want := range []string{
		"Built with: example.com/webapp\n",
		"\nexample.com/webapp@",
		"  reconciler webapp (example.com/webapp/reconciler)\n",
		"  transform size (example.com/webapp/hooks)\n",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("version --components = %v, want %q in\n%s", err, want, out)
		}
	}

	dir := typedBlueprint(t)
	out, err = inrunCmd(t, dir, bin, "check")
	if err != nil || !strings.Contains(out, "ok: webapp") || strings.Contains(out, "not compiled into") {
		t.Errorf("the built inrun: check = %v\n%s", err, out)
	}
	// The reconciler runs: simulate calls it in memory, and its status
	// comes from the module its go.mod replaces locally.
	out, err = inrunCmd(t, dir, bin, "simulate")
	if err != nil {
		t.Errorf("the built inrun: simulate = %v\n%s", err, out)
	}

	plain := filepath.Join(scratch, "plain", "inrun")
	if out, err := exec.Command("go", "build", "-o", plain, "../cmd/inrun").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/inrun: %v\n%s", err, out)
	}
	out, _ = inrunCmd(t, dir, plain, "check")
	if !strings.Contains(out, "names Go reconciler webapp, not compiled into this inrun") {
		t.Errorf("a plain inrun: check =\n%s", out)
	}
	out, err = inrunCmd(t, dir, plain, "simulate")
	if err == nil || !strings.Contains(out, `names Go code this inrun does not have: reconciler "webapp"`) {
		t.Errorf("a plain inrun: simulate = %v\n%s", err, out)
	}
}

// TestBuildIsReproducible: a second clean build from the same inputs (the
// build directory removed, the same paths) gives the same bytes.
func TestBuildIsReproducible(t *testing.T) {
	first := sum(t, builtInrun(t))
	if err := os.RemoveAll(filepath.Join(scratch, "build")); err != nil {
		t.Fatal(err)
	}
	w, _ := builder.ParseWith(webapp)
	bin := filepath.Join(scratch, "again", "inrun")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := builder.Build(context.Background(), builder.Options{
		With: []builder.With{w}, Dir: filepath.Join(scratch, "build"), Binary: bin,
	}); err != nil {
		t.Fatal(err)
	}
	if second := sum(t, bin); second != first {
		t.Errorf("two builds from the same inputs: sha256 %s and %s", first, second)
	}
}

// TestBuildRefusesSkewBeforeCompiling: a module requiring another
// controller-runtime minor is refused with both versions and the fix, and
// nothing is written.
func TestBuildRefusesSkewBeforeCompiling(t *testing.T) {
	cr := pins(t)["sigs.k8s.io/controller-runtime"]
	skewed := module(t, "example.com/skewed", "sigs.k8s.io/controller-runtime v0.19.4")
	ok, _ := builder.ParseWith(webapp)
	dir := filepath.Join(t.TempDir(), "build")
	_, err := builder.Build(context.Background(), builder.Options{
		With: []builder.With{ok, skewed}, Dir: dir, Binary: filepath.Join(t.TempDir(), "inrun"),
	})
	if err == nil || !strings.Contains(err.Error(), "example.com/skewed ("+skewed.Dir+"/go.mod) requires sigs.k8s.io/controller-runtime v0.19.4 (inrun has "+cr+")") ||
		!strings.Contains(err.Error(), "go get sigs.k8s.io/controller-runtime@"+cr) || strings.Contains(err.Error(), "example.com/webapp") {
		t.Errorf("Build with a skewed module = %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("Build with a skewed module wrote %s", dir)
	}
}

// TestGoModFile: the generated go.mod requires Inrun and the modules,
// replaces Inrun with third_party/inrun (over the module's own replace of
// it), a local module with its directory, and keeps the module's other
// replace directives, relative to the build directory; two modules that
// replace one path differently are refused.
func TestGoModFile(t *testing.T) {
	w, _ := builder.ParseWith(webapp)
	m, err := builder.ReadGoMod(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	data, err := builder.GoModFile(filepath.Join(root, "build"), []*builder.GoMod{m})
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string {
		abs, _ := filepath.Abs(p)
		r, _ := filepath.Rel(filepath.Join(root, "build"), abs)
		return filepath.ToSlash(r)
	}
	want := map[string]string{
		"github.com/inrun/inrun": "./third_party/inrun",
		"example.com/webapp":     rel("testdata/webapp"),
		"example.com/greeting":   rel("testdata/greeting"),
	}
	got := map[string]string{}
	for _, r := range f.Replace {
		got[r.Old.Path] = r.New.Path
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("replace = %v, want %v\n%s", got, want, data)
	}
	if f.Module.Mod.Path != builder.MainModule || len(f.Require) != 2 {
		t.Errorf("go.mod =\n%s", data)
	}
	own, _ := os.ReadFile(filepath.Join("testdata/webapp/go.mod"))
	if !bytes.Contains(own, []byte("replace github.com/inrun/inrun => ../../..")) {
		t.Errorf("the module's own go.mod changed:\n%s", own)
	}

	other := module(t, "example.com/other")
	gm := filepath.Join(other.Dir, "go.mod")
	src, _ := os.ReadFile(gm)
	src = append(src, "replace example.com/greeting => example.com/fork v1.0.0\n"...)
	if err := os.WriteFile(gm, src, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := builder.ReadGoMod(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = builder.GoModFile(filepath.Join(root, "build"), []*builder.GoMod{m, o})
	if err == nil || !strings.Contains(err.Error(), "replace example.com/greeting differently") {
		t.Errorf("GoModFile with conflicting replaces = %v", err)
	}
}

// TestCheckResolved: a pinned module that the modules' dependencies
// raised to another minor (what go mod tidy wrote) is refused with both
// versions and how to find who raised it; patch versions pass.
func TestCheckResolved(t *testing.T) {
	p := pins(t)
	cr, api := p["sigs.k8s.io/controller-runtime"], p["k8s.io/api"]
	gomod := func(reqs ...string) []byte {
		return []byte("module " + builder.MainModule + "\n\ngo 1.26\n\nrequire (\n\t" + strings.Join(reqs, "\n\t") + "\n)\n")
	}
	if err := builder.CheckResolved(p, "build/inrun", gomod("sigs.k8s.io/controller-runtime "+cr, "k8s.io/api "+api, "k8s.io/utils v0.0.0-20990101000000-000000000000")); err != nil {
		t.Errorf("CheckResolved at inrun's versions = %v", err)
	}
	err := builder.CheckResolved(p, "build/inrun", gomod("sigs.k8s.io/controller-runtime v0.99.0", "k8s.io/api "+api, "k8s.io/kubectl v0.98.1"))
	for _, want := range []string{
		"the modules' dependencies require sigs.k8s.io/controller-runtime v0.99.0 (inrun has " + cr + ")",
		"go mod graph | grep sigs.k8s.io/controller-runtime@v0.99.0, in build/inrun",
		"k8s.io/kubectl v0.98.1 (inrun has " + semverMinor(api) + ".x)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckResolved with raised versions = %v, want %q", err, want)
		}
	}
}

// semverMinor is v's vMAJOR.MINOR.
func semverMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	return parts[0] + "." + parts[1]
}

func sum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// typedBlueprint writes a Blueprint naming reconciler webapp, with the
// remote pack's CRD and custom resource and a simulate case expecting the
// test module's Result.
func typedBlueprint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"blueprint.yaml": `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: webapp
crd:
  file: manifests/crd.yaml
reconcile:
  go: {name: webapp}
  args:
    image: ${self.spec.image}
  resources:
    - {apiVersion: v1, kind: ConfigMap}
`,
		"test/simulate.yaml": `cases:
  - name: the Go reconciler's ConfigMap
    cr: ../manifests/cr.yaml
    expect:
      children:
        - id: remote.config
          match:
            metadata: {name: hello-webapp}
            data: {image: nginx:1.27}
      status:
        phase: Greeted
`,
	}
	for _, f := range []string{"manifests/crd.yaml", "manifests/cr.yaml"} {
		data, err := inrun.Source.ReadFile("packs/remote/" + f)
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(data)
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
