package compiler_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
)

// Table tests of Blueprints that compile, checking the IR. Sources are
// compiled as testdata/blueprint.yaml, so crd.file manifests/... names a
// file in testdata/manifests.

const bpFile = "testdata/blueprint.yaml"

// compile compiles src and fails the test on any diagnostic.
func compile(t *testing.T, src string) *ir.Blueprint {
	t.Helper()
	bp, err := compiler.Compile(load.Bytes(bpFile, []byte(src)), compiler.Options{})
	if err != nil {
		t.Fatalf("Compile:\n%v", err)
	}
	if bp == nil {
		t.Fatal("Compile returned neither a Blueprint nor an error")
	}
	return bp
}

// website starts a Blueprint over the Website CRD, up to its children.
const website = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: website
crd:
  file: manifests/crd.yaml
`

// configMap returns an onReconcile list item: a ConfigMap child whose
// name is the given expression text.
func configMap(id, name string) string {
	return fmt.Sprintf(`  - id: %s
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: %s
`, id, name)
}

func TestCompileGood(t *testing.T) {
	files := []string{"testdata/good.yaml"}
	packs, err := filepath.Glob("../packs/*/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../packs/*/*/blueprint.yaml")
	files = append(files, append(packs, more...)...)
	if len(files) < 3 {
		t.Fatalf("found only %v", files)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			bp, err := compiler.CompileFile(file, compiler.Options{})
			if err != nil {
				t.Fatalf("%v", err)
			}
			if bp.File != file || bp.Name == "" || (len(bp.Children) == 0 && bp.Reconcile == nil) {
				t.Errorf("File %q, Name %q, %d children", bp.File, bp.Name, len(bp.Children))
			}
			for _, ch := range bp.Children {
				for _, x := range ch.Template.Exprs() {
					if x.Type == "" || !x.Pos.IsValid() {
						t.Errorf("%s: ${%s} has Type %q and Pos %v", ch.ID, x.Source, x.Type, x.Pos)
					}
				}
			}
		})
	}
}

func TestChildOrder(t *testing.T) {
	for _, tt := range []struct {
		name     string
		children string
		order    []string
		deps     map[string][]string // DependsOn of children that have any
	}{{
		name:     "source order without references",
		children: configMap("b", "b") + configMap("a", "a") + configMap("c", "${self.metadata.name}"),
		order:    []string{"b", "a", "c"},
	}, {
		name:     "a reference moves a child after what it reads",
		children: configMap("a", "a") + configMap("b", "${d.metadata.name}") + configMap("c", "c") + configMap("d", "d"),
		order:    []string{"a", "d", "b", "c"},
		deps:     map[string][]string{"b": {"d"}},
	}, {
		name: "diamond",
		children: configMap("top", "${left.metadata.name}-${right.metadata.name}") +
			configMap("left", "${bottom.metadata.name}") +
			configMap("right", "${bottom.metadata.name}-${self.metadata.name}") +
			configMap("bottom", "${self.metadata.name}"),
		order: []string{"bottom", "left", "right", "top"},
		deps:  map[string][]string{"top": {"left", "right"}, "left": {"bottom"}, "right": {"bottom"}},
	}, {
		name: "chain in reverse",
		children: configMap("c1", "${c2.metadata.name}") + configMap("c2", "${c3.metadata.name}") +
			configMap("c3", "${c4.metadata.name}") + configMap("c4", "x"),
		order: []string{"c4", "c3", "c2", "c1"},
		deps:  map[string][]string{"c1": {"c2"}, "c2": {"c3"}, "c3": {"c4"}},
	}, {
		name: "includeWhen is a dependency, readyWhen on itself is not",
		children: `  - id: gate
    includeWhen: ${late.data.enabled == "true"}
    readyWhen: ${has(gate.data)}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: gate
