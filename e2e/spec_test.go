package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/e2e"
	"github.com/inrun/inrun/internal/diag/diagtest"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/packs"
)

// websiteBlueprint compiles the canonical pack's Blueprint from a copy.
func websiteBlueprint(t *testing.T) (*ir.Blueprint, string) {
	t.Helper()
	dir := t.TempDir()
	if err := packs.Copy("website", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bp, dir
}

// Every file in testdata/errors is wrong on purpose and says inline which
// diagnostics it expects, as YAML comments on the line each points at,
// after go/types' check tests (package internal/diag/diagtest):
//
//	timout: 30s # ERROR E0002 "unknown field timout; did you mean timeout\?"
//
// The code must match and the quoted regexp must match the message, then
// "; " and the hint when there is one. Every diagnostic must match a
// comment on its line and every comment a diagnostic. The files are
// checked against the website pack's Blueprint.
func TestLoadErrors(t *testing.T) {
	bp, _ := websiteBlueprint(t)
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/errors/*.yaml (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := e2e.Load(file, bp)
			if f != nil && err != nil {
				t.Errorf("Load returned a File and an error")
			}
			diagtest.Check(t, file, src, err, false)
		})
	}
}

// TestPackFilesLoad checks every pack's e2e.yaml against its Blueprint,
// offline.
func TestPackFilesLoad(t *testing.T) {
	for _, pack := range packs.List() {
		dir := t.TempDir()
		if err := packs.Copy(pack.Name, dir, packs.CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, ex := range packs.Examples(pack.Name) {
			t.Run(pack.Name+"/"+ex, func(t *testing.T) {
				exDir := filepath.Join(dir, filepath.FromSlash(ex))
				bp, err := compiler.CompileFile(filepath.Join(exDir, "blueprint.yaml"), compiler.Options{})
				if err != nil {
					t.Fatal(err)
				}
				f, err := e2e.Load(filepath.Join(exDir, "test", "e2e.yaml"), bp)
				if err != nil {
					t.Fatal(err)
				}
				if len(f.Cases) == 0 {
					t.Fatal("no cases")
				}
				for _, c := range f.Cases {
					if c.CR == nil {
						if !slices.ContainsFunc(c.Steps, func(s e2e.Step) bool { return s.Request != nil }) {
							t.Errorf("case %q: no CR and no request to the gateway", c.Name)
						}
						continue
					}
					if c.CR.GroupVersionKind() != bp.Resource.GroupVersionKind {
						t.Errorf("case %q: CR %v is not the Blueprint's kind", c.Name, c.CR)
					}
				}
			})
		}
	}
}

func TestParseValues(t *testing.T) {
	f, err := e2e.Parse("inline.yaml", []byte(`
timeout: 90s
cases:
  - name: values
    object:
      apiVersion: example.inrun.dev/v1
      kind: Website
      metadata: {name: w}
      spec: {replicas: 2, ratio: 0.5, on: true, off: null, tags: [a, "1"]}
    steps:
      - timeout: 5s
        patch: {spec: {replicas: 3}}
      - delete: true
        expect:
          absent: [{apiVersion: apps/v1, kind: Deployment, name: w, namespace: other}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Timeout != 90*time.Second {
		t.Errorf("timeout = %s, want 90s", f.Timeout)
	}
	c := f.Cases[0]
	spec := c.CR.Object["spec"].(map[string]any)
	// Integers are int64, as Kubernetes' own decoding has them.
	for k, want := range map[string]any{"replicas": int64(2), "ratio": 0.5, "on": true, "off": nil} {
		if got := spec[k]; got != want {
			t.Errorf("spec.%s = %#v, want %#v", k, got, want)
		}
	}
	if tags := spec["tags"].([]any); tags[1] != "1" {
		t.Errorf("tags[1] = %#v, want the string \"1\"", tags[1])
	}
	if s := c.Steps[0]; s.Timeout != 5*time.Second || s.Action() != "patch" {
		t.Errorf("step 1: timeout %s, action %s", s.Timeout, s.Action())
	}
	if s := c.Steps[1]; !s.Delete || s.Action() != "delete" || s.Expect.Absent[0].Namespace != "other" {
		t.Errorf("step 2: %+v", s)
	}
}

// TestRunChecksCRsFirst: Run, as inrun e2e calls it, refuses a case's CR
// that its CRD refuses and an expect.status field the status cannot have,
// at their lines, before any control plane starts (the API server would
// drop spec.imag without a word, and the case pass with the default image).
func TestRunChecksCRsFirst(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "typo-cr.yaml"), "apiVersion: example.inrun.dev/v1\nkind: Website\nmetadata:\n  name: typo\nspec:\n  imag: httpd:2.4\n")
	file := filepath.Join(dir, "e2e.yaml")
	writeTestFile(t, file, `cases:
  - name: typo in CR file
    cr: typo-cr.yaml
    steps:
      - expect:
          status:
            urll: x
`)
	_, err = e2e.Run(context.Background(), e2e.Options{Blueprint: bp, File: file, AssetsDir: filepath.Join(dir, "no-assets")})
	for _, want := range []string{`typo-cr.yaml:6:3: E0002 Website: unknown field spec.imag: the CRD does not declare it, and the API server refuses it; did you mean spec.image?`, `e2e.yaml:7:13: E0002 case "typo in CR file": steps[0].expect.status.urll is no field of the Website's status; did you mean url?`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v; want %q", err, want)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
