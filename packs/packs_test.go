package packs

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	crvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/stack"
)

// exampleFiles are the files every example must have: the layout the READMEs
// and `inrun init` describe. manifests/crd.yaml is one of them unless the
// Blueprint describes its CRD in a schema: section.
var exampleFiles = []string{
	"README.md",
	"blueprint.yaml",
	"manifests/cr.yaml",
	"test/simulate.yaml",
	"test/e2e.yaml",
}

const crdFile = "manifests/crd.yaml"

func TestList(t *testing.T) {
	list := List()
	if len(list) < 2 {
		t.Fatalf("List() = %v; want at least the website and declarative packs", list)
	}
	if list[0].Name != Default {
		t.Errorf("List()[0] = %q; want the default pack %q first", list[0].Name, Default)
	}
	for i, p := range list {
		if p.Description == "" || strings.Contains(p.Description, "\n") {
			t.Errorf("pack %s: description %q; want one non-empty line", p.Name, p.Description)
		}
		if i > 1 && list[i-1].Name > p.Name {
			t.Errorf("List() not sorted after the default: %q before %q", list[i-1].Name, p.Name)
		}
	}
	// List hands out a copy: callers cannot reorder the package's own list.
	list[0].Name = "changed"
	if List()[0].Name != Default {
		t.Error("List() returned the package's own slice")
	}
}

func TestExamples(t *testing.T) {
	if got := Examples(Default); !slices.Equal(got, []string{"."}) {
		t.Errorf("Examples(%q) = %v; want [.]", Default, got)
	}
	want := []string{"01-hello-website", "02-service-account", "03-live-status", "04-copy-across-namespaces", "05-collections", "06-readiness-gating", "07-composition", "08-short-schema", "09-conditions-and-selectors"}
	if got := Examples("declarative"); !slices.Equal(got, want) {
		t.Errorf("Examples(declarative) = %v; want %v", got, want)
	}
	if got := Examples("remote"); !slices.Equal(got, []string{".", "api"}) {
		t.Errorf("Examples(remote) = %v; want [. api]", got)
	}
	if got := Examples("intent"); !slices.Equal(got, []string{"."}) {
		t.Errorf("Examples(intent) = %v; want [.]", got)
	}
	if got := Examples("registry"); !slices.Equal(got, []string{"homepage-1.0.0", "homepage-2.0.0"}) {
		t.Errorf("Examples(registry) = %v; want [homepage-1.0.0 homepage-2.0.0]", got)
	}
	if got := Examples("migration"); !slices.Equal(got, []string{"field", "kind"}) {
		t.Errorf("Examples(migration) = %v; want [field kind]", got)
	}
	if got := Examples("workflow"); !slices.Equal(got, []string{".", "preview"}) {
		t.Errorf("Examples(workflow) = %v; want [. preview]", got)
	}
	if got := Examples("no-such-pack"); got != nil {
		t.Errorf("Examples(no-such-pack) = %v; want nil", got)
	}
}

