package codegen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/rbac"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

func TestGenerateIsDeterministic(t *testing.T) {
	for name, bp := range examples(t) {
		first, second := generate(t, bp), generate(t, bp)
		if !bytes.Equal(archive(first), archive(second)) {
			t.Errorf("%s: generating twice gave different files", name)
		}
		a, err := first.ThirdParty()
		if err != nil {
			t.Fatal(err)
		}
		b, err := second.ThirdParty()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: generating twice gave different third_party files", name)
		}
	}
}

func TestGeneratedGoFilesAreHeaded(t *testing.T) {
	p := generate(t, "../packs/website/blueprint.yaml")
	for _, name := range p.Paths() {
		if strings.HasSuffix(name, ".go") && !bytes.HasPrefix(p.Files[name], []byte("// "+codegen.Header+"\n")) {
			t.Errorf("%s does not start with // %s", name, codegen.Header)
		}
	}
}

// TestPositionsAreRelative: the operator names the Blueprint's files as
// its directory does, however inrun build was given its path.
func TestPositionsAreRelative(t *testing.T) {
	abs, err := filepath.Abs("../packs/website/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := generate(t, abs)
	dir := filepath.Dir(abs)
	for _, name := range p.Paths() {
		if bytes.Contains(p.Files[name], []byte(dir)) {
			t.Errorf("%s holds the path %s", name, dir)
		}
	}
	bp, err := ir.Unmarshal(p.Files["internal/blueprint/"+codegen.IRFile])
	if err != nil {
		t.Fatal(err)
	}
	if bp.File != "blueprint.yaml" {
		t.Errorf("the embedded Blueprint's file is %q, want blueprint.yaml", bp.File)
	}
	for _, x := range bp.Exprs() {
		if x.Pos.File != "blueprint.yaml" {
			t.Errorf("${%s} is at %s, want a position in blueprint.yaml", x.Source, x.Pos)
		}
	}
}

// TestCRDOutsideTheDirectory: a crd.file outside the Blueprint's directory
// is refused, since the project copies that directory only.
func TestCRDOutsideTheDirectory(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	outside := *bp
	outside.Resource.CRDFile = "../crd.yaml"
	p, err := codegen.Generate(&outside, os.DirFS("../packs/website"), codegen.Options{})
	if err == nil || !strings.Contains(err.Error(), "outside the Blueprint's directory") {
		t.Fatalf("Generate = %v, %v; want crd.file refused", p, err)
	}
}

// TestRendererImplementsEvaluation keeps the generator in step with
// runtime-lib: the generated evaluation has exactly the methods of
// reconciler.Evaluation and reconciler.TypedReader, and those of
// reconciler.Collections when the Blueprint has a collection.
func TestRendererImplementsEvaluation(t *testing.T) {
	for _, tc := range []struct {
		path, file, recv string
		ifaces           []reflect.Type
	}{
		{"../packs/website/blueprint.yaml", "website_controller.go", "websiteEvaluation",
			[]reflect.Type{reflect.TypeFor[reconciler.Evaluation](), reflect.TypeFor[reconciler.TypedReader]()}},
		{"../packs/declarative/05-collections/blueprint.yaml", "workerpool_controller.go", "workerPoolEvaluation",
			[]reflect.Type{reflect.TypeFor[reconciler.Evaluation](), reflect.TypeFor[reconciler.TypedReader](), reflect.TypeFor[reconciler.Collections]()}},
	} {
		var want []string
		for _, it := range tc.ifaces {
			for i := 0; i < it.NumMethod(); i++ {
				want = append(want, it.Method(i).Name)
			}
		}
		p := generate(t, tc.path)
		src := string(p.Files["internal/controller/"+tc.file])
		var got []string
		for _, line := range strings.Split(src, "\n") {
			if rest, ok := strings.CutPrefix(line, "func (e *"+tc.recv+") "); ok {
				name := rest[:strings.IndexByte(rest, '(')]
				if name[0] >= 'A' && name[0] <= 'Z' {
					got = append(got, name)
				}
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the generated evaluation has %v; want %v", tc.path, got, want)
		}
	}
}

// TestRoleIsInrunRBAC: config/rbac/role.yaml grants what inrun rbac prints.
func TestRoleIsInrunRBAC(t *testing.T) {
	p := generate(t, "../packs/declarative/04-copy-across-namespaces/blueprint.yaml")
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(p.Files["config/rbac/role.yaml"], &role); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rbac.ClusterRole(p.Blueprint).Rules, role.Rules); diff != "" {
		t.Errorf("role.yaml's rules differ from inrun rbac's (-rbac +role.yaml):\n%s", diff)
	}
	src := string(p.Files["internal/controller/secretcopy_controller.go"])
	for _, r := range rbac.Rules(p.Blueprint) {
		if !strings.Contains(src, "// "+rbac.Marker(r)+"\n") {
			t.Errorf("the controller lacks the marker %s", rbac.Marker(r))
		}
	}
}

// TestTypedBlueprintRefused: a Blueprint that names Go code (reconcile.go)
// is refused, with where it names it and the command that links its
// module, unless the operator is typed: then
// internal/controller/components.go imports the modules' packages and
// cmd/main.go passes components.Default to the runtime.
func TestTypedBlueprintRefused(t *testing.T) {
	bp, err := compiler.CompileFile("../runtime-lib/reconciler/testdata/gowebapp.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := os.DirFS("../runtime-lib/reconciler/testdata")
	p, err := codegen.Generate(bp, files, codegen.Options{})
	want := `gowebapp.yaml:8:14: the Blueprint names Go reconciler "webapp": its operator must link the Go module that registers it; build it with inrun build --operator --with MODULE[@VERSION][=PATH]`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Generate = %v, %v; want %q", p, err, want)
	}

	p, err = codegen.Generate(bp, files, codegen.Options{Typed: true, Packages: []string{"example.com/webapp/reconciler", "example.com/webapp/hooks"}})
	if err != nil {
		t.Fatal(err)
	}
	for file, wants := range map[string][]string{
		codegen.ComponentsFile: {"package controller", "\t_ \"example.com/webapp/hooks\"\n\t_ \"example.com/webapp/reconciler\"\n"},
		"cmd/main.go":          {"registry := components.Default", "registry.Check(bp)", "registry.AddToScheme(scheme)", "Components:  registry,"},
	} {
		for _, w := range wants {
			if !strings.Contains(string(p.Files[file]), w) {
				t.Errorf("%s does not hold %q:\n%s", file, w, p.Files[file])
			}
		}
	}
	if strings.Contains(string(p.Files["cmd/main.go"]), "reconciler-url") {
		t.Errorf("cmd/main.go of a Go reconciler has --reconciler-url:\n%s", p.Files["cmd/main.go"])
	}
}

// TestAPIIsWhatBuildGenerates: API (inrun generate api) gives, for every
// pack example, exactly the files of api/ that Generate (inrun build)
// writes into the operator.
func TestAPIIsWhatBuildGenerates(t *testing.T) {
	for name, path := range examples(t) {
		t.Run(name, func(t *testing.T) {
			p := generate(t, path)
			// As inrun generate api compiles it: positions not relocated.
			bp, err := compiler.CompileFile(path, compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			api, err := codegen.API(bp, p.Module+"/api/"+bp.Resource.Version)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for file, data := range p.Files {
				rel, ok := strings.CutPrefix(file, "api/")
				if !ok {
					continue
				}
				n++
				if !bytes.Equal(api[rel], data) {
					t.Errorf("API's %s differs from inrun build's %s", rel, file)
				}
			}
			if n != len(api) || n != 3 {
				t.Errorf("inrun build writes %d files in api/, API %d; want 3", n, len(api))
			}
		})
	}
}
