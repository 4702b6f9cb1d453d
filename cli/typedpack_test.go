package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/packs"
)

// TestTypedPack is the typed pack as its README runs it: inrun init --pack
// typed, then in each example make registry and make build with this
// inrun, then the inrun built there checks the Blueprint, simulates it and
// runs its e2e cases on a local control plane (make simulate, make e2e). A plain inrun refuses the
// same Blueprint, naming what it lacks.
func TestTypedPack(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an inrun per example")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is not installed: the typed pack's examples are built with it")
	}
	clustertest.RequireAssets(t, localcluster.Options{Mode: localcluster.Full})
	inrun, err := buildInrun()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "t")
	if out, err := exec.Command(inrun, "init", dir, "--pack", "typed").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	t.Run("skew", func(t *testing.T) {
		// A copy of the hooks example pinned to another controller-runtime
		// minor: make registry refuses it before compiling anything.
		skewed := filepath.Join(t.TempDir(), "hooks")
		if out, err := exec.Command("cp", "-r", filepath.Join(dir, "hooks"), skewed).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		gomod := filepath.Join(skewed, "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, []byte("\nrequire sigs.k8s.io/controller-runtime v0.19.4\n")...)
		if err := os.WriteFile(gomod, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("make", "registry", "INRUN="+inrun)
		cmd.Dir = skewed
		out, err := cmd.CombinedOutput()
		want := regexp.MustCompile(`example.com/typed-hooks \(.*go.mod\) requires sigs.k8s.io/controller-runtime v0.19.4 \(inrun has v0\.\d+\.\d+\).*Fix: in example.com/typed-hooks, run go get sigs.k8s.io/controller-runtime@v0\.\d+\.\d+`)
		if err == nil || !want.Match(out) {
			t.Errorf("make registry of a skewed module: %v\n%s\nwant %s", err, out, want)
		}
		if _, err := os.Stat(filepath.Join(skewed, "build")); err == nil {
			t.Error("make registry of a skewed module wrote build/; nothing is written before the check passes")
		}
	})
	for _, ex := range packs.Examples("typed") {
		t.Run(ex, func(t *testing.T) {
			exDir := filepath.Join(dir, ex)
			sh := func(name string, args ...string) string {
				t.Helper()
				cmd := exec.Command(name, args...)
				cmd.Dir = exDir
				cmd.Env = append(os.Environ(), "INRUN="+inrun)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			// A plain inrun checks the Blueprint's form and says it cannot
			// run it; simulate refuses it, naming what it lacks.
			if out := sh(inrun, "check"); !strings.Contains(out, "not compiled into this inrun: it cannot run here") {
				t.Errorf("a plain inrun check:\n%s\nwant it to say it cannot run the Blueprint", out)
			}
			cmd := exec.Command(inrun, "simulate")
			cmd.Dir = exDir
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), "names Go code this inrun does not have") {
				t.Errorf("a plain inrun simulate: %v\n%s\nwant it refused, naming what it lacks", err, out)
			}
			sh("make", "registry")
			if _, err := os.Stat(filepath.Join(exDir, "bin", "inrun")); err == nil {
				t.Error("make registry compiled an inrun; it only checks and generates")
			}
			sh("make", "build")
			bin := filepath.Join(exDir, "bin", "inrun")
			if out := sh(bin, "check"); !strings.Contains(out, "compiled in") {
				t.Errorf("bin/inrun check:\n%s\nwant it to find the Go compiled in", out)
			}
			if out := sh(bin, "version", "--components"); !regexp.MustCompile(`(?m)^  (transform|reconciler|controller) `).MatchString(out) {
				t.Errorf("bin/inrun version --components:\n%s\nwant the registrations", out)
			}
			if out := sh("make", "simulate"); !regexp.MustCompile(`: [1-9]\d* passed, 0 failed`).MatchString(out) {
				t.Errorf("make simulate:\n%s", out)
			}
			if out := sh("make", "e2e"); !regexp.MustCompile(`: [1-9]\d* passed, 0 failed`).MatchString(out) {
				t.Errorf("make e2e:\n%s", out)
			}
		})
	}
}
