package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	inrun "github.com/inrun/inrun"
	"github.com/inrun/inrun/builder"
	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"
)

const typedBlueprint = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: webapp
crd:
  file: manifests/crd.yaml
reconcile:
  go: {name: %s}
  args:
    image: ${self.spec.image}
  resources:
    - {apiVersion: v1, kind: ConfigMap}
`

const typedSimulate = `cases:
  - name: the Go reconciler's ConfigMap
    cr: ../manifests/cr.yaml
    expect:
      children:
        - id: remote.config
          match:
            metadata: {name: hello-webapp}
            data: {image: nginx:1.27}
      status:
        phase: Configured
`

// remotePack is the remote pack's directory, found before tests change
// directory.
var remotePack, _ = filepath.Abs("../packs/remote")

// typedDir writes a typed Blueprint naming the Go reconciler name, with
// the remote pack's CRD and custom resource and a simulate case.
func typedDir(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"manifests/crd.yaml", "manifests/cr.yaml"} {
		data, err := os.ReadFile(filepath.Join(remotePack, f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, f), string(data))
	}
	write(t, filepath.Join(dir, "blueprint.yaml"), strings.Replace(typedBlueprint, "%s", name, 1))
	write(t, filepath.Join(dir, "test/simulate.yaml"), typedSimulate)
	return dir
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// withRegistry makes the CLI's registry reg for the test.
func withRegistry(t *testing.T, reg *components.Registry) {
	old := compiledIn
	compiledIn = reg
	t.Cleanup(func() { compiledIn = old })
}

// TestTypedBlueprintPlainInrun: a plain inrun checks a typed Blueprint's
// form, says it cannot run it, and refuses to simulate it, naming the
// reconciler and how to get an inrun that has it.
func TestTypedBlueprintPlainInrun(t *testing.T) {
	withRegistry(t, &components.Registry{})
	dir := typedDir(t, "webapp")
	out, err := run(t, dir, "check")
	if err != nil || !strings.Contains(out, "names Go reconciler webapp, not compiled into this inrun: it cannot run here") {
		t.Errorf("check = %v\n%s", err, out)
	}
	out, err = run(t, dir, "simulate")
	all := out
	if err != nil {
		all += err.Error()
	}
	if err == nil || !strings.Contains(all, `names Go code this inrun does not have: reconciler "webapp" (blueprint.yaml:8:14)`) || !strings.Contains(all, "build an inrun with the Go module that registers it") {
		t.Errorf("simulate = %v\n%s", err, out)
	}
	// inrun run refuses before it looks for a cluster.
	_, err = run(t, dir, "run", "--kubeconfig", filepath.Join(dir, "none"))
	if err == nil || !strings.Contains(err.Error(), `blueprint webapp names Go code this inrun does not have: reconciler "webapp"`) {
		t.Errorf("run = %v, want the Blueprint refused", err)
	}
	out, err = run(t, dir, "version", "--components")
	if err != nil || !strings.Contains(out, "No Go code is compiled in.") {
		t.Errorf("version --components = %v\n%s", err, out)
	}
}

// TestTypedBlueprintBuiltInrun: an inrun with the reconciler compiled in
// checks names against what it has (E0023 with did-you-mean), simulates
// the Blueprint with it, and lists it.
func TestTypedBlueprintBuiltInrun(t *testing.T) {
	reg := &components.Registry{}
	reg.RegisterReconciler("webapp", func(components.ReconcilerOptions) (sdk.Func, error) {
		return func(_ context.Context, req *sdk.Request) (*sdk.Result, error) {
			if req.Finalizing {
				return &sdk.Result{Done: true}, nil
			}
			name := sdk.Resource{Object: req.Object}.Name()
			return &sdk.Result{
				Status: map[string]any{"phase": "Configured"},
				Resources: []sdk.Resource{{ID: "config", Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name},
					"data": map[string]any{"image": req.Args["image"]},
				}}},
			}, nil
		}, nil
	})
	withRegistry(t, reg)
	dir := typedDir(t, "webapp")
	out, err := run(t, dir, "check")
	if err != nil || !strings.Contains(out, "names Go reconciler webapp, compiled in") {
		t.Errorf("check = %v\n%s", err, out)
	}
	out, err = run(t, dir, "simulate")
	if err != nil || !regexp.MustCompile(`: 1 passed, 0 failed`).MatchString(out) {
		t.Errorf("simulate = %v\n%s", err, out)
	}
	out, err = run(t, dir, "version", "--components")
	if err != nil || !strings.Contains(out, "  reconciler webapp (github.com/inrun/inrun/cli)") {
		t.Errorf("version --components = %v\n%s", err, out)
	}
	typo := typedDir(t, "webap")
	_, err = run(t, typo, "check")
	if err == nil || !strings.Contains(err.Error(), `blueprint.yaml:8:14: E0023 reconcile.go.name: no reconciler "webap" is compiled into this inrun; did you mean webapp?`) {
		t.Errorf("check of a misspelt name = %v", err)
	}
}

// TestBuildWithChecksVersions: inrun build --with refuses a module pinned
// to another controller-runtime minor before writing or compiling
// anything, naming it alone: for an inrun, with --no-compile (make
// registry), and for a typed Blueprint's operator. (Building with modules
// that agree is tested in package builder, which builds an inrun, and in
// package codegen, which builds an operator.)
func TestBuildWithChecksVersions(t *testing.T) {
	gomod, _ := inrun.Source.ReadFile("go.mod")
	pins, err := builder.Pinned(gomod)
	if err != nil {
		t.Fatal(err)
	}
	cr := pins["sigs.k8s.io/controller-runtime"]
	for _, extra := range [][]string{nil, {"--no-compile"}, {"--operator"}, {"--operator", "--no-compile"}} {
		t.Run(strings.Join(append([]string{"build"}, extra...), " "), func(t *testing.T) {
			dir := typedDir(t, "webapp")
			write(t, filepath.Join(dir, "skewed/go.mod"), "module example.com/skewed\n\ngo 1.26\n\nrequire sigs.k8s.io/controller-runtime v0.19.4\n")
			write(t, filepath.Join(dir, "agrees/go.mod"), "module example.com/agrees\n\ngo 1.26\n\nrequire sigs.k8s.io/controller-runtime "+cr+"\n")
			_, err = run(t, dir, append([]string{"build", "--with", "example.com/skewed=./skewed", "--with", "example.com/agrees=./agrees"}, extra...)...)
			if err == nil || !strings.Contains(err.Error(), "example.com/skewed (skewed/go.mod) requires sigs.k8s.io/controller-runtime v0.19.4 (inrun has "+cr+")") || !strings.Contains(err.Error(), "Fix: in example.com/skewed, run go get sigs.k8s.io/controller-runtime@"+cr) {
				t.Errorf("build --with a skewed module = %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "example.com/agrees (") {
				t.Errorf("build --with names the module that agrees: %v", err)
			}
			for _, p := range []string{"build", "bin"} {
				if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
					t.Errorf("build --with a skewed module wrote %s", p)
				}
			}
		})
	}
}

// webappModule is builder's test module: reconciler webapp, transform
// size, and a replace of a local module in its go.mod.
var webappModule, _ = filepath.Abs("../builder/testdata/webapp")

// TestBuildNoCompile: --no-compile generates the main module (or the
// operator's project), tidies it and checks its versions again, but
// compiles nothing: no binary is written.
func TestBuildNoCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("go mod tidy resolves controller-runtime's modules")
	}
	for _, tc := range []struct {
		args        []string
		file, gomod string
		want        []string
		// chart is the directory of the operator's Helm chart, if any.
		chart string
	}{
		{[]string{"build"}, "build/inrun/main.go", "build/inrun/go.mod", []string{`_ "example.com/webapp/hooks"`, `_ "example.com/webapp/reconciler"`, "cli.Main()"}, ""},
		{[]string{"build", "--operator", "--image", "example/webapp-operator:v1"}, "build/webapp-operator/" + codegen.ComponentsFile, "build/webapp-operator/go.mod", []string{`_ "example.com/webapp/hooks"`, `_ "example.com/webapp/reconciler"`}, "build/webapp-operator/" + codegen.ChartDir},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := typedDir(t, "webapp")
			out, err := run(t, dir, append(tc.args, "--with", "example.com/webapp="+webappModule, "--no-compile")...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out, "not compiled") {
				t.Errorf("the progress does not say it compiled nothing:\n%s", out)
			}
			src, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(src), w) {
					t.Errorf("%s does not hold %s:\n%s", tc.file, w, src)
				}
			}
			// Tidied: the module's own dependency is resolved.
			mod, err := os.ReadFile(filepath.Join(dir, tc.gomod))
			if err != nil || !strings.Contains(string(mod), "example.com/greeting") {
				t.Errorf("go.mod after go mod tidy = %v\n%s", err, mod)
			}
			if _, err := os.Stat(filepath.Join(dir, "bin")); err == nil {
				t.Errorf("--no-compile made bin/")
			}
			if tc.chart != "" {
				// The operator's chart, running --image, passes helm lint;
				// package install renders it (TestChartLintsAndRendersTheBase).
				chart := filepath.Join(dir, tc.chart)
				for _, m := range lint.RunAll(chart, nil, "webapp-operator-system").Messages {
					if m.Severity >= support.WarningSev {
						t.Errorf("helm lint %s: %v", tc.chart, m)
					}
				}
				values, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
				if err != nil || !strings.Contains(string(values), "repository: example/webapp-operator\n") || !strings.Contains(string(values), `tag: "v1"`) {
					t.Errorf("the chart's values.yaml does not run --image: %v\n%s", err, values)
				}
			}
		})
	}
}

// TestBuildRefusesTypedBlueprint: inrun build (an operator, no --with) of a
// Blueprint that names Go code says where it names it and the command that
// links its module, before writing anything.
func TestBuildRefusesTypedBlueprint(t *testing.T) {
	dir := typedDir(t, "webapp")
	_, err := run(t, dir, "build", "--skip-tests")
	if err == nil || !strings.Contains(err.Error(), `blueprint.yaml:8:14: the Blueprint names Go reconciler "webapp"`) || !strings.Contains(err.Error(), "inrun build --operator --with MODULE[@VERSION][=PATH]") {
		t.Errorf("build of a typed Blueprint = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "build")); err == nil {
		t.Errorf("build of a typed Blueprint wrote build/")
	}
}