func TestCopy(t *testing.T) {
	t.Run("creates a missing directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "my-operator", "nested")
		if err := Copy(Default, dir, CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, f := range append([]string{"README.md", crdFile}, exampleFiles...) {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("after Copy: %v", err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, manifestFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Copy wrote %s; it is pack metadata, not project content", manifestFile)
		}
		got, err := os.ReadFile(filepath.Join(dir, "blueprint.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := content.ReadFile(Default + "/blueprint.yaml")
		if string(got) != string(want) {
			t.Error("blueprint.yaml differs from the embedded one")
		}
	})

	t.Run("writes into an empty directory", func(t *testing.T) {
		if err := Copy("declarative", t.TempDir(), CopyOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("refuses a non-empty directory", func(t *testing.T) {
		dir := t.TempDir()
		mine := filepath.Join(dir, "blueprint.yaml")
		if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Copy(Default, dir, CopyOptions{})
		if !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("Copy into a non-empty dir: err = %v; want ErrNotEmpty", err)
		}
		if !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "empty directory") {
			t.Errorf("error %q should say to pass --force or choose an empty directory", err)
		}
		if b, _ := os.ReadFile(mine); string(b) != "mine" {
			t.Error("a refused Copy changed an existing file")
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("a refused Copy wrote files: %d entries", len(entries))
		}

		if err := Copy(Default, dir, CopyOptions{Force: true}); err != nil {
			t.Fatalf("Copy with Force: %v", err)
		}
		if b, _ := os.ReadFile(mine); string(b) == "mine" {
			t.Error("Copy with Force did not replace blueprint.yaml")
		}
	})

	t.Run("refuses a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Copy(Default, file, CopyOptions{Force: true}); err == nil {
			t.Error("Copy into a regular file succeeded")
		}
	})

	t.Run("names the known packs for an unknown one", func(t *testing.T) {
		err := Copy("nope", t.TempDir(), CopyOptions{})
		if err == nil {
			t.Fatal("Copy(nope) succeeded")
		}
		for _, p := range List() {
			if !strings.Contains(err.Error(), p.Name) {
				t.Errorf("error %q does not name the pack %s", err, p.Name)
			}
		}
	})
}

// TestPackContent checks every example of every pack, as a user receives it
// from Copy: the files are there, the CRD is one an API server accepts, and
// the Blueprint, CR and test files agree with each other. The compiler and
// simulator have their own tests that run these examples; this one catches
// a broken pack before they do, with a message about the pack.
func TestPackContent(t *testing.T) {
	for _, p := range List() {
		dir := t.TempDir()
		if err := Copy(p.Name, dir, CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
			t.Errorf("pack %s: %v", p.Name, err)
		}
		examples := Examples(p.Name)
		if len(examples) == 0 {
			t.Errorf("pack %s has no example", p.Name)
		}
		for _, ex := range examples {
			t.Run(path.Join(p.Name, ex), func(t *testing.T) {
				checkExample(t, filepath.Join(dir, filepath.FromSlash(ex)))
			})
		}
	}
}

func checkExample(t *testing.T, dir string) {
	if bp, _ := childIDs(t, filepath.Join(dir, "blueprint.yaml")); isController(bp) {
		checkControllerExample(t, dir, bp)
		return
	}
	for _, f := range exampleFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("missing %s", f)
		}
	}

	bp, known := childIDs(t, filepath.Join(dir, "blueprint.yaml"))
	if bp.APIVersion != "inrun.dev/v1alpha1" || bp.Kind != "Blueprint" {
		t.Errorf("blueprint.yaml: apiVersion/kind = %s/%s; want inrun.dev/v1alpha1/Blueprint", bp.APIVersion, bp.Kind)
	}
	var crd *apiextensionsv1.CustomResourceDefinition
	var s *schema.Structural
	var props *apiextensions.JSONSchemaProps
	if bp.Schema != nil {
		// The CRD is generated from the Blueprint: no manifest of it.
		if _, err := os.Stat(filepath.Join(dir, crdFile)); err == nil {
			t.Errorf("blueprint.yaml has a schema section, and %s is there too; keep one", crdFile)
		}
		compiled, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := ir.MarshalCRD(compiled.Resource.CRD)
		if err != nil {
			t.Fatal(err)
		}
		crd, s, props = checkCRD(t, "the CRD generated from blueprint.yaml", data)
	} else {
		if bp.CRD.File != crdFile {
			t.Errorf("blueprint.yaml: crd.file = %q; want %s", bp.CRD.File, crdFile)
		}
		crd, s, props = loadCRD(t, filepath.Join(dir, crdFile))
	}
	ids := map[string]bool{}
	for _, c := range append(slices.Clone(bp.OnCreate), bp.OnReconcile...) {
		if !lowerCamel.MatchString(c.ID) || c.ID == "self" {
			t.Errorf("blueprint.yaml: child id %q is not a lower-camel-case identifier", c.ID)
		}
		if ids[c.ID] {
			t.Errorf("blueprint.yaml: child id %q is used twice", c.ID)
		}
		ids[c.ID] = true
	}

	gv := crd.Spec.Group + "/" + crd.Spec.Versions[0].Name
	checkCR := func(where string, obj map[string]any) {
		t.Helper()
		if obj["apiVersion"] != gv || obj["kind"] != crd.Spec.Names.Kind {
			t.Errorf("%s: apiVersion/kind = %v/%v; want %s/%s", where, obj["apiVersion"], obj["kind"], gv, crd.Spec.Names.Kind)
		}
		validateCR(t, where, obj, s, props)
	}
	var cr map[string]any
	readYAML(t, filepath.Join(dir, "manifests", "cr.yaml"), &cr)
	checkCR("manifests/cr.yaml", cr)

	// A child is a template's id, a used Blueprint's child of one as
	// <id>.<id>, or, for what a remote reconciler returns, remote.<the id
	// it gives>.
	knownChild := func(id string) bool {
		return known[id] || (bp.Reconcile != nil && strings.HasPrefix(id, "remote.") && lowerCamel.MatchString(strings.TrimPrefix(id, "remote.")))
	}
	var sim struct {
		Cases []struct {
			Name   string         `json:"name"`
			CR     string         `json:"cr"`
			Object map[string]any `json:"object"`
			simPhase
			Steps []simPhase `json:"steps"`
		} `json:"cases"`
	}
	readYAML(t, filepath.Join(dir, "test", "simulate.yaml"), &sim)
	if len(sim.Cases) == 0 {
		t.Error("test/simulate.yaml has no case")
	}
	names := map[string]bool{}
	for _, c := range sim.Cases {
		where := "test/simulate.yaml: case " + c.Name
		if c.Name == "" || names[c.Name] {
			t.Errorf("%s: names must be present and unique", where)
		}
		names[c.Name] = true
		checkCR(where, caseCR(t, dir, where, c.CR, c.Object))
		var refs []string
		for _, ph := range append([]simPhase{c.simPhase}, c.Steps...) {
			refs = append(refs, ph.Expect.Absent...)
			for _, ch := range ph.Expect.Children {
				refs = append(refs, ch.ID)
			}
			for _, o := range ph.Observe {
				refs = append(refs, o.Child)
			}
		}
		for _, id := range refs {
			if !knownChild(id) {
				t.Errorf("%s: child %q is not an id in blueprint.yaml", where, id)
			}
		}
	}

	var e2e struct {
		Cases []struct {
			Name   string         `json:"name"`
			CR     string         `json:"cr"`
			Object map[string]any `json:"object"`
			Steps  []struct {
				Delete  bool `json:"delete"`
				Request *struct {
					Method string `json:"method"`
				} `json:"request"`
				Expect struct {
					Absent []struct {
						Kind string `json:"kind"`
					} `json:"absent"`
				} `json:"expect"`
			} `json:"steps"`
		} `json:"cases"`
	}
	readYAML(t, filepath.Join(dir, "test", "e2e.yaml"), &e2e)
	if len(e2e.Cases) == 0 {
		t.Error("test/e2e.yaml has no case")
	}
	for _, c := range e2e.Cases {
		where := "test/e2e.yaml: case " + c.Name
		if c.CR == "" && c.Object == nil {
			// The gateway makes this case's custom resources: it ends
			// deleting the intent through the gateway instead.
			if n := len(c.Steps); n == 0 || c.Steps[n-1].Request == nil || c.Steps[n-1].Request.Method != "DELETE" {
				t.Errorf("%s: the last step should delete the intent through the gateway and expect what it made absent", where)
			}
			continue
		}
		cr := caseCR(t, dir, where, c.CR, c.Object)
		checkCR(where, cr)
		// Every example shows that deleting the CR cleans up after it,
		// or that the CR goes by itself (a finished workflow's TTL).
		n := len(c.Steps)
		goneByItself := false
		if n > 0 {
			for _, a := range c.Steps[n-1].Expect.Absent {
				goneByItself = goneByItself || a.Kind == cr["kind"]
			}
		}
		if n == 0 || !(c.Steps[n-1].Delete || goneByItself) {
			t.Errorf("%s: the last step should delete the CR (or expect it gone) and expect its children absent", where)
		}
	}
}

