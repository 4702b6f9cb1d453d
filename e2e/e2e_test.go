package e2e_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/packs"
	runtimecontroller "github.com/inrun/inrun/runtime-lib/controller"
)

func TestMain(m *testing.M) {
	clustertest.Main(m, localcluster.Options{Mode: localcluster.Full})
}

// run runs file on the shared cluster with the in-process runtime and
// returns the report and what Run printed.
func run(t *testing.T, bp *ir.Blueprint, file string) (*e2e.Report, string) {
	t.Helper()
	c := clustertest.Shared(t)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := e2e.Run(ctx, e2e.Options{Blueprint: bp, File: file, Config: c.RESTConfig(), Out: &out})
	t.Logf("output of inrun e2e for %s:\n%s", file, out.String())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep, out.String()
}

// summaryRE is the last line Run prints.
var summaryRE = regexp.MustCompile(`(?m)^(.+): (\d+) passed, (\d+) failed in \S+$`)

func assertAllPass(t *testing.T, bp *ir.Blueprint, file string) {
	t.Helper()
	f, err := e2e.Load(file, bp)
	if err != nil {
		t.Fatal(err)
	}
	rep, out := run(t, bp, file)
	if len(rep.Cases) != len(f.Cases) {
		t.Errorf("ran %d cases, the file has %d", len(rep.Cases), len(f.Cases))
	}
	for _, c := range rep.Cases {
		if !c.Passed() {
			t.Errorf("case %q failed (see the output above)", c.Name)
		}
	}
	m := summaryRE.FindStringSubmatch(out)
	if m == nil || m[1] != file || m[2] != strconv.Itoa(len(f.Cases)) || m[3] != "0" {
		t.Errorf("no summary line %q: N passed, 0 failed in D; got %q", file, m)
	}
}

// TestWebsitePack runs the canonical pack's e2e.yaml as inrun init writes it.
func TestWebsitePack(t *testing.T) {
	bp, dir := websiteBlueprint(t)
	assertAllPass(t, bp, filepath.Join(dir, "test", "e2e.yaml"))
}