` + configMap("late", "late"),
		order: []string{"late", "gate"},
		deps:  map[string][]string{"gate": {"late"}},
	}, {
		name: "several references to one child count once",
		children: configMap("a", "${b.metadata.name}-${b.metadata.namespace}-${b.metadata.uid}") +
			configMap("b", "b"),
		order: []string{"b", "a"},
		deps:  map[string][]string{"a": {"b"}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			bp := compile(t, website+"onReconcile:\n"+tt.children)
			var order []string
			deps := map[string][]string{}
			for _, ch := range bp.Children {
				order = append(order, ch.ID)
				if ch.DependsOn == nil {
					t.Errorf("%s: DependsOn is nil, want a (possibly empty) slice", ch.ID)
				}
				if len(ch.DependsOn) > 0 {
					deps[ch.ID] = ch.DependsOn
				}
			}
			if diff := cmp.Diff(tt.order, order); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.deps, deps, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("DependsOn (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPhases checks that onCreate and onReconcile children are ordered
// together, by reference first and source order second.
func TestPhases(t *testing.T) {
	bp := compile(t, website+`onCreate:
  - id: credentials
    template:
      apiVersion: v1
      kind: Secret
      metadata:
        name: ${self.metadata.name}-${config.metadata.name}
      stringData:
        password: ${self.metadata.uid}
onReconcile:
`+configMap("config", "${self.metadata.name}")+configMap("other", "${credentials.metadata.name}"))
	type child struct {
		ID        string
		Phase     ir.Phase
		DependsOn []string
	}
	var got []child
	for _, ch := range bp.Children {
		got = append(got, child{ch.ID, ch.Phase, ch.DependsOn})
	}
	want := []child{
		{"config", ir.OnReconcile, []string{}},
		{"credentials", ir.OnCreate, []string{"config"}},
		{"other", ir.OnReconcile, []string{"credentials"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
}

// TestExprInfo checks Expr.Type and Expr.Refs, for expressions in
// emit.status (whose schema accepts anything) and in templates.
func TestExprInfo(t *testing.T) {
	bp := compile(t, website+`onReconcile:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${self.metadata.name}
      spec:
        replicas: ${self.spec.replicas}
        paused: ${!self.spec.expose}
emit:
  status:
    replicas: ${self.spec.replicas}
    image: ${self.spec.image}
    expose: ${self.spec.expose}
    generation: ${self.metadata.generation}
    labels: ${self.metadata.labels}
    ready: ${deployment.status.readyReplicas}
    both: ${deployment.status.readyReplicas >= self.spec.replicas}
    none: ${1 + 2}
    ratio: ${double(deployment.status.readyReplicas) / 2.0}
    list: ${[self.spec.port, 443]}
    optional: ${self.spec.?image}
    orValue: ${self.spec.?image.orValue("nginx")}
    conds: ${deployment.status.conditions}
    size: ${size(deployment.status.conditions)}
    text: replicas=${self.spec.replicas}
    quantity: ${quantity("1Gi")}
`)
	type info struct {
		Type string
		Refs []string
	}
	got := map[string]info{}
	for _, f := range bp.Status.Fields {
		for _, x := range f.Value.Exprs() {
			got[f.Key] = info{x.Type, x.Refs}
		}
	}
	d := bp.Child("deployment")
	got["template replicas"] = info{d.Template.Lookup("spec").Lookup("replicas").Expr.Type, d.Template.Lookup("spec").Lookup("replicas").Expr.Refs}
	got["template paused"] = info{d.Template.Lookup("spec").Lookup("paused").Expr.Type, d.Template.Lookup("spec").Lookup("paused").Expr.Refs}

	self, dep, both := []string{"self"}, []string{"deployment"}, []string{"deployment", "self"}
	want := map[string]info{
		"replicas":          {"int", self},
		"image":             {"string", self},
		"expose":            {"bool", self},
		"generation":        {"int", self},
		"labels":            {"map(string, string)", self},
		"ready":             {"int", dep},
		"both":              {"bool", both},
		"none":              {"int", []string{}},
		"ratio":             {"double", dep},
		"list":              {"list(int)", self},
		"optional":          {"optional_type(string)", self},
		"orValue":           {"string", self},
		"conds":             {"list(v1.DeploymentCondition)", dep},
		"size":              {"int", dep},
		"text":              {"int", self},
		"quantity":          {"kubernetes.Quantity", []string{}},
		"template replicas": {"int", self},
		"template paused":   {"bool", self},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Type and Refs by field (-want +got):\n%s", diff)
	}
}

// TestValueKinds checks how scalars become literals, whole expressions and
// interpolations, and that $${ escapes ${.
func TestValueKinds(t *testing.T) {
	bp := compile(t, website+`emit:
  status:
    text: plain
    integer: 3
    hex: 0x10
    number: 1.5
    boolean: true
    quotedNumber: "3"
    nothing: ~
    empty: ""
    whole: ${self.spec.replicas}
    quotedWhole: "${self.spec.replicas}"
    padded: ${  self.spec.replicas  }
    interpolated: http://${self.metadata.name}:${self.spec.port}/
    escaped: $${HOME}
    escapedTwice: $${a}$${b}
    escapedAndExpr: $${HOME}/${self.metadata.name}
    dollar: $HOME and $ {x} and $
    list: [a, "${self.spec.image}"]
    map:
      key: ${self.metadata.name}
    braces: '${{"a": "}"}["a"]}'
