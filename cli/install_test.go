package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestInstallWritesChartAndBase: inrun install writes the chart and the
// base, with the ClusterRole inrun rbac prints, and refuses to write over
// a directory or a broken Blueprint.
func TestInstallWritesChartAndBase(t *testing.T) {
	dir := t.TempDir()
	if out, err := run(t, dir, "init", dir, "--force"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	for _, kind := range []string{"chart", "kustomize"} {
		if out, err := run(t, dir, "install", kind, "-o", kind); err != nil {
			t.Fatalf("install %s: %v\n%s", kind, err, out)
		}
		if _, err := run(t, dir, "install", kind, "-o", kind); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("install %s over its own output: %v, want a refusal", kind, err)
		}
	}
	for _, f := range []string{"chart/Chart.yaml", "chart/values.yaml", "chart/templates/07-deployment-inrun.yaml", "kustomize/kustomization.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("install wrote no %s: %v", f, err)
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
