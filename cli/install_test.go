package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestInstallWritesChartAndBase: inrun install writes the chart and the
// base, with the ClusterRole inrun rbac prints, writes them again over
// its own earlier output, and refuses to write over any other directory or
// a broken Blueprint.
func TestInstallWritesChartAndBase(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, dir, "init", dir, "--force"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	for _, kind := range []string{"chart", "kustomize"} {
		if out, err := run(t, dir, "install", kind, "-o", kind); err != nil {
			t.Fatalf("install %s: %v\n%s", kind, err, out)
		}
		// Its own earlier output is written again, less a file it no
		// longer writes; any other directory is refused.
		stale := filepath.Join(dir, kind, "stale.yaml")
		if err := os.WriteFile(stale, []byte("x: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run(t, dir, "install", kind, "-o", kind); err != nil {
			t.Errorf("install %s over its own output: %v\n%s", kind, err, out)
		}
		if _, err := os.Stat(stale); !os.IsNotExist(err) {
			t.Errorf("install %s over its own output kept %s", kind, stale)
		}
		if _, err := run(t, dir, "install", kind, "-o", "manifests"); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("install %s into the pack's manifests: %v, want a refusal", kind, err)
		}
	}
	for _, f := range []string{"chart/Chart.yaml", "chart/values.yaml", "chart/templates/*-deployment-inrun.yaml", "kustomize/kustomization.yaml"} {
		if m, err := filepath.Glob(filepath.Join(dir, f)); err != nil || len(m) != 1 {
			t.Errorf("install wrote %d files %s (%v), want one", len(m), f, err)
		}
	}
	rbacOut, err := run(t, dir, "rbac")
	if err != nil {
		t.Fatal(err)
	}
	role, err := os.ReadFile(filepath.Join(dir, "kustomize", "02-clusterrole-inrun-website.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := yaml.Unmarshal([]byte(rbacOut), &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(role, &b); err != nil {
		t.Fatal(err)
	}
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	if string(x) != string(y) {
		t.Errorf("the installed ClusterRole\n%s\nis not what inrun rbac prints\n%s", y, x)
	}

	if err := os.WriteFile(filepath.Join(dir, "blueprint.yaml"), []byte(badBlueprint), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, dir, "install", "chart", "-o", "broken"); err == nil || !strings.Contains(err.Error(), "E0014") {
		t.Errorf("install of a broken Blueprint: %v, want its mistakes", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "broken")); !os.IsNotExist(err) {
		t.Errorf("install of a broken Blueprint wrote %s", filepath.Join(dir, "broken"))
	}
}

// TestInstallResourceFlags: --requests and --limits change their part of
// the defaults, --no-resources drops them, and every bad quantity is named
// at once, nothing written.
func TestInstallResourceFlags(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, dir, "init", dir, "--force"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	resources := func(out string, extra ...string) any {
		t.Helper()
		if msg, err := run(t, dir, append([]string{"install", "kustomize", "-o", out}, extra...)...); err != nil {
			t.Fatalf("install %v: %v\n%s", extra, err, msg)
		}
		files, err := filepath.Glob(filepath.Join(dir, out, "*-deployment-inrun.yaml"))
		if err != nil || len(files) != 1 {
			t.Fatalf("install %v wrote deployments %v (%v), want one", extra, files, err)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Spec struct {
				Template struct {
					Spec struct {
						NodeSelector map[string]string
						Containers   []struct{ Resources any }
					}
				}
			}
		}
		if err := yaml.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Spec.Containers[0].Resources
	}
	if got := fmt.Sprint(resources("defaults")); got != "map[limits:map[memory:1Gi] requests:map[cpu:100m memory:128Mi]]" {
		t.Errorf("default resources %s", got)
	}
	if got := fmt.Sprint(resources("given", "--requests", "memory=300Mi", "--limits", "memory=2Gi,cpu=2")); got != "map[limits:map[cpu:2 memory:2Gi] requests:map[cpu:100m memory:300Mi]]" {
		t.Errorf("resources with --requests and --limits: %s", got)
	}
	if got := resources("none", "--no-resources"); got != nil {
		t.Errorf("resources with --no-resources: %v, want none", got)
	}
	_, err := run(t, dir, "install", "chart", "-o", "bad", "--requests", "cpu=lots", "--limits", "memory=much")
	if err == nil || !strings.Contains(err.Error(), "--requests cpu=lots") || !strings.Contains(err.Error(), "--limits memory=much") {
		t.Errorf("bad quantities: %v, want both named", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !os.IsNotExist(err) {
		t.Errorf("bad quantities wrote %s", filepath.Join(dir, "bad"))
	}
}

// TestInstallWatchNamespace: --watch-namespace confines the runtime: its
// Deployment runs with --namespace, the Blueprint's rules are a Role in
// each namespace and there is no ClusterRole; a name that is no namespace
// is refused, nothing written.
func TestInstallWatchNamespace(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, dir, "init", dir, "--force"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if msg, err := run(t, dir, "install", "kustomize", "-o", "base", "--watch-namespace", "shop,web"); err != nil {
		t.Fatalf("install: %v\n%s", err, msg)
	}
	var rbacFiles []string
	var args string
	entries, err := os.ReadDir(filepath.Join(dir, "base"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, "base", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Spec     struct {
				Template struct {
					Spec struct{ Containers []struct{ Args []string } }
				}
			}
		}
		if err := yaml.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		switch obj.Kind {
		case "ClusterRole", "Role":
			rbacFiles = append(rbacFiles, obj.Kind+"/"+obj.Metadata.Namespace+"/"+obj.Metadata.Name)
		case "Deployment":
			args = strings.Join(obj.Spec.Template.Spec.Containers[0].Args, " ")
		}
	}
	// No ClusterRole but the metrics endpoint's, which grant no object.
	if want := "[Role/inrun-system/inrun ClusterRole//inrun-metrics-auth ClusterRole//inrun-metrics-reader Role/shop/inrun-website Role/web/inrun-website Role/inrun-system/inrun-blueprints]"; fmt.Sprint(rbacFiles) != want {
		t.Errorf("roles %v, want %s", rbacFiles, want)
	}
	if !strings.Contains(args, " --namespace=shop,web ") {
		t.Errorf("the Deployment runs %s, not confined", args)
	}
	if _, err := run(t, dir, "install", "chart", "-o", "bad", "--watch-namespace", "Shop_1"); err == nil || !strings.Contains(err.Error(), `watched namespace "Shop_1" is not a namespace name`) {
		t.Errorf("--watch-namespace Shop_1: %v, want it refused", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !os.IsNotExist(err) {
		t.Errorf("a bad namespace wrote %s", filepath.Join(dir, "bad"))
	}
}