`)
	var (
		str = func(s string) *ir.Value { return &ir.Value{Kind: ir.Literal, Literal: s} }
		x   = func(src, typ string, refs ...string) *ir.Expr {
			if refs == nil {
				refs = []string{}
			}
			return &ir.Expr{Source: src, Type: typ, Refs: refs}
		}
		whole = func(e *ir.Expr) *ir.Value { return &ir.Value{Kind: ir.Expression, Expr: e} }
	)
	want := map[string]*ir.Value{
		"text":         str("plain"),
		"integer":      {Kind: ir.Literal, Literal: int64(3)},
		"hex":          {Kind: ir.Literal, Literal: int64(16)},
		"number":       {Kind: ir.Literal, Literal: 1.5},
		"boolean":      {Kind: ir.Literal, Literal: true},
		"quotedNumber": str("3"),
		"nothing":      {Kind: ir.Null},
		"empty":        str(""),
		"whole":        whole(x("self.spec.replicas", "int", "self")),
		"quotedWhole":  whole(x("self.spec.replicas", "int", "self")),
		"padded":       whole(x("self.spec.replicas", "int", "self")),
		"interpolated": {Kind: ir.Interpolation, Parts: []ir.Part{
			{Text: "http://"},
			{Expr: x("self.metadata.name", "string", "self")},
			{Text: ":"},
			{Expr: x("self.spec.port", "int", "self")},
			{Text: "/"},
		}},
		"escaped":      str("${HOME}"),
		"escapedTwice": str("${a}${b}"),
		"escapedAndExpr": {Kind: ir.Interpolation, Parts: []ir.Part{
			{Text: "${HOME}/"},
			{Expr: x("self.metadata.name", "string", "self")},
		}},
		"dollar": str("$HOME and $ {x} and $"),
		"list": {Kind: ir.List, Items: []*ir.Value{
			str("a"),
			whole(x("self.spec.image", "string", "self")),
		}},
		"map": {Kind: ir.Map, Fields: []ir.Field{
			{Key: "key", Value: whole(x("self.metadata.name", "string", "self"))},
		}},
		"braces": whole(x(`{"a": "}"}["a"]`, "string")),
	}
	got := map[string]*ir.Value{}
	for _, f := range bp.Status.Fields {
		got[f.Key] = f.Value
	}
	ignorePos := cmpopts.IgnoreFields(ir.Value{}, "Pos")
	if diff := cmp.Diff(want, got, ignorePos, cmpopts.IgnoreFields(ir.Expr{}, "Pos", "Checked"), cmpopts.IgnoreFields(ir.Field{}, "KeyPos"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("emit.status values (-want +got):\n%s", diff)
	}
}

// TestPositions checks the line:col of values, keys and expressions: an
// expression's position is where its source starts, inside the quotes.
func TestPositions(t *testing.T) {
	src := website + `onReconcile:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${self.metadata.name}
        labels:
          plain: x-${self.metadata.name}
          double: "x-${self.metadata.name}"
          single: 'x-${self.metadata.name}'
          padded: "${   self.metadata.name}"
          second: ${self.metadata.name}-${self.metadata.uid}
      data:
        block: |
          ${self.metadata.name}
emit:
  status:
    flow: {a: "${self.metadata.name}", b: "${self.metadata.uid}"}
