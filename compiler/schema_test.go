package compiler_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
)

// shortHeader starts a Blueprint whose CRD is a schema section.
const shortHeader = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: short
schema:
  apiVersion: v1alpha1
  group: example.com
`

func TestShortSchemaResource(t *testing.T) {
	bp := compile(t, shortHeader+`  kind: Policy
  scope: Cluster
  shortNames: [pol]
  categories: [security]
  metadata:
    labels: {team: platform}
  spec:
    rules: "[]string"
`)
	r := bp.Resource
	if r.Group != "example.com" || r.Version != "v1alpha1" || r.Kind != "Policy" || r.Plural != "policies" || r.Namespaced || !r.StatusSubresource || r.CRDFile != "" {
		t.Errorf("Resource = %+v", r)
	}
	crd := r.CRD
	if crd == nil {
		t.Fatal("no CRD generated")
	}
	if crd.Name != "policies.example.com" || crd.Spec.Scope != apiextensionsv1.ClusterScoped || crd.Spec.Names.Singular != "policy" || crd.Spec.Names.ListKind != "PolicyList" ||
		!cmp.Equal(crd.Spec.Names.ShortNames, []string{"pol"}) || !cmp.Equal(crd.Spec.Names.Categories, []string{"security"}) || crd.Labels["team"] != "platform" {
		t.Errorf("CRD = %+v", crd)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema.OpenAPIV3Schema != r.Schema {
		t.Errorf("the CRD's one version should hold the Resource's schema")
	}
}

// TestShortSchemaPlural checks the plurals a kind gets, as kubebuilder and
// kro name them.
func TestShortSchemaPlural(t *testing.T) {
	for kind, want := range map[string]string{
		"WebApp": "webapps", "Policy": "policies", "Ingress": "ingresses", "Database": "databases", "Proxy": "proxies", "Person": "people",
	} {
		bp := compile(t, shortHeader+"  kind: "+kind+"\n")
		if bp.Resource.Plural != want {
			t.Errorf("kind %s: plural %q; want %q", kind, bp.Resource.Plural, want)
		}
	}
	if bp := compile(t, shortHeader+"  kind: Person\n  plural: persons\n"); bp.Resource.Plural != "persons" || bp.Resource.CRD.Name != "persons.example.com" {
		t.Errorf("schema.plural persons: got %q", bp.Resource.Plural)
	}
}

// TestShortSchemaStatus checks the status schema inferred from emit.status:
// each field typed from its expression or literal, schema.status winning
// where it declares a field, and the runtime's fields.
func TestShortSchemaStatus(t *testing.T) {
	bp := compile(t, shortHeader+`  kind: App
  spec:
    image: string
    replicas: integer
    ingress:
      host: string
      port: integer
    tags: "map[string]string"
  status:
    url: string | description="Where it is served."
    endpoint:
      scheme: string
onReconcile:
  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata:
        name: ${self.metadata.name}
      spec:
        selector:
          matchLabels: {app: x}
        template:
          metadata:
            labels: {app: x}
          spec:
            containers:
              - name: x
                image: ${self.spec.image}
emit:
  status:
    ready: ${deployment.status.readyReplicas}
    available: ${deployment.status.readyReplicas == self.spec.replicas}
    ratio: ${double(deployment.status.readyReplicas) / 2.0}
    url: http://${self.metadata.name}
    ingress: ${self.spec.ingress}
    tags: ${self.spec.tags}
    images: ${deployment.spec.template.spec.containers.map(c, c.image)}
    created: ${deployment.metadata.creationTimestamp}
    limits: ${deployment.spec.template.spec.containers[0].resources.limits}
    cpu: ${deployment.spec.template.spec.containers[0].resources.limits["cpu"]}
    maxSurge: ${deployment.spec.strategy.rollingUpdate.maxSurge}
    since: ${timestamp("2024-01-01T00:00:00Z")}
    hash: ${hash.sha256(self.spec.image)}
    everything: ${deployment.status}
    whatever: ${json.unmarshal("{}")}
    host: ${self.spec.?ingress.host}
    literal: 3
    flag: true
    nested:
      name: ${self.metadata.name}
      count: 2
    list: [1, 2]
    mixed: [1, "a"]
    endpoint:
      scheme: https
      port: ${self.spec.ingress.port}
