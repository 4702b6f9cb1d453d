package expr_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// TestFieldPathsAreCEL: wherever Eval walks an expression's field path
// instead of running its program, the walk gives what the program gives.
// It evaluates every expression of every Blueprint of the packs (with the
// custom resource of its manifests/cr.yaml, and each child as its template
// renders it), and of testdata/paths.yaml, which reads every kind of value
// a schema has (formats, int-or-string, null, maps, embedded objects),
// both ways.
func TestFieldPathsAreCEL(t *testing.T) {
	var files []string
	if err := filepath.WalkDir("../packs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "blueprint.yaml" {
			files = append(files, path)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	walked, compared := 0, 0
	check := func(name string, bp *ir.Blueprint, self *unstructured.Unstructured, live map[string]*unstructured.Unstructured) {
		p, err := expr.Compile(bp)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vars, err := p.NewVars(self, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, c := range bp.Children {
			if len(c.ForEach) > 0 {
				continue
			}
			obj := live[c.ID]
			if obj == nil {
				out, err := p.Render(c.Template, vars)
				m, isMap := out.(map[string]any)
				if err != nil || !isMap {
					continue
				}
				obj = &unstructured.Unstructured{Object: m}
			}
			if err := vars.Set(c.ID, obj); err != nil {
				continue // not a variable of its own (an unchecked child)
			}
		}
		for _, x := range bp.RenderExprs() {
			if x == nil || x.Checked == nil || !expr.HasFieldPath(p, x) {
				continue
			}
			got, ok, want, err := expr.EvalBoth(p, x, vars)
			compared++
			if !ok {
				continue
			}
			walked++
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s: ${%s}: the walk gives %#v, CEL %#v (%v)", name, x.Pos, x.Source, got, want, err)
			}
		}
	}
	for _, file := range files {
		cr, err := os.ReadFile(filepath.Join(filepath.Dir(file), "manifests", "cr.yaml"))
		if err != nil {
			continue
		}
		bp, err := compiler.CompileFile(file, compiler.Options{})
		if err != nil {
			continue // needs what this test does not give, such as Go components
		}
		self := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(cr, &self.Object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		self.SetUID("u-1")
		self.SetGeneration(2)
		if self.GetNamespace() == "" {
			self.SetNamespace("default")
		}
		check(file, bp, self, nil)
	}

	bp, err := compiler.CompileFile("testdata/paths.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, spec := range []map[string]any{
		{
			"name": "a", "count": int64(3), "ratio": 1.5, "enabled": true, "when": "2026-12-05T01:02:03Z", "wait": "90s",
			"blob": "aGk=", "port": "http", "maybe": "yes", "labels": map[string]any{"app": "web"},
			"nested":   map[string]any{"deep": "d", "namespace": "n"},
			"template": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "t"}},
		},
		{"port": int64(8080), "maybe": nil, "ratio": int64(2), "count": 2.0, "enabled": "no", "labels": map[string]any{}, "nested": map[string]any{}},
		{},
	} {
		self := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.inrun.dev/v1", "kind": "Path",
			"metadata": map[string]any{"name": "p", "namespace": "shop", "uid": "u-2", "generation": int64(4)},
			"spec":     spec,
		}}
		if i == 0 {
			self.Object["status"] = map[string]any{"seen": int64(1)}
		}
		config := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "p", "namespace": "shop", "uid": "u-3"},
			"data":     map[string]any{"name": "a"},
		}}
		check("testdata/paths.yaml", bp, self, map[string]*unstructured.Unstructured{"config": config})
	}
	// The walk must have stood for CEL often enough to mean something, and
	// left it some cases.
	if walked < 100 || walked == compared {
		t.Errorf("%d of %d field paths walked: want many, and not all", walked, compared)
	}
	t.Logf("%d of %d field paths walked", walked, compared)
}

// TestPathsPlannedWhenNeeded: an expression walked as a field path gets
// its CEL program only once the walk defers to CEL; the others get theirs
// when compiled. A program costs about 35 KB, and most of a Blueprint's
// expressions are such paths.
func TestPathsPlannedWhenNeeded(t *testing.T) {
	bp, p := compile(t)
	var paths, others int
	for _, x := range bp.RenderExprs() {
		if expr.HasFieldPath(p, x) {
			paths++
			if expr.Planned(p, x) {
				t.Errorf("${%s} was planned at compile time; it is a field path", x.Source)
			}
		} else {
			others++
			if !expr.Planned(p, x) {
				t.Errorf("${%s} was not planned at compile time", x.Source)
			}
		}
	}
	if paths == 0 || others == 0 {
		t.Fatalf("%d field paths and %d other expressions: the pack no longer has both", paths, others)
	}
	vars, err := p.NewVars(website(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A Deployment with no readyReplicas yet: the walk defers to CEL.
	deployment := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"status":   map[string]any{},
	}}
	if err := vars.Set("deployment", deployment); err != nil {
		t.Fatal(err)
	}
	deferred := false
	for _, x := range bp.RenderExprs() {
		if !expr.HasFieldPath(p, x) {
			continue
		}
		walks := expr.Walks(p, x, vars)
		if _, err := p.Eval(x, vars); err != nil && walks {
			t.Errorf("${%s}: %v", x.Source, err)
		}
		if planned := expr.Planned(p, x); planned == walks {
			t.Errorf("${%s}: walked %v, planned %v", x.Source, walks, planned)
		}
		deferred = deferred || !walks
	}
	if !deferred {
		t.Error("no walk deferred to CEL: the case tests nothing of planning later")
	}
}
