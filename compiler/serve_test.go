package compiler_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
)

// TestServe compiles the intent pack's Blueprint and checks its serve
// section as the gateway reads it.
func TestServe(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/intent/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := bp.Serve
	if s == nil {
		t.Fatal("no Serve")
	}
	if s.Target != "app" || s.Description == "" {
		t.Errorf("Target %q Description %q", s.Target, s.Description)
	}
	type field struct {
		Name, Path string
		Type       ir.FieldType
		Required   bool
		Default    any
		Desc       bool
	}
	var got []field
	for _, f := range s.Fields {
		var def any
		if f.Default != nil {
			def = f.Default.Literal
		}
		got = append(got, field{f.Name, f.Path, f.Type, f.Required, def, f.Description != ""})
	}
	// Types and descriptions come from the CRD where the field has a path.
	want := []field{
		{"repository", "spec.repository", ir.FieldString, true, nil, true},
		{"environment", "", ir.FieldString, false, "staging", true},
		{"version", "spec.version", ir.FieldString, false, nil, true},
		{"replicas", "spec.replicas", ir.FieldInteger, false, nil, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if s.Name != (ir.ServeName{From: "repository"}) {
		t.Errorf("Name %+v", s.Name)
	}
	if diff := cmp.Diff(ir.ServeNamespace{From: "environment", Map: map[string]string{"staging": "apps-staging", "prod": "apps-prod"}}, s.Namespace); diff != "" {
		t.Errorf("Namespace (-want +got):\n%s", diff)
	}
	if !slices.Equal(s.Environments(), []string{"prod", "staging"}) {
		t.Errorf("Environments %v", s.Environments())
	}
	// reconcile.args reads three of the fields' paths; the reconciler's
	// failures name them.
	if diff := cmp.Diff(map[string][]string{ir.RemoteReads: {"replicas", "repository", "version"}}, s.Reads); diff != "" {
		t.Errorf("Reads (-want +got):\n%s", diff)
	}
	for _, x := range s.ViewExprs() {
		if x.Checked == nil {
			t.Errorf("view ${%s} not checked", x.Source)
		}
	}
	if x := s.View.Lookup("replicas").Expr; x == nil || x.Type != "int" {
		t.Errorf("view.replicas: %+v", s.View.Lookup("replicas"))
	}
	if len(s.Tokens) != 3 || !s.Tokens[0].Allows(ir.VerbCreate, "staging") || s.Tokens[0].Allows(ir.VerbCreate, "prod") || s.Tokens[2].Allows(ir.VerbDelete, "staging") {
		t.Errorf("Tokens %+v", s.Tokens)
	}
	// The IR carries serve into generated operators and back.
	data, err := ir.Marshal(bp)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ir.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Serve == nil || back.Serve.Field("replicas").Type != ir.FieldInteger || back.Serve.Field("environment").Default.Literal != "staging" || back.Serve.View.Lookup("url").Expr.Checked == nil {
		t.Errorf("Serve after Marshal/Unmarshal: %+v", back.Serve)
	}
}

// TestServeDefaults checks what a minimal serve section means: the target
// is the Blueprint's name, names are generated, CRs go in default.
func TestServeDefaults(t *testing.T) {
	bp := compile(t, website+`serve:
  fields:
    image:
      path: spec.image
  tokens:
    - scope: web
      verbs: [create]
`)
	s := bp.Serve
	if s.Target != "website" || s.Name.Generate != "website-" || s.Namespace.Name != "default" || s.Field("image").Type != ir.FieldString {
		t.Errorf("Serve %+v", s)
	}
}

// TestServeReads checks which fields a template child is said to read.
func TestServeReads(t *testing.T) {
	bp := compile(t, website+`onReconcile:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${self.metadata.name}
      spec:
        replicas: ${self.spec.?replicas.orValue(1)}
        selector:
          matchLabels: {app: web}
        template:
          metadata:
            labels: {app: web}
          spec:
            containers:
              - name: web
                image: ${self.spec.image}
  - id: service
    includeWhen: ${self.spec.expose}
    template:
      apiVersion: v1
      kind: Service
      metadata:
        name: ${self.metadata.name}
      spec:
        ports: [{port: 80}]
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${self.metadata.name}
      data:
        all: ${json.marshal(self.spec)}
serve:
  fields:
    image: {path: spec.image}
    replicas: {path: spec.replicas}
    expose: {path: spec.expose}
    port: {path: spec.port}
  tokens:
    - {scope: web, verbs: [create, get]}
`)
	want := map[string][]string{
		"deployment": {"image", "replicas"},
		"service":    {"expose"},
		"config":     {"expose", "image", "port", "replicas"},
	}
	if diff := cmp.Diff(want, bp.Serve.Reads); diff != "" {
		t.Errorf("Reads (-want +got):\n%s", diff)
	}
}
