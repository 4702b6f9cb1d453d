package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inrun/inrun/packs"
)

// TestBuildRejectsBeforeWriting: inrun build of a Blueprint inrun check
// rejects fails with inrun check's errors, and writes no project.
func TestBuildRejectsBeforeWriting(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(src string) string
		want string
	}{
		{"unknown field", func(src string) string {
			return strings.Replace(src, "${self.spec.replicas}", "${self.spec.replicaz}", 1)
		}, "replicaz"},
		{"missing CRD", func(string) string {
			return "apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata: {name: broken}\ncrd: {file: missing.yaml}\n"
		}, "missing.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := packs.Copy("website", dir, packs.CopyOptions{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "blueprint.yaml")
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.edit(string(src))), 0o644); err != nil {
				t.Fatal(err)
			}
			_, want := run(t, dir, "check")
			if want == nil {
				t.Fatal("inrun check accepts the broken Blueprint")
			}
			out := filepath.Join(dir, "out")
			_, err = run(t, dir, "build", "--out", out, "-o", filepath.Join(dir, "bin", "x"), "--skip-tests")
			if err == nil || err.Error() != want.Error() {
				t.Fatalf("inrun build's error:\n%v\nwant inrun check's:\n%v", err, want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error does not name %s:\n%v", tc.want, err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("inrun build wrote %s for a Blueprint inrun check rejects", out)
			}
		})
	}
}

// TestBuildRefusesAMissingOutputDirectory: -o into a directory that does
// not exist is refused at once, and nothing is created.
func TestBuildRefusesAMissingOutputDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("website", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no", "such", "dir")
	out := filepath.Join(dir, "out")
	_, err := run(t, dir, "build", "--out", out, "-o", filepath.Join(missing, "op"), "--skip-tests")
	if err == nil || !strings.Contains(err.Error(), "does not exist; create it first") {
		t.Fatalf("inrun build -o into a missing directory: %v", err)
	}
	for _, p := range []string{filepath.Join(dir, "no"), out} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("inrun build created %s", p)
		}
	}
}

// TestCheckTakesPaths: inrun check takes Blueprints as arguments, and
// reports every one's mistakes.
func TestCheckTakesPaths(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("declarative", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "01-hello-website", "blueprint.yaml")
	b := filepath.Join(dir, "02-service-account", "blueprint.yaml")
	out, err := run(t, dir, "check", a, b)
	if err != nil || strings.Count(out, ": ok: ") != 2 || !strings.Contains(out, "example.inrun.dev/v1 Website") {
		t.Fatalf("inrun check A B = %q, %v", out, err)
	}
	if _, err := run(t, dir, "check", a, filepath.Join(dir, "nope.yaml")); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("inrun check of a missing file: %v", err)
	}
}

// TestCheckCountsAPIExpressions: the count inrun check prints includes the
// expressions of reconcile.api.
func TestCheckCountsAPIExpressions(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("remote", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, filepath.Join(dir, "api"), "check")
	if err != nil || !strings.Contains(out, "with 0 children and 14 expressions") {
		t.Errorf("inrun check of the api example = %q, %v; want its 14 expressions counted", out, err)
	}
}
