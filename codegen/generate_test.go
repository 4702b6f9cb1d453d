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
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/rbac"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

func TestGenerateIsDeterministic(t *testing.T) {
	for name, bp := range examples(t) {
		first, err := codegen.Generate(bp, codegen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		second, err := codegen.Generate(bp, codegen.Options{})
		if err != nil {
			t.Fatal(err)
		}
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
	p, err := codegen.Generate("../packs/website/blueprint.yaml", codegen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range p.Paths() {
		if strings.HasSuffix(name, ".go") && !bytes.HasPrefix(p.Files[name], []byte("// "+codegen.Header+"\n")) {
			t.Errorf("%s does not start with // %s", name, codegen.Header)
		}
	}
}

// TestRejectedBlueprint: a Blueprint the compiler rejects is rejected with
// the compiler's errors, and nothing is written.
func TestRejectedBlueprint(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("website", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "blueprint.yaml")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "${self.spec.replicas}", "${self.spec.replicaz}", 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, want := compiler.CompileFile(path, compiler.Options{})
	if want == nil {
		t.Fatal("the compiler accepts the broken Blueprint")
	}
	p, err := codegen.Generate(path, codegen.Options{})
	if err == nil || p != nil {
		t.Fatalf("Generate = %v, %v; want the compiler's error", p, err)
	}
	if err.Error() != want.Error() {
		t.Errorf("Generate's error:\n%v\nwant inrun check's:\n%v", err, want)
	}
}

// TestRendererImplementsEvaluation keeps the generator in step with
// runtime-lib: the generated evaluation has exactly the methods of
// reconciler.Evaluation.
func TestRendererImplementsEvaluation(t *testing.T) {
	var want []string
	it := reflect.TypeFor[reconciler.Evaluation]()
	for i := 0; i < it.NumMethod(); i++ {
		want = append(want, it.Method(i).Name)
	}
	p, err := codegen.Generate("../packs/website/blueprint.yaml", codegen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := string(p.Files["internal/controller/website_controller.go"])
	var got []string
	for _, line := range strings.Split(src, "\n") {
		if rest, ok := strings.CutPrefix(line, "func (e *websiteEvaluation) "); ok {
			name := rest[:strings.IndexByte(rest, '(')]
			if name[0] >= 'A' && name[0] <= 'Z' {
				got = append(got, name)
			}
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the generated evaluation has %v; reconciler.Evaluation has %v", got, want)
	}
}

// TestRoleIsInrunRBAC: config/rbac/role.yaml grants what inrun rbac prints.
func TestRoleIsInrunRBAC(t *testing.T) {
	p, err := codegen.Generate("../packs/declarative/04-copy-across-namespaces/blueprint.yaml", codegen.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
