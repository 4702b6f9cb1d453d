package main

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