// simPhase is what a simulate case, or one of its steps, observes and
// expects.
type simPhase struct {
	Expect struct {
		Children []struct {
			ID string `json:"id"`
		} `json:"children"`
		Absent []string `json:"absent"`
	} `json:"expect"`
	Observe []struct {
		Child string `json:"child"`
	} `json:"observe"`
}

// blueprint is the part of a Blueprint this test checks; the compiler owns the
// full format.
type blueprint struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	CRD        struct {
		File string `json:"file"`
	} `json:"crd"`
	Schema map[string]any `json:"schema"`
	Uses   []struct {
		Blueprint string `json:"blueprint"`
	} `json:"uses"`
	OnCreate    []child        `json:"onCreate"`
	OnReconcile []child        `json:"onReconcile"`
	Reconcile   map[string]any `json:"reconcile"`
}

// isController reports whether bp names a controller-runtime reconciler
// (reconcile.go.controller): its example keeps kubebuilder's layout.
func isController(bp blueprint) bool {
	g, _ := bp.Reconcile["go"].(map[string]any)
	return g["controller"] != nil
}

// checkControllerExample checks an example in kubebuilder's layout: the CRD
// where crd.file says, the test cases' CRs valid against it.
func checkControllerExample(t *testing.T, dir string, bp blueprint) {
	for _, f := range []string{"README.md", "Makefile", "go.mod", "test/e2e.yaml", "test/simulate.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("missing %s", f)
		}
	}
	crd, s, props := loadCRD(t, filepath.Join(dir, filepath.FromSlash(bp.CRD.File)))
	var e2e struct {
		Cases []struct {
			CR string `json:"cr"`
		} `json:"cases"`
	}
	readYAML(t, filepath.Join(dir, "test", "e2e.yaml"), &e2e)
	if len(e2e.Cases) == 0 {
		t.Fatal("test/e2e.yaml has no case")
	}
	for _, c := range e2e.Cases {
		var cr map[string]any
		readYAML(t, filepath.Join(dir, "test", filepath.FromSlash(c.CR)), &cr)
		if cr["kind"] != crd.Spec.Names.Kind {
			t.Errorf("%s: kind %v, want %s", c.CR, cr["kind"], crd.Spec.Names.Kind)
		}
		validateCR(t, c.CR, cr, s, props)
	}
}

