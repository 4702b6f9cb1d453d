package components_test

import (
	"context"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/sdk"
)

func constructor(components.ReconcilerOptions) (sdk.Func, error) { return nil, nil }

func transform(context.Context, *components.TransformRequest) (*sdk.Resource, error) { return nil, nil }

// TestRegistryRecordsMistakes: bad and duplicate names never panic; they
// are all reported by Err, naming the package that made them.
func TestRegistryRecordsMistakes(t *testing.T) {
	reg := &components.Registry{}
	reg.RegisterReconciler("webapp", constructor)
	reg.RegisterReconciler("webapp", constructor)
	reg.RegisterReconciler("Web_App", constructor)
	reg.RegisterReconciler("billing", nil)
	reg.RegisterTransform("sidecar", transform)
	reg.RegisterTransform("sidecar", transform)
	reg.RegisterTransform("webapp", transform) // another kind, another namespace of names
	err := reg.Err()
	if err == nil {
		t.Fatal("Err = nil after three bad registrations")
	}
	const pkg = "github.com/inrun/inrun/components_test"
	for _, want := range []string{
		`reconciler "webapp" is registered twice, by ` + pkg + ` and by ` + pkg + `: rename one`,
		pkg + ` registers a reconciler named "Web_App": a name is lower-case letters`,
		pkg + ` registers reconciler "billing" with a nil function`,
		`transform "sidecar" is registered twice`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Err = %v\nwant it to say %q", err, want)
		}
	}
	if got := reg.Names(components.Transform); len(got) != 2 || got[0] != "sidecar" || got[1] != "webapp" {
		t.Errorf("transforms = %v, want sidecar and webapp", got)
	}
	regs := reg.Reconcilers()
	if len(regs) != 1 || regs[0].Name != "webapp" || regs[0].Package != pkg {
		t.Errorf("Reconcilers = %+v, want webapp from %s only", regs, pkg)
	}
	if reg.Empty() {
		t.Error("Empty with a reconciler registered")
	}
	if !(&components.Registry{}).Empty() {
		t.Error("a new Registry is not Empty")
	}
}

// TestCheck: a Blueprint naming a reconciler the registry lacks is refused
// with its name, its position, what the registry has and how to build the
// right inrun; one it has passes.
func TestCheck(t *testing.T) {
	bp := &ir.Blueprint{Name: "shop", Reconcile: &ir.Reconcile{Remote: &ir.Remote{Go: &ir.GoRef{
		Name: "payments", Pos: ir.Pos{File: "blueprint.yaml", Line: 9, Col: 14},
	}}}, Children: []*ir.Child{{ID: "deployment", Transform: &ir.GoRef{Name: "sidecar", Pos: ir.Pos{File: "blueprint.yaml", Line: 7, Col: 21}}}}}
	reg := &components.Registry{}
	reg.RegisterReconciler("webapp", constructor)
	reg.RegisterReconciler("billing", constructor)
	err := reg.Check(bp)
	want := `blueprint shop names Go code this inrun does not have: transform "sidecar" (blueprint.yaml:7:21), reconciler "payments" (blueprint.yaml:9:14); it has reconcilers billing, webapp. To run it, build an inrun with the Go module that registers it compiled in`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Check = %v\nwant %q", err, want)
	}
	reg.RegisterTransform("sidecar", transform)
	if err := reg.Check(bp); err == nil || !strings.Contains(err.Error(), `: reconciler "payments" (blueprint.yaml:9:14); it has reconcilers billing, webapp; transforms sidecar.`) {
		t.Fatalf("Check with sidecar = %v", err)
	}
	reg.RegisterReconciler("payments", constructor)
	if err := reg.Check(bp); err != nil {
		t.Errorf("Check with payments registered = %v", err)
	}
	if err := reg.Check(&ir.Blueprint{Name: "plain"}); err != nil {
		t.Errorf("Check of a Blueprint without Go = %v", err)
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"webapp": true, "shop.webapp": true, "web-app2": true,
		"": false, "WebApp": false, "-web": false, "web.": false, "web_app": false, strings.Repeat("a", 64): false,
	} {
		if got := components.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestModules: registrations are grouped by the module that holds the
// registering package, the longest module path winning, with its version
// and replacement.
func TestModules(t *testing.T) {
	reg := &components.Registry{}
	reg.RegisterReconciler("webapp", constructor)
	info := &debug.BuildInfo{
		Main: debug.Module{Path: "example.com/inrun-custom", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/inrun", Version: "v0.0.1"},
			{Path: "github.com/inrun/inrun", Version: "v0.3.0", Replace: &debug.Module{Path: "../inrun", Version: "(devel)"}},
		},
	}
	mods := reg.Modules(info)
	if len(mods) != 1 {
		t.Fatalf("Modules = %+v, want one", mods)
	}
	m := mods[0]
	if m.Path != "github.com/inrun/inrun" || m.Version != "v0.3.0" || m.Replace != "../inrun" || len(m.Registrations) != 1 || m.Registrations[0].Name != "webapp" || m.Registrations[0].What != components.Reconciler {
		t.Errorf("Modules = %+v, want github.com/inrun/inrun v0.3.0 => ../inrun with webapp", m)
	}
	if mods := reg.Modules(nil); len(mods) != 1 || mods[0].Version != "unknown" || mods[0].Path != "github.com/inrun/inrun/components_test" {
		t.Errorf("Modules(nil) = %+v, want the package, version unknown", mods)
	}
}
