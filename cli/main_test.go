package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inrun/inrun/packs"
)

// run executes the inrun CLI in dir, as a user would from a shell, and
// returns its output and error.
func run(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	t.Chdir(dir)
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestInitThenSimulateEveryPack is the newcomer's first minute: init a
// pack, then simulate every example in it.
func TestInitThenSimulateEveryPack(t *testing.T) {
	for _, p := range packs.List() {
		t.Run(p.Name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "demo")
			if out, err := run(t, t.TempDir(), "init", dir, "--pack", p.Name); err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			for _, ex := range packs.Examples(p.Name) {
				if packs.GoModule(p.Name, ex) {
					continue // needs its own inrun: TestTypedPack builds it
				}
				out, err := run(t, filepath.Join(dir, ex), "simulate")
				if err != nil {
					t.Errorf("%s: simulate failed: %v\n%s", ex, err, out)
					continue
				}
				if !regexp.MustCompile(`: [1-9]\d* passed, 0 failed`).MatchString(out) {
					t.Errorf("%s: simulate summary missing or wrong:\n%s", ex, out)
				}
			}
		})
	}
}

const badBlueprint = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: website
crd:
  file: manifests/crd.yaml
onReconcile:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${service.metadata.name}
      spec:
        replicas: ${self.spec.replcas}
        paused: "yes"
  - id: service
    template:
      apiVersion: v1
      kind: Service
      metadata:
        name: ${deployment.metadata.name}
      spec:
        clusterIP: ${depl.spec.clusterIP}
`

// TestBadBlueprintListsEveryMistake checks that simulate and render stop
// on a Blueprint with several mistakes and name each with line and column.
func TestBadBlueprintListsEveryMistake(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, dir, "init", dir, "--force"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "blueprint.yaml"), []byte(badBlueprint), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`blueprint.yaml:8:9: E0009 children reference each other in a cycle: deployment → service → deployment; break the cycle: one of these children must not read the other`,
		`blueprint.yaml:15:31: E0014 unknown field self.spec.replcas in ${self.spec.replcas}; did you mean self.spec.replicas?`,
		`blueprint.yaml:16:17: E0017 spec.paused of Deployment must be a boolean, not the string "yes"`,
		`blueprint.yaml:24:22: E0008 unknown reference "depl" in ${depl.spec.clusterIP}; did you mean deployment?`,
	}
	for _, args := range [][]string{{"simulate"}, {"render", "manifests/cr.yaml"}, {"check"}, {"rbac"}} {
		_, err := run(t, dir, args...)
		if err == nil {
			t.Errorf("inrun %s accepted a broken Blueprint", strings.Join(args, " "))
			continue
		}
		if exitCode(err) == 0 || errors.Is(err, errReported) {
			t.Errorf("inrun %s: error %v would not be printed or would exit 0", args[0], err)
		}
		got := strings.Split(err.Error(), "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("inrun %s errors:\n%s\nwant:\n%s", args[0], err, strings.Join(want, "\n"))
		}
	}
}

func TestRBACNamesExactlyTheKindsUsed(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, dir, "init", dir, "--force"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	out, err := run(t, dir, "rbac")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: ClusterRole", "- websites\n", "- websites/status", "- websites/finalizers", "- deployments\n", "- services\n", "- leases\n", "- events\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("rbac output lacks %q:\n%s", want, out)
		}
	}
	// Leases in the leader-election namespace only, never cluster-wide.
	clusterRole, leases, _ := strings.Cut(out, "\n---\n")
	if strings.Contains(clusterRole, "leases") || !strings.Contains(leases, "kind: Role\n") || !strings.Contains(leases, "namespace: default\n") || !strings.Contains(leases, "- leases\n") {
		t.Errorf("want the ClusterRole without Leases, then a Role in default with them:\n%s", out)
	}
	resources := regexp.MustCompile(`(?m)^  - (\S+)$`).FindAllStringSubmatch(out, -1)
	allowed := map[string]bool{"websites": true, "websites/status": true, "websites/finalizers": true, "deployments": true, "services": true, "events": true, "leases": true}
	for _, m := range resources {
		if strings.Contains(m[1], ".") || m[1] == `""` || m[1] == "apps" || m[1] == "example.inrun.dev" {
			continue // an API group
		}
		if !allowed[m[1]] && !isVerb(m[1]) {
			t.Errorf("rbac grants %q, which the Blueprint does not use", m[1])
		}
	}
}

func isVerb(s string) bool {
	switch s {
	case "get", "list", "watch", "create", "patch", "update", "delete":
		return true
	}
	return false
}

func TestSimulateReportsFailingCase(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, dir, "init", dir, "--force"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	cases := `cases:
  - name: wrong replicas
    cr: ../manifests/cr.yaml
    expect:
      children:
        - id: deployment
          match: {spec: {replicas: 7}}