// TestKubebuilderUnchanged: the typed pack's controller example holds
// kubebuilder's output unchanged, byte for byte: testdata/kubebuilder-memcached
// is what kubebuilder v4.16.0 generated (see its README).
func TestKubebuilderUnchanged(t *testing.T) {
	const ref = "testdata/kubebuilder-memcached"
	dir := t.TempDir()
	if err := Copy("typed", dir, CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(ref, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".txt") || filepath.Base(p) == "README.md" {
			return err
		}
		rel, _ := filepath.Rel(ref, p)
		want, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got, err := os.ReadFile(filepath.Join(dir, "controller", rel))
		if err != nil {
			t.Errorf("controller/%s: %v", rel, err)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("controller/%s differs from kubebuilder's output", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("compared %d files; want kubebuilder's types, controller and CRD", n)
	}
}

// childIDs returns the ids of the Blueprint at file, and of the children of
// the Blueprints it uses as simulate names them: <id>.<id in that one>, for
// every child (any could be of the used kind; the compiler checks which).
func childIDs(t *testing.T, file string) (blueprint, map[string]bool) {
	t.Helper()
	var bp blueprint
	readYAML(t, file, &bp)
	ids := map[string]bool{}
	for _, c := range append(slices.Clone(bp.OnCreate), bp.OnReconcile...) {
		ids[c.ID] = true
	}
	own := maps.Clone(ids)
	for _, u := range bp.Uses {
		if u.Blueprint == "" {
			continue
		}
		_, used := childIDs(t, filepath.Join(filepath.Dir(file), filepath.FromSlash(u.Blueprint)))
		for id := range own {
			for nested := range used {
				ids[id+"."+nested] = true
			}
		}
	}
	return bp, ids
}

type child struct {
	ID string `json:"id"`
}

var lowerCamel = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// caseCR returns a test case's CR: the file it names, relative to test/, or
// its inline object.
func caseCR(t *testing.T, dir, where, file string, inline map[string]any) map[string]any {
	t.Helper()
	if (file == "") == (inline == nil) {
		t.Errorf("%s: give exactly one of cr and object", where)
		return inline
	}
	if inline != nil {
		return inline
	}
	var obj map[string]any
	readYAML(t, filepath.Join(dir, "test", filepath.FromSlash(file)), &obj)
	return obj
}

// loadCRD parses a CRD strictly and checks what Inrun relies on: one served
// version, the status subresource, and a structural schema (the API server's
// own check, which the compiler's CEL types are built from). It returns the
// CRD and the schema of its one version, structural and as written.
func loadCRD(t *testing.T, file string) (*apiextensionsv1.CustomResourceDefinition, *schema.Structural, *apiextensions.JSONSchemaProps) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return checkCRD(t, crdFile, data)
}

// checkCRD is loadCRD of a manifest's bytes; what names them in messages.
func checkCRD(t *testing.T, what string, data []byte) (*apiextensionsv1.CustomResourceDefinition, *schema.Structural, *apiextensions.JSONSchemaProps) {
	t.Helper()
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if v1.APIVersion != "apiextensions.k8s.io/v1" || v1.Kind != "CustomResourceDefinition" {
		t.Fatalf("%s: apiVersion/kind = %s/%s", what, v1.APIVersion, v1.Kind)
	}
	if len(v1.Spec.Versions) != 1 {
		t.Fatalf("%s: %d versions; the examples keep to one", what, len(v1.Spec.Versions))
	}
	if want := v1.Spec.Names.Plural + "." + v1.Spec.Group; v1.Name != want {
		t.Errorf("%s: metadata.name = %q; want %q", what, v1.Name, want)
	}
	if ver := v1.Spec.Versions[0]; !ver.Served || !ver.Storage || ver.Schema == nil {
		t.Fatalf("%s: version %s must be served, stored and have a schema", what, ver.Name)
	}
	props := new(apiextensions.JSONSchemaProps)
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1.Spec.Versions[0].Schema.OpenAPIV3Schema, props, nil); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	s, err := schema.NewStructural(props)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if errs := schema.ValidateStructural(field.NewPath("openAPIV3Schema"), s); len(errs) > 0 {
		t.Fatalf("%s: the schema is not structural: %v", what, errs.ToAggregate())
	}
	// Inrun writes status through the status subresource.
	if sub := v1.Spec.Versions[0].Subresources; sub == nil || sub.Status == nil {
		t.Errorf("%s: the status subresource is not enabled", what)
	}
	return &v1, s, props
}

