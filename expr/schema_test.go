package expr

import (
	"reflect"
	"sort"
	"testing"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"
)

// testSchema exercises every branch of common.UnstructuredToVal: nested
// objects, maps, list types, int-or-string, formats, nullable fields,
// preserved unknown fields and embedded resources.
const testSchema = `
type: object
properties:
  spec:
    type: object
    properties:
      image: {type: string}
      replicas: {type: integer}
      ratio: {type: number}
      enabled: {type: boolean}
      port: {x-kubernetes-int-or-string: true}
      timeout: {type: string, format: duration}
      note: {type: string, nullable: true}
      labels:
        type: object
        additionalProperties: {type: string}
      anything:
        type: object
        x-kubernetes-preserve-unknown-fields: true
      empty: {type: object}
      tags:
        type: array
        x-kubernetes-list-type: set
        items: {type: string}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items:
          type: object
          required: [name]
          properties:
            name: {type: string}
            port: {type: integer}
      matrix:
        type: array
        items:
          type: array
          items: {type: integer}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func structural(t *testing.T) *structuralschema.Structural {
	t.Helper()
	props := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(testSchema), props); err != nil {
		t.Fatal(err)
	}
	s, err := ResourceSchema(props)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestValueSchemaMatchesModel checks that the memoized adapter answers
// exactly as model.Structural does, node by node.
func TestValueSchemaMatchesModel(t *testing.T) {
	s := structural(t)
	sameSchema(t, "self", &model.Structural{Structural: s}, newValueSchema(s))
}

func sameSchema(t *testing.T, path string, want, got common.Schema) {
	t.Helper()
	if (want == nil) != (got == nil) {
		t.Fatalf("%s: schema %v, want %v", path, got, want)
	}
	if want == nil {
		return
	}
	for _, c := range []struct {
		name      string
		want, got any
	}{
		{"type", want.Type(), got.Type()},
		{"format", want.Format(), got.Format()},
		{"nullable", want.Nullable(), got.Nullable()},
		{"int-or-string", want.IsXIntOrString(), got.IsXIntOrString()},
		{"embedded", want.IsXEmbeddedResource(), got.IsXEmbeddedResource()},
		{"preserve", want.IsXPreserveUnknownFields(), got.IsXPreserveUnknownFields()},
		{"list type", want.XListType(), got.XListType()},
		{"list map keys", want.XListMapKeys(), got.XListMapKeys()},
		{"required", want.Required(), got.Required()},
		{"properties nil", want.Properties() == nil, got.Properties() == nil},
		{"properties", keys(want.Properties()), keys(got.Properties())},
		{"additionalProperties nil", want.AdditionalProperties() == nil, got.AdditionalProperties() == nil},
	} {
		if !reflect.DeepEqual(c.want, c.got) {
			t.Errorf("%s: %s = %v, want %v", path, c.name, c.got, c.want)
		}
	}
	for name, p := range want.Properties() {
		sameSchema(t, path+"."+name, p, got.Properties()[name])
	}
	sameSchema(t, path+"[]", want.Items(), got.Items())
	if ap := want.AdditionalProperties(); ap != nil && got.AdditionalProperties() != nil {
		if ap.Allows() != got.AdditionalProperties().Allows() {
			t.Errorf("%s: additionalProperties allows = %v, want %v", path, got.AdditionalProperties().Allows(), ap.Allows())
		}
		sameSchema(t, path+"{}", ap.Schema(), got.AdditionalProperties().Schema())
	}
	if want.IsXEmbeddedResource() {
		w, g := want.WithTypeAndObjectMeta(), got.WithTypeAndObjectMeta()
		if keys(w.Properties()) == nil || !reflect.DeepEqual(keys(w.Properties()), keys(g.Properties())) {
			t.Errorf("%s: with type and object meta: properties %v, want %v", path, keys(g.Properties()), keys(w.Properties()))
		}
		sameSchema(t, path+".metadata", w.Properties()["metadata"], g.Properties()["metadata"])
		if again := g.WithTypeAndObjectMeta(); again != g {
			t.Errorf("%s: WithTypeAndObjectMeta is not idempotent", path)
		}
	}
}

func keys(m map[string]common.Schema) []string {
	if m == nil {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestValueSchemaReadsObjectsAsModel converts the same object with both
// adapters and checks the CEL values are equal and read back the same.
func TestValueSchemaReadsObjectsAsModel(t *testing.T) {
	s := structural(t)
	obj := map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": "hello", "namespace": "shop", "labels": map[string]any{"a": "b"}},
		"spec": map[string]any{
			"image": "nginx", "replicas": int64(3), "ratio": 0.5, "enabled": true,
			"port": "http", "timeout": "5s",
			"labels":   map[string]any{"tier": "web"},
			"anything": map[string]any{},
			"empty":    map[string]any{},
			"tags":     []any{"a", "b"},
			"ports":    []any{map[string]any{"name": "http", "port": int64(80)}},
			"matrix":   []any{[]any{int64(1), int64(2)}},
			"template": map[string]any{
				"apiVersion": "v1", "kind": "Thing",
				"metadata": map[string]any{"name": "t"},
				"spec":     map[string]any{"size": int64(2)},
			},
		},
	}
	want := common.UnstructuredToVal(obj, &model.Structural{Structural: s})
	got := common.UnstructuredToVal(obj, newValueSchema(s))
	if eq := got.Equal(want); eq != types.True {
		t.Errorf("values differ: Equal = %v", eq)
	}
	wj, err := ToJSON(want)
	if err != nil {
		t.Fatal(err)
	}
	gj, err := ToJSON(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(wj, gj) {
		t.Errorf("ToJSON = %#v\nwant %#v", gj, wj)
	}

	// A null nullable field reads as absent.
	obj["spec"].(map[string]any)["note"] = nil
	for _, sch := range []common.Schema{&model.Structural{Structural: s}, newValueSchema(s)} {
		spec := common.UnstructuredToVal(obj, sch).(traits.Mapper).Get(types.String("spec")).(traits.Mapper)
		if v, found := spec.Find(types.String("note")); found {
			t.Errorf("%T: spec.note = %v, want absent", sch, v)
		}
	}
}

// TestValueSchemaIsMemoized is the point of valueSchema: reading the
// derived schemas allocates nothing, and each call returns the same map.
func TestValueSchemaIsMemoized(t *testing.T) {
	v := newValueSchema(structural(t))
	spec := v.Properties()["spec"]
	allocs := testing.AllocsPerRun(100, func() {
		_ = v.Properties()["spec"].Properties()["labels"].AdditionalProperties().Schema()
		_ = spec.Properties()["ports"].Items().Properties()
		_ = spec.Properties()["template"].WithTypeAndObjectMeta().Properties()
	})
	if allocs != 0 {
		t.Errorf("reading derived schemas allocated %v times per run, want 0", allocs)
	}
	if reflect.ValueOf(v.Properties()).UnsafePointer() != reflect.ValueOf(v.Properties()).UnsafePointer() {
		t.Error("Properties returns a new map on each call")
	}
}