`
	bp := compile(t, src)
	lines := strings.Split(src, "\n")
	// at returns the position of the n-th (from 1) occurrence of needle on
	// the line that contains marker.
	at := func(marker, needle string, n int) string {
		for i, l := range lines {
			if strings.Contains(l, marker) {
				col := 0
				for range n {
					col += strings.Index(l[col:], needle) + 1
				}
				return fmt.Sprintf("%s:%d:%d", bpFile, i+1, col)
			}
		}
		t.Fatalf("no line with %q", marker)
		return ""
	}
	ch := bp.Child("config")
	md := ch.Template.Lookup("metadata")
	labels := md.Lookup("labels")
	exprPos := func(v *ir.Value, i int) string { return v.Exprs()[i].Pos.String() }
	for _, tt := range []struct {
		what, got, want string
	}{
		{"child", ch.Pos.String(), at("id: config", "config", 1)},
		{"template", ch.Template.Pos.String(), at("apiVersion: v1", "apiVersion", 1)},
		{"labels key", md.Fields[1].KeyPos.String(), at("labels:", "labels", 1)},
		{"whole", exprPos(md.Lookup("name"), 0), at("name: ${", "self", 1)},
		{"whole, counted by hand", exprPos(md.Lookup("name"), 0), bpFile + ":13:17"},
		{"double-quoted, counted by hand", exprPos(labels.Lookup("double"), 0), bpFile + ":16:24"},
		{"whole value", md.Lookup("name").Pos.String(), at("name: ${", "$", 1)},
		{"plain", exprPos(labels.Lookup("plain"), 0), at("plain:", "self", 1)},
		{"double-quoted", exprPos(labels.Lookup("double"), 0), at("double:", "self", 1)},
		{"double-quoted value", labels.Lookup("double").Pos.String(), at("double:", `"`, 1)},
		{"single-quoted", exprPos(labels.Lookup("single"), 0), at("single:", "self", 1)},
		{"padded", exprPos(labels.Lookup("padded"), 0), at("padded:", "self", 1)},
		{"second", exprPos(labels.Lookup("second"), 1), at("second:", "self", 2)},
		{"flow", exprPos(bp.Status.Lookup("flow"), 0), at("flow:", "self", 1)},
		{"flow second", bp.Status.Lookup("flow").Lookup("b").Expr.Pos.String(), at("flow:", "self", 2)},
		// A block scalar does not map offsets to columns: the expression
		// points at the scalar.
		{"block", exprPos(ch.Template.Lookup("data").Lookup("block"), 0), ch.Template.Lookup("data").Lookup("block").Pos.String()},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.what, tt.got, tt.want)
		}
	}
}

// TestPositionsAfterEscapes checks expression positions in scalars whose
// value differs from their source text before the expression: an escape
// in a quoted scalar, or a plain scalar folded over two lines. The
// expression must point where its source is, or at the scalar, never at a
// column that holds something else.
func TestPositionsAfterEscapes(t *testing.T) {
	src := website + `emit:
  status:
    single: 'it''s ${self.metadata.name}'
    double: "\t${self.metadata.name}"
    folded: a
      b-${self.metadata.name}
`
	bp := compile(t, src)
	lines := strings.Split(src, "\n")
	for _, f := range bp.Status.Fields {
		x := f.Value.Exprs()[0]
		if x.Pos == f.Value.Pos {
			continue // pointing at the scalar is fine
		}
		line := lines[x.Pos.Line-1]
		if x.Pos.Col < 1 || x.Pos.Col > len(line) || !strings.HasPrefix(line[x.Pos.Col-1:], x.Source) {
			t.Errorf("%s: ${%s} at %v, but the source there is %q", f.Key, x.Source, x.Pos, line[min(max(x.Pos.Col-1, 0), len(line)):])
		}
	}
}

// resource is the part of ir.Resource a table can spell out.
type resource struct {
	GVK               schema.GroupVersionKind
	Plural            string
	Namespaced        bool
	StatusSubresource bool
	CRDFile           string
	HasCRD, HasSchema bool
}