`)
	status := bp.Resource.Schema.Properties["status"]
	want := map[string]string{
		"ready":              `{"type":"integer","format":"int64"}`,
		"available":          `{"type":"boolean"}`,
		"ratio":              `{"type":"number"}`,
		"url":                `{"description":"Where it is served.","type":"string"}`,
		"ingress":            `{"type":"object","properties":{"host":{"type":"string"},"port":{"type":"integer","format":"int64"}}}`,
		"tags":               `{"type":"object","additionalProperties":{"type":"string"}}`,
		"images":             `{"type":"array","items":{"type":"string"}}`,
		"created":            `{"type":"string","format":"date-time"}`,
		"limits":             `{"type":"object","additionalProperties":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}}`,
		"cpu":                `{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`,
		"maxSurge":           `{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}`,
		"since":              `{"type":"string","format":"date-time"}`,
		"hash":               `{"type":"string","format":"byte"}`,
		"everything":         `{"x-kubernetes-preserve-unknown-fields":true}`,
		"whatever":           `{"x-kubernetes-preserve-unknown-fields":true}`,
		"host":               `{"type":"string"}`,
		"literal":            `{"type":"integer","format":"int64"}`,
		"flag":               `{"type":"boolean"}`,
		"nested":             `{"type":"object","properties":{"count":{"type":"integer","format":"int64"},"name":{"type":"string"}}}`,
		"list":               `{"type":"array","items":{"type":"integer","format":"int64"}}`,
		"mixed":              `{"type":"array","items":{"x-kubernetes-preserve-unknown-fields":true}}`,
		"endpoint":           `{"type":"object","properties":{"port":{"type":"integer","format":"int64"},"scheme":{"type":"string"}}}`,
		"observedGeneration": `{"description":"The generation of the spec the runtime last reconciled.","type":"integer","format":"int64"}`,
	}
	for field, w := range want {
		got, ok := status.Properties[field]
		if !ok {
			t.Errorf("status.%s is not declared", field)
			continue
		}
		var wantProps apiextensionsv1.JSONSchemaProps
		if err := json.Unmarshal([]byte(w), &wantProps); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantProps, got); d != "" {
			t.Errorf("status.%s (-want +got):\n%s", field, d)
		}
	}
	if _, ok := status.Properties["conditions"]; !ok {
		t.Error("status.conditions is not declared")
	}
	if status.XPreserveUnknownFields != nil {
		t.Error("the status keeps unknown fields; without a remote reconciler it should say every field")
	}
	if n := len(status.Properties); n != len(want)+1 {
		t.Errorf("status has %d fields; want %d", n, len(want)+1)
	}
}

// TestShortSchemaRemoteStatus checks that a remote reconciler's status,
// which only its replies say, is kept, and that reconcile.api's id field is
// declared a string.
func TestShortSchemaRemoteStatus(t *testing.T) {
	bp := compile(t, shortHeader+`  kind: Record
  spec:
    name: string
reconcile:
  api:
    url: http://dns.example/records/${id}
    id:
      field: recordId
      from: ${response.body.id}
    create:
      url: http://dns.example/records
    body:
      name: ${self.spec.name}
    result:
      status:
        name: ${response.body.name}
`)
	status := bp.Resource.Schema.Properties["status"]
	if status.XPreserveUnknownFields == nil || !*status.XPreserveUnknownFields {
		t.Error("the status of a Blueprint with a remote reconciler should keep unknown fields")
	}
	if id := status.Properties["recordId"]; id.Type != "string" {
		t.Errorf("status.recordId = %+v; want a string", id)
	}
}

// TestShortSchemaSameAsCRDFile compiles the short-schema pack example, then
// the same Blueprint with its generated CRD written out and named in
// crd.file: the two IRs must be the same, so that every stage after the
// compiler treats a generated CRD as it treats a hand-written one.
func TestShortSchemaSameAsCRDFile(t *testing.T) {
	src, err := os.ReadFile("../packs/declarative/08-short-schema/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	short := filepath.Join(dir, "short", "blueprint.yaml")
	long := filepath.Join(dir, "long", "blueprint.yaml")
	write := func(path string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(short, src)
	generated, err := compiler.CompileFile(short, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := ir.MarshalCRD(generated.Resource.CRD)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, "long", "manifests", "crd.yaml"), manifest)

	// The schema section, replaced by crd.file, line for line: positions
	// stay the same.
	lines := strings.Split(string(src), "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		switch {
		case l == "schema:":
			start = i
		case start >= 0 && i > start && l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "#") && end == len(lines):
			end = i
		}
	}
	if start < 0 {
		t.Fatal("no schema section in the example")
	}
	for i := start; i < end; i++ {
		lines[i] = "#"
	}
	lines[start], lines[start+1] = "crd:", "  file: manifests/crd.yaml"
	write(long, []byte(strings.Join(lines, "\n")))
	fromFile, err := compiler.CompileFile(long, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}

	fromFile.Resource.CRDFile = ""
	fromFile.File = generated.File
	a, err := ir.Marshal(generated)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ir.Marshal(fromFile.WithFiles(func(f string) string { return strings.Replace(f, long, short, 1) }))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(b), string(a)); d != "" {
		t.Errorf("IR from crd.file (-) and from schema (+) differ:\n%s", d)
	}
	var roundTrip apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(manifest, &roundTrip); err != nil {
		t.Errorf("the generated CRD does not read back strictly: %v", err)
	}
}

// TestShortSchemaConfigMap checks that a Blueprint kept in a ConfigMap (inrun
// run --from-configmaps) gets its CRD generated as one read from a file
// does: it names no file, so it needs none.
func TestShortSchemaConfigMap(t *testing.T) {
	src, err := os.ReadFile("../packs/declarative/08-short-schema/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "short", Namespace: "inrun-system"},
		Data:       map[string]string{load.KeyBlueprint: string(src)},
	}
	bp, err := compiler.CompileConfigMap(cm)
	if err != nil {
		t.Fatal(err)
	}
	if bp.Resource.CRD == nil || bp.Resource.CRD.Name != "staticsites.example.inrun.dev" {
		t.Errorf("the ConfigMap's Blueprint has CRD %v; want the one generated from its schema", bp.Resource.CRD)
	}
}

func TestShortSchemaWorkflowStatus(t *testing.T) {
	bp := compile(t, shortHeader+`  kind: Order
  spec:
    item: string
reconcile:
  url: http://127.0.0.1:8080/reconcile
  workflow:
    steps:
      - name: Reserve
`)
	wf := bp.Resource.Schema.Properties["status"].Properties["workflow"]
	if wf.Type != "object" || wf.XPreserveUnknownFields == nil || !*wf.XPreserveUnknownFields {
		t.Errorf("status.workflow = %+v; want an object that keeps its fields", wf)
	}
}