// validateCR defaults obj and checks it against the CRD's schema, as the API
// server does on create.
func validateCR(t *testing.T, where string, obj map[string]any, s *schema.Structural, props *apiextensions.JSONSchemaProps) {
	t.Helper()
	obj = runtime.DeepCopyJSON(obj)
	defaulting.Default(obj, s)
	v, _, err := crvalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	if errs := crvalidation.ValidateCustomResource(field.NewPath(""), obj, v); len(errs) > 0 {
		t.Errorf("%s: the CR does not validate against its CRD: %v", where, errs.ToAggregate())
	}
}

// readYAML decodes a YAML file the way the API server decodes a request body:
// case-sensitive keys, and integers kept as int64 rather than float64.
func readYAML(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(data)
	if err == nil {
		err = kjson.UnmarshalCaseSensitivePreserveInts(j, into)
	}
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// TestRemoteReconcilers checks that the remote pack ships its three
// reconcilers, and that its README says how to run each with one command.
func TestRemoteReconcilers(t *testing.T) {
	files := Files("remote")
	readme, err := content.ReadFile("remote/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for file, command := range map[string]string{
		"reconcilers/go/main.go":           "go run ./reconcilers/go/main.go",
		"reconcilers/python/reconciler.py": "python3 reconcilers/python/reconciler.py",
		"reconcilers/bash/reconciler.sh":   "bash reconcilers/bash/reconciler.sh",
	} {
		if !slices.Contains(files, file) {
			t.Errorf("the remote pack lacks %s", file)
		}
		if !strings.Contains(string(readme), command) {
			t.Errorf("the remote pack's README does not say to run %q", command)
		}
	}
}

// TestMigrationPack checks that the migration pack's field example walks
// from the old shape through plan, apply, an old writer, rollback with
// drift and clean, and that its e2e runs each of them.
func TestMigrationPack(t *testing.T) {
	readme, err := content.ReadFile("migration/field/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"inrun init my-migration --pack migration", "inrun crd", "Deprecated: moved to spec.repository", "inrun simulate", "inrun --dev --serve", "inrun migrate plan", "inrun migrate apply", "inrun rollback", "inrun clean", "--force", "curl"} {
		if !strings.Contains(string(readme), step) {
			t.Errorf("the migration pack's README does not say %q", step)
		}
	}
	e2e, err := content.ReadFile("migration/field/test/e2e.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"migrate: apply", "run: rollback, drift: [spec.repository]", "run: clean, refused:", "migrate: clean", "path: /v1/intents"} {
		if !strings.Contains(string(e2e), step) {
			t.Errorf("the migration pack's e2e does not run %q", step)
		}
	}
}

// TestIntentPack checks that the intent pack ships its reconciler and an
// intent, and that its README walks from inrun --dev to curl and the view.
func TestIntentPack(t *testing.T) {
	files := Files("intent")
	for _, f := range []string{"reconciler/reconciler.py", "intents/payments-api.json"} {
		if !slices.Contains(files, f) {
			t.Errorf("the intent pack lacks %s", f)
		}
	}
	readme, err := content.ReadFile("intent/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"inrun serve play intents/payments-api.json", "python3 reconciler/reconciler.py", "inrun --dev --serve", "inrun serve token create", "curl", "-d @intents/payments-api.json", `"view"`} {
		if !strings.Contains(string(readme), step) {
			t.Errorf("the intent pack's README does not say %q", step)
		}
	}
}

// TestRegistryPack checks that the registry pack's pieces tell one story:
// 2.0.0 deprecates 1.0.0 and 1.0.0 alone, the Stack runs the 1.x line and
// accepts exactly that deprecation until a day the publisher still
// allows, and the README walks through run, push, deprecate and accept.
func TestRegistryPack(t *testing.T) {
	dir := t.TempDir()
	if err := Copy("registry", dir, CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	compile := func(version string) *ir.Blueprint {
		bp, err := compiler.CompileFile(filepath.Join(dir, "homepage-"+version, "blueprint.yaml"), compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return bp
	}
	v1, v2 := compile("1.0.0"), compile("2.0.0")
	if v1.Name != v2.Name || v1.Resource.GroupVersionKind != v2.Resource.GroupVersionKind {
		t.Errorf("the two versions are not one pattern: %s %v and %s %v", v1.Name, v1.Resource.GroupVersionKind, v2.Name, v2.Resource.GroupVersionKind)
	}
	if d := registry.DeprecationOf(v1); d != nil {
		t.Errorf("1.0.0 carries a deprecation: %v", d)
	}
	d := registry.DeprecationOf(v2)
	if d == nil || d.After == "" || d.Replacement == "" {
		t.Fatalf("2.0.0's deprecation = %+v; want one with a replacement and an after day", d)
	}
	if !d.Covers("2.0.0", "1.0.0") || !d.Covers("2.0.0", "1.9.9") || d.Covers("2.0.0", "2.0.0") {
		t.Errorf("2.0.0's deprecation (versions %q) should cover 1.x and not itself", d.Versions)
	}

	s, err := stack.ReadFile(filepath.Join(dir, "stack.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Patterns) != 1 || s.Patterns[0].Name != v1.Name {
		t.Fatalf("stack.yaml names %d patterns; want the one %s", len(s.Patterns), v1.Name)
	}
	e := s.Patterns[0]
	if !e.Constraint.Check(mustVersion(t, "1.0.0")) || e.Constraint.Check(mustVersion(t, "2.0.0")) {
		t.Errorf("stack.yaml's constraint %q should take 1.0.0 and not 2.0.0", e.Version)
	}
	if len(e.Accept) != 1 || !e.Accept[0].Constraint.Check(mustVersion(t, "1.0.0")) {
		t.Fatalf("stack.yaml should accept 1.0.0's deprecation once: %+v", e.Accept)
	}
	if until := e.Accept[0].Until.Format("2006-01-02"); until > d.After {
		t.Errorf("stack.yaml accepts until %s, after the publisher's last day %s: the acceptance would be refused", until, d.After)
	}

	readme, err := content.ReadFile("registry/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{
		"inrun keys create",
		"inrun --dev 127.0.0.1:5000/inrun/website@1.0.0",
		"inrun patterns 127.0.0.1:5000/inrun",
		"inrun inspect",
		"inrun push 127.0.0.1:5000/team/homepage:1.0.0",
		"inrun push 127.0.0.1:5000/team/homepage:2.0.0",
		"inrun patterns --stack stack.yaml",
		"inrun --dev --stack stack.yaml",
		`type=="Deprecated"`,
	} {
		if !strings.Contains(string(readme), step) {
			t.Errorf("the registry pack's README does not say %q", step)
		}
	}
	if !strings.Contains(s.Patterns[0].Registry, "127.0.0.1:5000/team") {
		t.Errorf("stack.yaml's registry %q is not the namespace the README pushes to", s.Patterns[0].Registry)
	}
}

func mustVersion(t *testing.T, v string) *semver.Version {
	t.Helper()
	sv, err := semver.NewVersion(v)
	if err != nil {
		t.Fatal(err)
	}
	return sv
}