func TestResource(t *testing.T) {
	for _, tt := range []struct {
		name, crd string
		want      resource
	}{{
		name: "namespaced CRD with status subresource",
		crd:  "  file: manifests/crd.yaml\n",
		want: resource{
			GVK:    schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1", Kind: "Website"},
			Plural: "websites", Namespaced: true, StatusSubresource: true,
			CRDFile: "manifests/crd.yaml", HasCRD: true, HasSchema: true,
		},
	}, {
		name: "cluster-scoped CRD: the storage version by default",
		crd:  "  file: manifests/cluster.yaml\n",
		want: resource{
			GVK:    schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1", Kind: "Tenant"},
			Plural: "tenants", StatusSubresource: true, CRDFile: "manifests/cluster.yaml", HasCRD: true, HasSchema: true,
		},
	}, {
		name: "crd.version chooses a served version",
		crd:  "  file: manifests/cluster.yaml\n  version: v1alpha1\n",
		want: resource{
			GVK:    schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1alpha1", Kind: "Tenant"},
			Plural: "tenants", StatusSubresource: true, CRDFile: "manifests/cluster.yaml", HasCRD: true, HasSchema: true,
		},
	}, {
		name: "installed CRD: plural guessed, namespaced, status assumed",
		crd:  "  group: example.inrun.dev\n  version: v1\n  kind: Policy\n",
		want: resource{
			GVK:    schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1", Kind: "Policy"},
			Plural: "policies", Namespaced: true, StatusSubresource: true,
		},
	}, {
		name: "installed CRD: plural and scope given",
		crd:  "  group: example.inrun.dev\n  version: v2\n  kind: Tenant\n  plural: tenantz\n  scope: Cluster\n",
		want: resource{
			GVK:    schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v2", Kind: "Tenant"},
			Plural: "tenantz", StatusSubresource: true,
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			bp := compile(t, "apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata:\n  name: x\ncrd:\n"+tt.crd)
			r := bp.Resource
			got := resource{r.GroupVersionKind, r.Plural, r.Namespaced, r.StatusSubresource, r.CRDFile, r.CRD != nil, r.Schema != nil}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resource (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVersionSchema checks that expressions are checked against the chosen
// version's schema: spec.quota exists in v1 only.
func TestVersionSchema(t *testing.T) {
	// A Namespace child: the Tenant is cluster-scoped, so are its children.
	src := "apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata:\n  name: x\ncrd:\n  file: manifests/cluster.yaml\n%sonReconcile:\n" +
		strings.Replace(configMap("config", "tenant-${string(self.spec.quota)}"), "kind: ConfigMap", "kind: Namespace", 1)
	bp := compile(t, fmt.Sprintf(src, ""))
	if got := bp.Child("config").Template.Exprs()[0].Type; got != "string" {
		t.Errorf("v1: Type %q, want string", got)
	}
	_, err := compiler.Compile(load.Bytes(bpFile, []byte(fmt.Sprintf(src, "  version: v1alpha1\n"))), compiler.Options{})
	errs := diag.All(err)
	if len(errs) != 1 || errs[0].Code != diag.ExprType || !strings.Contains(errs[0].Msg, "self.spec.quota") {
		t.Errorf("v1alpha1: got %v, want one ExprType error for self.spec.quota", err)
	}
}

// TestInstalledCRD checks a CRD named by group, version and kind: self is
// dynamic, so no field of it is an error, and a child of the CRD's own kind
// takes its plural and scope.
func TestInstalledCRD(t *testing.T) {
	bp := compile(t, `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: x
crd:
  group: example.inrun.dev
  version: v1
  kind: Website
  scope: Cluster
onReconcile:
  - id: replica
    includeWhen: ${self.spec.replicate}
    template:
      apiVersion: example.inrun.dev/v1
      kind: Website
      metadata:
        name: ${self.metadata.name}-replica
      spec:
        anything: ${self.spec.no.such.field}
        count: ${self.spec.count + 1}
emit:
  status:
    whatever: ${self.status.whatever}
    child: ${replica.spec.anything}
`)
	ch := bp.Child("replica")
	if ch.BuiltIn || ch.Plural != "websites" || ch.Namespaced {
		t.Errorf("child of the CRD's kind: BuiltIn %v, Plural %q, Namespaced %v; want false, websites, false", ch.BuiltIn, ch.Plural, ch.Namespaced)
	}
	for _, x := range append(ch.Template.Exprs(), bp.Status.Exprs()...) {
		if x.Type != "dyn" && x.Type != "int" {
			t.Errorf("${%s}: Type %q, want dyn", x.Source, x.Type)
		}
	}
	if ch.IncludeWhen.Type != "dyn" {
		t.Errorf("includeWhen: Type %q, want dyn", ch.IncludeWhen.Type)
	}
}

// TestOwnKindChild checks a child of the Blueprint's own CRD, checked
// against the CRD's schema.
func TestOwnKindChild(t *testing.T) {
	bp := compile(t, website+`onReconcile:
  - id: mirror
    template:
      apiVersion: example.inrun.dev/v1
      kind: Website
      metadata:
        name: ${self.metadata.name}-mirror
      spec:
        replicas: ${self.spec.replicas}
        image: nginx
emit:
  status:
    mirrorReplicas: ${mirror.spec.replicas}
`)
	ch := bp.Child("mirror")
	want := ir.Child{
		ID: "mirror", Phase: ir.OnReconcile, Pos: ir.Pos{File: bpFile, Line: 8, Col: 9},
		GroupVersionKind: schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1", Kind: "Website"},
		Plural:           "websites", Namespaced: true, DependsOn: []string{},
	}
	if diff := cmp.Diff(want, *ch, cmpopts.IgnoreFields(ir.Child{}, "Template")); diff != "" {
		t.Errorf("child (-want +got):\n%s", diff)
	}
	if got := bp.Status.Exprs()[0].Type; got != "int" {
		t.Errorf("mirror.spec.replicas: Type %q, want int", got)
	}
}

// TestCRDChild: a CustomResourceDefinition is a built-in kind, cluster
// scoped and typed (kro's ACK examples create them), whatever else the
// binary links: client-go's scheme leaves it out, and only some packages
// (controller-runtime's envtest) add it to that scheme.
func TestCRDChild(t *testing.T) {
	child := `onReconcile:
  - id: things
    template:
      apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      metadata:
        name: things.example.com
      spec:
        %s: example.com
        names:
          kind: Thing
          plural: things
        scope: Namespaced
        versions:
          - name: v1
            served: true
            storage: true
            # A schema's JSON is not its Go type's: items is a schema (or
            # a list), enum and default any values.
            schema:
              openAPIV3Schema:
                type: object
                properties:
                  size: {type: string, enum: [small, large], default: small}
                  tags: {type: array, items: {type: string}}
                  labels: {type: object, additionalProperties: {type: string}}
`
	bp := compile(t, website+fmt.Sprintf(child, "group")+`emit:
  status:
    plural: ${things.spec.names.plural}
`)
	ch := bp.Child("things")
	if ch.Plural != "customresourcedefinitions" || ch.Namespaced {
		t.Errorf("CRD child: plural %q, namespaced %v; want customresourcedefinitions, cluster scoped", ch.Plural, ch.Namespaced)
	}
	if got := bp.Status.Exprs()[0].Type; got != "string" {
		t.Errorf("things.spec.names.plural: Type %q, want string (typed by the CRD's Go type)", got)
	}
	_, err := compiler.Compile(load.Bytes(bpFile, []byte(website+fmt.Sprintf(child, "grup"))), compiler.Options{})
	if err == nil || !strings.Contains(err.Error(), "grup") {
		t.Errorf("a misspelt field of a CRD child: err = %v, want it named", err)
	}
}

func TestExternalRef(t *testing.T) {
	bp := compile(t, website+`onReconcile:
  - id: copy
    template:
      apiVersion: v1
      kind: Secret
      metadata:
        name: ${self.metadata.name}
        namespace: other
      data: ${source.data}
  - id: source
    externalRef:
      apiVersion: v1
      kind: Secret
      metadata:
        name: ${self.metadata.name}-source
        namespace: ${self.metadata.namespace}
`)
	if got := []string{bp.Children[0].ID, bp.Children[1].ID}; !cmp.Equal(got, []string{"source", "copy"}) {
		t.Errorf("order %v, want [source copy]", got)
	}
	src := bp.Child("source")
	if !src.External || !src.BuiltIn || src.Kind != "Secret" || src.Plural != "secrets" || !src.Namespaced || src.Phase != ir.OnReconcile {
		t.Errorf("source: %+v", src)
	}
	if got := len(src.Template.Fields); got != 3 {
		t.Errorf("source template has %d fields, want apiVersion, kind, metadata", got)
	}
	cp := bp.Child("copy")
	if cp.External || !cmp.Equal(cp.DependsOn, []string{"source"}) {
		t.Errorf("copy: External %v, DependsOn %v", cp.External, cp.DependsOn)
	}
	if x := cp.Template.Lookup("data").Expr; x.Type != "map(string, bytes)" || !cmp.Equal(x.Refs, []string{"source"}) {
		t.Errorf("${source.data}: Type %q, Refs %v", x.Type, x.Refs)
	}
}

// TestSections checks the reconcile section.
func TestSections(t *testing.T) {
	bp := compile(t, website+`reconcile:
  args:
    name: ${self.metadata.name}
  service:
    name: reconciler
    namespace: system
    port: 8443
    path: /reconcile
  timeout: 15s
`)
	r := bp.Reconcile
	if r == nil || r.Remote == nil {
		t.Fatalf("Reconcile %+v", r)
	}
	wantRemote := &ir.Remote{
		Pos:     ir.Pos{File: bpFile, Line: 8, Col: 3},
		Service: &ir.ServiceRef{Name: "reconciler", Namespace: "system", Port: 8443, Path: "/reconcile"},
		Timeout: 15 * time.Second,
	}
	if diff := cmp.Diff(wantRemote, r.Remote); diff != "" {
		t.Errorf("Remote (-want +got):\n%s", diff)
	}
	if x := r.Args.Lookup("name").Expr; x == nil || x.Type != "string" {
		t.Errorf("args.name: %+v", r.Args.Lookup("name"))
	}
}

func TestReconcileURL(t *testing.T) {
	bp := compile(t, website+"reconcile:\n  url: https://reconciler.example.com/v1\n")
	if r := bp.Reconcile; r.Remote == nil || r.Remote.URL != "https://reconciler.example.com/v1" || r.Remote.Service != nil || r.Args != nil {
		t.Errorf("Reconcile %+v, Remote %+v", r, r.Remote)
	}
	bp = compile(t, website)
	if bp.Reconcile != nil || bp.Status != nil || len(bp.Children) != 0 {
		t.Errorf("a Blueprint with only a crd: %+v", bp)
	}
}

// TestConditionLists: a kro-style list of readyWhen expressions is one
// expression that all of them hold, with every part's references.
func TestConditionLists(t *testing.T) {
	bp := compile(t, website+`onReconcile:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${self.metadata.name}
  - id: deployment
    readyWhen:
      - ${deployment.status.readyReplicas >= 1}
      - ${config.data.ready == "yes"}
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${self.metadata.name}
`)
	x := bp.Child("deployment").ReadyWhen
	if x == nil || x.Source != `(deployment.status.readyReplicas >= 1) && (config.data.ready == "yes")` || x.Type != "bool" || x.Checked == nil {
		t.Fatalf("readyWhen = %+v", x)
	}
	if !cmp.Equal(x.Refs, []string{"config", "deployment"}) || !cmp.Equal(bp.Child("deployment").DependsOn, []string{"config"}) {
		t.Errorf("Refs %v, DependsOn %v", x.Refs, bp.Child("deployment").DependsOn)
	}
}

// TestExternalSelector: an externalRef by label selector is a list of the
// objects it reads, which expressions and forEach take as one.
func TestExternalSelector(t *testing.T) {
	bp := compile(t, website+`onReconcile:
  - id: mirror
    forEach:
      - config: ${configs}
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${self.metadata.name}-${config.metadata.name}
      data: ${config.data}
  - id: configs
    externalRef:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        selector:
          matchLabels:
            app: ${self.metadata.name}
          matchExpressions:
            - key: tier
              operator: In
              values: [gold, "${self.spec.image}"]
emit:
  status:
    count: ${size(configs)}
    names: ${configs.map(c, c.metadata.name)}
`)
	cfg := bp.Child("configs")
	if !cfg.External || !cfg.Selector || cfg.Kind != "ConfigMap" {
		t.Fatalf("configs: External %v, Selector %v, Kind %q", cfg.External, cfg.Selector, cfg.Kind)
	}
	if got := []string{bp.Children[0].ID, bp.Children[1].ID}; !cmp.Equal(got, []string{"configs", "mirror"}) {
		t.Errorf("order %v, want [configs mirror]", got)
	}
	if it := bp.Child("mirror").ForEach[0].Items; it.Type != "list(v1.ConfigMap)" {
		t.Errorf("forEach items ${configs}: Type %q, want list(v1.ConfigMap)", it.Type)
	}
	if x := bp.Status.Lookup("count").Expr; x.Type != "int" || !cmp.Equal(x.Refs, []string{"configs"}) {
		t.Errorf("${size(configs)}: Type %q, Refs %v", x.Type, x.Refs)
	}
	if x := bp.Status.Lookup("names").Expr; x.Type != "list(string)" {
		t.Errorf("${configs.map(...)}: Type %q, want list(string)", x.Type)
	}
	// The selector's expressions read self only.
	if n := len(cfg.Template.Exprs()); n != 2 {
		t.Errorf("the selector has %d expressions, want 2", n)
	}
}

// TestEmitConditions: custom conditions and emit.readyWhen are checked
// expressions, in RenderExprs after emit.status.
func TestEmitConditions(t *testing.T) {
	bp := compile(t, website+`onReconcile:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${self.metadata.name}
emit:
  status:
    replicas: ${deployment.status.readyReplicas}
  conditions:
    - type: Available
      status: ${deployment.status.availableReplicas > 0}
      reason: Replicas
      message: ${string(deployment.status.availableReplicas)} available
    - type: Scaled
      status: '${deployment.status.replicas == 0 ? "Unknown" : "True"}'
  readyWhen:
    - ${deployment.status.readyReplicas >= 1}
    - ${self.spec.expose}
`)
	if len(bp.Conditions) != 2 {
		t.Fatalf("Conditions = %+v", bp.Conditions)
	}
	av := bp.Conditions[0]
	if av.Type != "Available" || av.Status.Type != "bool" || !cmp.Equal(av.Status.Refs, []string{"deployment"}) || av.Pos.Line != 18 {
		t.Errorf("Available: %+v, status %+v", av, av.Status)
	}
	if av.Reason.Kind != ir.Literal || av.Reason.Literal != "Replicas" || av.Message.Kind != ir.Interpolation {
		t.Errorf("Available: reason %+v, message %+v", av.Reason, av.Message)
	}
	if sc := bp.Conditions[1]; sc.Status.Type != "string" || sc.Reason != nil || sc.Message != nil {
		t.Errorf("Scaled: %+v, status %+v", sc, sc.Status)
	}
	if len(bp.ReadyWhen) != 2 || bp.ReadyWhen[0].Type != "bool" || !cmp.Equal(bp.ReadyWhen[1].Refs, []string{"self"}) {
		t.Errorf("ReadyWhen = %+v", bp.ReadyWhen)
	}
	var got []string
	for _, x := range bp.RenderExprs() {
		got = append(got, x.Source)
	}
	want := []string{
		"self.metadata.name", "deployment.status.readyReplicas",
		"deployment.status.availableReplicas > 0", "string(deployment.status.availableReplicas)",
		`deployment.status.replicas == 0 ? "Unknown" : "True"`,
		"deployment.status.readyReplicas >= 1", "self.spec.expose",
	}
	if !cmp.Equal(got, want) {
		t.Errorf("RenderExprs:\n%s", cmp.Diff(want, got))
	}
	// The IR carries them to generated operators.
	data, err := ir.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ir.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Conditions) != 2 || back.Conditions[1].Status.Checked == nil || len(back.ReadyWhen) != 2 || back.ReadyWhen[1].Checked == nil {
		t.Errorf("after Marshal and Unmarshal: Conditions %+v, ReadyWhen %+v", back.Conditions, back.ReadyWhen)
	}
}

// TestLifecycle: lifecycle.deprecation comes into the IR typed, its date
// as midnight UTC, with its position; without the section there is none.
func TestLifecycle(t *testing.T) {
	bp := compile(t, website+`lifecycle:
  deprecation:
    message: website is replaced by webapp
    replacement: registry.example/team/webapp:2.0.0
    after: 2027-06-30
    versions: "<2.0.0"
`)
	want := &ir.Lifecycle{Deprecation: &ir.Deprecation{
		Message:     "website is replaced by webapp",
		Replacement: "registry.example/team/webapp:2.0.0",
		After:       time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC),
		Versions:    "<2.0.0",
		Pos:         ir.Pos{File: bpFile, Line: 8, Col: 3},
	}}
	if diff := cmp.Diff(want, bp.Lifecycle); diff != "" {
		t.Errorf("Lifecycle (-want +got):\n%s", diff)
	}
	bp = compile(t, website+"lifecycle:\n  deprecation:\n    message: use webapp\n    after: \"2027-01-31\"\n")
	if d := bp.Lifecycle.Deprecation; d.Message != "use webapp" || d.Replacement != "" || d.Versions != "" || !d.After.Equal(time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("a quoted date, no replacement: %+v", d)
	}
	if bp := compile(t, website); bp.Lifecycle != nil {
		t.Errorf("no lifecycle section: %+v", bp.Lifecycle)
	}
}