// TestDeclarativeExamples runs every declarative example's e2e.yaml.
func TestDeclarativeExamples(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("declarative", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ex := range packs.Examples("declarative") {
		t.Run(ex, func(t *testing.T) {
			exDir := filepath.Join(dir, filepath.FromSlash(ex))
			bp, err := compiler.CompileFile(filepath.Join(exDir, "blueprint.yaml"), compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			assertAllPass(t, bp, filepath.Join(exDir, "test", "e2e.yaml"))
		})
	}
}

// TestRemotePack runs the remote pack's e2e.yaml once per reconciler
// language: each run starts that reconciler as a real process, from the
// file's reconciler block with its command replaced, on a free port.
func TestRemotePack(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("remote", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "test", "e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []struct {
		name    string
		command string
		tools   []string
	}{
		{"go", "[go, run, ./reconcilers/go/main.go]", []string{"go"}},
		{"python", "[python3, reconcilers/python/reconciler.py]", []string{"python3"}},
		{"bash", "[bash, reconcilers/bash/reconciler.sh]", []string{"bash", "socat", "jq"}},
	} {
		t.Run(lang.name, func(t *testing.T) {
			for _, tool := range lang.tools {
				if _, err := exec.LookPath(tool); err != nil {
					msg := "the " + lang.name + " reconciler needs " + tool + ", which is not installed (.ci/run installs it: apt-get install " + tool + ")"
					if os.Getenv(clustertest.EnvRequireAssets) == "1" {
						t.Fatal(msg)
					}
					t.Skip(msg + "; " + clustertest.EnvRequireAssets + "=1 makes this a failure")
				}
			}
			port := clustertest.FreePort(t)
			file := filepath.Join(dir, "test", "e2e-"+lang.name+".yaml")
			text := string(src)
			for old, repl := range map[string]string{
				"  command: [python3, reconcilers/python/reconciler.py]\n": "  command: " + lang.command + "\n",
				"http://127.0.0.1:18089/reconcile":                         "http://127.0.0.1:" + port + "/reconcile",
				`env: {PORT: "18089"}`:                                     `env: {PORT: "` + port + `"}`,
			} {
				if strings.Count(text, old) != 1 {
					t.Fatalf("the pack's e2e.yaml no longer has %q once; update this test", old)
				}
				text = strings.Replace(text, old, repl, 1)
			}
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := e2e.Load(file, bp)
			if err != nil {
				t.Fatal(err)
			}
			var out, reconcilerOut bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			start := time.Now()
			rep, err := e2e.Run(ctx, e2e.Options{
				Blueprint: bp,
				File:      file,
				Config:    clustertest.Shared(t).RESTConfig(),
				// The same Blueprint runs once per language.
				Runtime:          &e2e.InProcess{Blueprints: []*ir.Blueprint{bp}, SkipNameValidation: true},
				ReconcilerOutput: &reconcilerOut,
				Out:              &out,
			})
			t.Logf("output of inrun e2e (%s):\n%s\nthe reconciler's output:\n%s", time.Since(start).Round(100*time.Millisecond), out.String(), reconcilerOut.String())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(rep.Cases) != len(f.Cases) || rep.Failed() != 0 {
				t.Errorf("%d of %d cases passed; want every one", rep.Passed(), len(f.Cases))
			}
			// The reconciler was called, and told the WebApp was going.
			for _, want := range []string{"reconcile e2e-", ": deployment, service", ": deployment\n", "finalizing e2e-"} {
				if !strings.Contains(reconcilerOut.String(), want) {
					t.Errorf("the reconciler's output lacks %q", want)
				}
			}
		})
	}
}

const wrongExpectation = `cases:
  - name: seven replicas
    cr: ../manifests/cr.yaml
    steps:
      - timeout: 2s
        expect:
          objects:
            - apiVersion: apps/v1
              kind: Deployment
              name: hello-website
              match:
                spec: {replicas: 7}
      - delete: true
        expect:
          absent:
            - {apiVersion: apps/v1, kind: Deployment, name: hello-website}
`

// TestWrongExpectationFails checks that a case whose expectation cannot
// hold fails once its step's timeout runs out, saying which field, what was
// expected and what was observed, and skips the steps after it.
func TestWrongExpectationFails(t *testing.T) {
	bp, dir := renamedWebsite(t, "website-wrong-expectation")
	file := filepath.Join(dir, "test", "wrong.yaml")
	if err := os.WriteFile(file, []byte(wrongExpectation), 0o644); err != nil {
		t.Fatal(err)
	}

	rep, out := run(t, bp, file)
	if rep.Passed() != 0 || rep.Failed() != 1 {
		t.Fatalf("%d passed, %d failed; want the case to fail", rep.Passed(), rep.Failed())
	}
	steps := rep.Cases[0].Steps
	if len(steps) != 2 {
		t.Fatalf("%d step results, want 2", len(steps))
	}
	s := steps[0]
	if s.Err != nil || len(s.Failures) != 1 {
		t.Fatalf("step 1: error %v, failures %v; want one failed expectation", s.Err, s.Failures)
	}
	const want = "spec.replicas: expected 7, got 2"
	if f := s.Failures[0]; f.What != "apps/v1 Deployment hello-website" || len(f.Problems) != 1 || f.Problems[0] != want {
		t.Errorf("failure = %q, want apps/v1 Deployment hello-website: %s", f, want)
	}
	if s.Duration < 2*time.Second || s.Duration > 10*time.Second {
		t.Errorf("step 1 took %s; want its 2s timeout, and not much more", s.Duration)
	}
	if !steps[1].Skipped {
		t.Errorf("step 2 ran after step 1 failed")
	}
	for _, line := range []string{
		"  FAIL  step 1: expect: not within 2s; last observed:",
		want,
		"the CR's conditions:",
		"  skip  step 2: delete",
		"FAIL  seven replicas (",
		file + ": 0 passed, 1 failed in ",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q", line)
		}
	}
}

// TestUnservedKindStopsBeforeTheRuntime checks that on an existing cluster
// a kind it does not serve is reported, naming the case and the field,
// before the runtime starts or any case runs.
func TestUnservedKindStopsBeforeTheRuntime(t *testing.T) {
	bp, dir := websiteBlueprint(t)
	c := clustertest.Shared(t)
	file := filepath.Join(dir, "test", "widget.yaml")
	err := os.WriteFile(file, []byte(`cases:
  - name: widgets
    cr: ../manifests/cr.yaml
    steps:
      - expect:
          objects:
            - {apiVersion: widgets.example.com/v1, kind: Widget, name: w}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err = e2e.Run(context.Background(), e2e.Options{Blueprint: bp, File: file, Config: c.RESTConfig(), Out: &out})
	list := diag.All(err)
	if len(list) != 1 {
		t.Fatalf("Run error = %v; want one problem", err)
	}
	if got := list[0].Error(); !strings.Contains(got, `widget.yaml:7:15: E0010 case "widgets": steps[0].expect.objects[0]: apiVersion widgets.example.com/v1, kind Widget: the cluster does not serve this kind`) {
		t.Errorf("problem = %s", got)
	}
	if out.Len() != 0 {
		t.Errorf("Run printed before reporting the file's problem:\n%s", out.String())
	}
}

// writingRuntime is the in-process runtime with metrics that say each of
// its reconciles wrote once: what a Blueprint that is never at rest looks
// like to the idle check.
type writingRuntime struct{ *e2e.InProcess }

func (w writingRuntime) Activity(ctx context.Context) (runtimecontroller.Activity, error) {
	a, err := w.InProcess.Activity(ctx)
	a.Writes += a.Reconciles
	return a, err
}

const idleCase = `cases:
  - name: two replicas
    cr: ../manifests/cr.yaml
    steps:
      - expect:
          objects:
            - apiVersion: apps/v1
              kind: Deployment
              name: hello-website
              match:
                spec: {replicas: 2}
`

// TestIdleCheck runs one step with the real runtime, whose reconciles of a
// converged CR write nothing, and with one whose every reconcile writes:
// the idle check passes the first and fails the second, saying why.
func TestIdleCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		writing bool
	}{{"at-rest", false}, {"writing", true}} {
		t.Run(tc.name, func(t *testing.T) {
			bp, dir := renamedWebsite(t, "website-idle-"+tc.name)
			file := filepath.Join(dir, "test", "idle.yaml")
			if err := os.WriteFile(file, []byte(idleCase), 0o644); err != nil {
				t.Fatal(err)
			}
			var rt e2e.Runtime = &e2e.InProcess{Blueprints: []*ir.Blueprint{bp}}
			if tc.writing {
				rt = writingRuntime{&e2e.InProcess{Blueprints: []*ir.Blueprint{bp}}}
			}
			var out bytes.Buffer
			rep, err := e2e.Run(context.Background(), e2e.Options{Blueprint: bp, File: file, Config: clustertest.Shared(t).RESTConfig(), Runtime: rt, Out: &out})
			t.Logf("output:\n%s", out.String())
			if err != nil {
				t.Fatal(err)
			}
			step := rep.Cases[0].Steps[0]
			if !tc.writing {
				if !step.Passed() {
					t.Errorf("the real runtime failed the idle check: %v %v", step.Err, step.Failures)
				}
				return
			}
			if len(step.Failures) != 1 || step.Failures[0].What != "idle writes" || !strings.Contains(step.Failures[0].String(), "every one of 8 reconciles of the converged CR wrote") {
				t.Errorf("failures = %v; want the idle check's", step.Failures)
			}
		})
	}
}

// degradedBlueprint makes a ConfigMap named by the CR's spec, which the
// API server refuses for a name that is no DNS subdomain: every reconcile
// fails, and records a Warning Event.
const degradedBlueprint = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: degraded
schema:
  apiVersion: v1
  group: e2e.inrun.dev
  kind: Named
  spec:
    name: string
onReconcile:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${self.spec.name}
`

const degradedCase = `cases:
  - name: refused
    object: {apiVersion: e2e.inrun.dev/v1, kind: Named, metadata: {name: bad}, spec: {name: Not_A_Name}}
    steps:
      - expect:
          status:
            conditions: !contains [{type: Degraded, status: "True"}]
`

// TestIdleCheckSkipsDegraded checks that a step whose CR is Degraded, as
// it expects, passes without the idle check, and says so: a failing
// reconcile is retried, each recording its Warning Event, so no reconcile
// of it writes nothing (the step failed on "every one of 8 reconciles of
// the converged CR wrote").
func TestIdleCheckSkipsDegraded(t *testing.T) {
	dir := t.TempDir()
	bpFile, file := filepath.Join(dir, "blueprint.yaml"), filepath.Join(dir, "e2e.yaml")
	for name, src := range map[string]string{bpFile: degradedBlueprint, file: degradedCase} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bp, err := compiler.CompileFile(bpFile, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, out := run(t, bp, file)
	step := rep.Cases[0].Steps[0]
	if !step.Passed() || !strings.Contains(step.IdleSkipped, "Degraded") {
		t.Errorf("step: passed %v, failures %v, idle check skipped %q; want it passed, the idle check skipped as Degraded", step.Passed(), step.Failures, step.IdleSkipped)
	}
	if !strings.Contains(out, "no idle check: the CR is Degraded") {
		t.Errorf("output does not say the idle check did not run:\n%s", out)
	}
}

const refusals = `timeout: 30s
cases:
  - name: a negative replica count is refused
    object: {apiVersion: example.inrun.dev/v1, kind: Website, metadata: {name: neg}, spec: {replicas: -1}}
    steps:
      - expect: {refused: [spec.replicas, greater than or equal to 0]}
  - name: a patch is refused, and the CR stays as it was
    cr: website-cr.yaml
    steps:
      - patch: {spec: {replicas: -3}}
        expect: {refused: [spec.replicas]}
      - expect: {status: {readyReplicas: 2}}
  - name: a valid CR expected refused
    object: {apiVersion: example.inrun.dev/v1, kind: Website, metadata: {name: fine}, spec: {replicas: 1}}
    steps:
      - expect: {refused: [spec.replicas]}
  - name: refused, but not as said
    object: {apiVersion: example.inrun.dev/v1, kind: Website, metadata: {name: neg}, spec: {replicas: -1}}
    steps:
      - expect: {refused: [spec.image]}
`

// TestRefused checks expect.refused on a real API server: a CR and a
// patch the CRD's schema refuses pass when the message says what the
// case lists, and a CR taken, or refused for another reason, fails.
func TestRefused(t *testing.T) {
	bp, dir := renamedWebsite(t, "website-refused")
	file := filepath.Join(dir, "test", "refused.yaml")
	if err := os.WriteFile(file, []byte(refusals), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test", "website-cr.yaml"), []byte("apiVersion: example.inrun.dev/v1\nkind: Website\nmetadata: {name: hello}\nspec: {replicas: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, out := run(t, bp, file)
	if strings.Contains(out, "step 1: expect: not within") {
		t.Errorf("a refusal is judged at once, yet the output speaks of a wait:\n%s", out)
	}
	want := []string{"", "", "the CR: was not refused: the API server took it", `refused, but the message does not say "spec.image"`}
	if len(rep.Cases) != len(want) {
		t.Fatalf("%d cases ran, want %d", len(rep.Cases), len(want))
	}
	for i, c := range rep.Cases {
		var got []string
		for _, s := range c.Steps {
			for _, f := range s.Failures {
				got = append(got, f.String())
			}
		}
		if c.Err != nil || (want[i] == "") != c.Passed() || !strings.Contains(strings.Join(got, "\n"), want[i]) {
			t.Errorf("case %q: error %v, failures %q; want %q", c.Name, c.Err, got, want[i])
		}
	}
}

// renamedWebsite is the website pack's Blueprint under another name:
// controller-runtime allows a controller name once per process, and
// TestWebsitePack runs one named website.
func renamedWebsite(t *testing.T, name string) (*ir.Blueprint, string) {
	t.Helper()
	_, dir := websiteBlueprint(t)
	bpFile := filepath.Join(dir, "blueprint.yaml")
	src, err := os.ReadFile(bpFile)
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("name: website\n"), []byte("name: "+name+"\n"), 1)
	bp, err := compiler.Compile(load.Bytes(bpFile, src), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bp, dir
}