`
	if err := os.WriteFile(filepath.Join(dir, "test", "simulate.yaml"), []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, dir, "simulate")
	if !errors.Is(err, errReported) {
		t.Fatalf("simulate with a failing case: err = %v, want a reported failure", err)
	}
	for _, want := range []string{"FAIL  wrong replicas", `"replicas": float64(7)`, `"replicas": float64(2)`, "0 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRenderIsOffline: render of a Blueprint with a remote reconciler calls
// nothing unless told what answers; with a recorded reply it shows what
// the reply makes of the custom resource.
func TestRenderIsOffline(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("remote", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, dir, "render", "manifests/cr.yaml")
	if err == nil || !strings.Contains(err.Error(), "render is offline: pass --reply FILE") {
		t.Fatalf("render without a reply: %v", err)
	}
	reply := filepath.Join(dir, "reply.yaml")
	if err := os.WriteFile(reply, []byte("status: {phase: Recorded}\nresources:\n  - {id: svc, apiVersion: v1, kind: Service, metadata: {name: hello}, spec: {ports: [{port: 80}]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, dir, "render", "manifests/cr.yaml", "--reply", reply, "--rbac=false")
	if err != nil {
		t.Fatalf("render --reply: %v\n%s", err, out)
	}
	if !strings.Contains(out, "phase: Recorded") || !strings.Contains(out, "# child remote.svc") {
		t.Errorf("render --reply shows:\n%s", out)
	}
	if err := os.WriteFile(reply, []byte("status: {phase: 1}\nrequeueAfter: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, dir, "render", "manifests/cr.yaml", "--reply", reply); err == nil || !strings.Contains(err.Error(), "reply.yaml:2:") {
		t.Errorf("render with a bad reply: %v; want its problems with their lines", err)
	}
}

// TestSimulateCasesFile: the cases are found beside the Blueprint -f
// names, may be given as the argument, and not twice.
func TestSimulateCasesFile(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if out, err := run(t, dir, "init", site); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	out, err := run(t, dir, "simulate", "-f", "site/blueprint.yaml")
	if err != nil || !strings.Contains(out, filepath.Join("site", "test", "simulate.yaml")+": ") {
		t.Errorf("simulate -f site/blueprint.yaml: %v\n%s\nwant site/test/simulate.yaml run", err, out)
	}
	if out, err := run(t, site, "simulate", "test/simulate.yaml"); err != nil || !strings.Contains(out, "test/simulate.yaml: ") {
		t.Errorf("simulate test/simulate.yaml: %v\n%s", err, out)
	}
	if _, err := run(t, site, "simulate", "test/simulate.yaml", "--file", "other.yaml"); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("the cases given twice: %v", err)
	}
}

// TestCheckBlueprintsTogether: check notes Blueprints given together that
// inrun run and inrun serve would refuse together (two reconciling one
// kind, two serving one target), without failing: each is fine alone.
func TestCheckBlueprintsTogether(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"a", "b"} {
		if err := packs.Copy("intent", filepath.Join(dir, sub), packs.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(dir, "b", "blueprint.yaml")
	data, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, bytes.Replace(data, []byte("\n  name: app\n"), []byte("\n  name: other\n"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join("a", "blueprint.yaml")
	b := filepath.Join("b", "blueprint.yaml")
	for _, one := range []string{a, b} {
		if _, err := run(t, dir, "check", one); err != nil {
			t.Fatalf("check %s: %v", one, err)
		}
	}
	out, err := run(t, dir, "check", a, b)
	if err != nil {
		t.Errorf("check a b: %v; each is fine, so a note, not a failure", err)
	}
	for _, want := range []string{`note: inrun run and inrun serve refuse these together: Blueprints "app"`, `both reconcile example.inrun.dev/v1 App`, `both serve target app`} {
		if !strings.Contains(out, want) {
			t.Errorf("check a b printed no %q:\n%s", want, out)
		}
	}
}
