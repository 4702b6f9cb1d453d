package compiler_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inrun/inrun/compiler"
)

// TestMigrateKind compiles a kind move into the IR: the target's plural,
// scope and Blueprint come from uses, the selection's expressions are
// checked and joined.
func TestMigrateKind(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/migrate_kind.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := bp.Migrate
	if m == nil {
		t.Fatal("no migrate section in the IR")
	}
	if m.To.Kind != "WebApp" || m.To.Group != "platform.inrun.dev" || m.To.Version != "v1" || m.To.Plural != "webapps" || !m.To.Namespaced || m.To.Namespace != "apps" || m.To.Blueprint != "webapp" || m.To.Schema == nil || !m.AcceptLoss {
		t.Errorf("migrate.to: %+v", m.To)
	}
	if m.To.Pos.Line != 22 {
		t.Errorf("migrate.to at line %d, want 22 (its kind)", m.To.Pos.Line)
	}
	sel := m.Selection
	want := []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}
	if diff := cmp.Diff(want, sel.MatchExpressions); diff != "" || sel.MatchLabels["tier"] != "web" {
		t.Errorf("selection: %v %s", sel.MatchLabels, diff)
	}
	x := sel.IncludeWhen
	if x == nil || x.Checked == nil || x.Type != "bool" || x.Source != "(has(self.spec.owner)) && (self.spec.image != '')" {
		t.Errorf("includeWhen: %+v", x)
	}
	if got := bp.MigrateExprs(); len(got) != 1 || got[0] != x {
		t.Errorf("MigrateExprs: %v", got)
	}
}

// TestMigrateKindIntoRequiredOfOpenObject: a field the target requires
// inside an object the source keeps unknown fields in (a condition's
// type) may be there: the move compiles.
func TestMigrateKindIntoRequiredOfOpenObject(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/migrate_kind_open/app.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bp.Migrate == nil || bp.Migrate.To.Kind != "AppV2" {
		t.Fatalf("migrate: %+v", bp.Migrate)
	}
}
