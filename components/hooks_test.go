package components_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/ir"
)

type widget struct{ runtime.Unknown }

type widgetList struct{ runtime.Unknown }

var widgetGV = schema.GroupVersion{Group: "example.inrun.dev", Version: "v1"}

func addWidgets(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(widgetGV.WithKind("WidgetList"), &widgetList{})
	return nil
}

// TestEveryKindRegisters: hooks, controllers and schemes register and are
// found by kind, each kind with its own names, and a scheme records the
// kinds it adds, without its list type.
func TestEveryKindRegisters(t *testing.T) {
	reg := &components.Registry{}
	reg.RegisterArgs("size", func(context.Context, *components.ArgsRequest) (map[string]any, error) { return nil, nil })
	reg.RegisterStatus("size", func(context.Context, *components.StatusRequest) (map[string]any, error) { return nil, nil })
	reg.RegisterController("guestbook", func(manager.Manager) error { return nil })
	reg.RegisterScheme("example.inrun.dev/v1", addWidgets)
	if err := reg.Err(); err != nil {
		t.Fatal(err)
	}
	for what, name := range map[string]string{components.Args: "size", components.Status: "size", components.Controller: "guestbook", components.Scheme: "example.inrun.dev/v1"} {
		if !reg.Has(what, name) {
			t.Errorf("Has(%s, %s) = false", what, name)
		}
	}
	if _, ok := reg.ArgsHook("size"); !ok {
		t.Error("ArgsHook(size) not found")
	}
	if _, ok := reg.ControllerSetup("size"); ok {
		t.Error("ControllerSetup(size) found: names are per kind")
	}
	schemes := reg.List(components.Scheme)
	if len(schemes) != 1 || strings.Join(schemes[0].Kinds, ";") != "example.inrun.dev/v1, Kind=Widget" {
		t.Errorf("schemes = %+v, want one adding Widget only", schemes)
	}
	s := runtime.NewScheme()
	if err := reg.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if !s.Recognizes(widgetGV.WithKind("Widget")) {
		t.Error("AddToScheme did not add Widget")
	}
}

// TestSchemeMistakes: a nil or failing AddToScheme is refused at
// registration, named, with the others.
func TestSchemeMistakes(t *testing.T) {
	reg := &components.Registry{}
	reg.RegisterScheme("broken.example/v1", func(*runtime.Scheme) error { return errors.New("no types") })
	reg.RegisterScheme("nil.example/v1", nil)
	reg.RegisterController("guestbook", nil)
	err := reg.Err()
	for _, want := range []string{`scheme "broken.example/v1", whose AddToScheme fails: no types`, `scheme "nil.example/v1" with a nil function`, `controller "guestbook" with a nil function`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err = %v, want it to say %q", err, want)
		}
	}
	if reg.Has(components.Scheme, "broken.example/v1") {
		t.Error("a failing scheme was registered")
	}
}

// TestNeedsHooksAndController: a Blueprint's hooks and controller are
// needed, named with where the Blueprint names them, and Check lists what
// the registry has as hooks.
func TestNeedsHooksAndController(t *testing.T) {
	bp := &ir.Blueprint{
		Name:      "guestbook",
		Hooks:     &ir.Hooks{Args: &ir.GoRef{Name: "size", Pos: ir.Pos{File: "b.yaml", Line: 3, Col: 9}}, Status: &ir.GoRef{Name: "summary"}},
		Reconcile: &ir.Reconcile{Remote: &ir.Remote{Controller: &ir.GoRef{Name: "guestbook"}}},
	}
	needs := components.Needs(bp)
	var got []string
	for _, n := range needs {
		got = append(got, n.What+":"+n.Name)
	}
	if strings.Join(got, " ") != "args:size status:summary controller:guestbook" {
		t.Errorf("Needs = %v", got)
	}
	reg := &components.Registry{}
	reg.RegisterArgs("size", func(context.Context, *components.ArgsRequest) (map[string]any, error) { return nil, nil })
	err := reg.Check(bp)
	if err == nil {
		t.Fatal("Check = nil, want the status hook and controller missing")
	}
	for _, want := range []string{`status "summary"`, `controller "guestbook"`, "it has args hooks size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check = %v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `args "size"`) {
		t.Errorf("Check = %v: names the args hook it has", err)
	}
}
