package simpleschema_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/diag/diagtest"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/simpleschema"
)

func TestParseField(t *testing.T) {
	for _, tc := range []struct {
		in   string
		typ  string
		mark map[string]string
	}{
		{in: "string", typ: "string"},
		{in: "  integer  ", typ: "integer"},
		{in: "number", typ: "float"},
		{in: "[][]map[string]Person", typ: "[][]map[string]Person"},
		{in: `string | default="a b" description="say \"hi\""`, typ: "string", mark: map[string]string{"default": "a b", "description": `say "hi"`}},
		{in: `string | pattern="^\d+$"`, typ: "string", mark: map[string]string{"pattern": `^\d+$`}},
		{in: `object | default={"a": [1, 2], "b": "}"}`, typ: "object", mark: map[string]string{"default": `{"a": [1, 2], "b": "}"}`}},
		{in: "integer|default=2   minimum=0", typ: "integer", mark: map[string]string{"default": "2", "minimum": "0"}},
		{in: `string | default=""`, typ: "string", mark: map[string]string{"default": ""}},
	} {
		f, errs := simpleschema.ParseField(tc.in)
		if len(errs) > 0 {
			t.Errorf("ParseField(%q): %v", tc.in, errs)
			continue
		}
		if got := f.Type.String(); got != tc.typ {
			t.Errorf("ParseField(%q) type = %s; want %s", tc.in, got, tc.typ)
		}
		got := map[string]string{}
		for _, m := range f.Markers {
			got[m.Name] = m.Value
		}
		if len(tc.mark) == 0 {
			tc.mark = map[string]string{}
		}
		if d := cmp.Diff(tc.mark, got); d != "" {
			t.Errorf("ParseField(%q) markers (-want +got):\n%s", tc.in, d)
		}
	}
}

// TestParseFieldOffsets checks that problems point at the byte they
// concern, which Parser turns into a column.
func TestParseFieldOffsets(t *testing.T) {
	for _, tc := range []struct {
		in  string
		off int
	}{
		{"strng", 0},
		{"[]  ", 2},
		{"map[int]string", 0},
		{"integer | minimun=1", 10},
		{`integer | default=1 description="x`, 32},
		{"string | =x", 9},
		{"string | default=}", 17},
		{"string | default={", 17},
	} {
		_, errs := simpleschema.ParseField(tc.in)
		if len(errs) == 0 {
			// strng parses as a declared type's name: the Parser reports it.
			if tc.in == "strng" {
				continue
			}
			t.Errorf("ParseField(%q) reported nothing", tc.in)
			continue
		}
		if errs[0].Offset != tc.off {
			t.Errorf("ParseField(%q): %v at offset %d; want %d", tc.in, errs[0], errs[0].Offset, tc.off)
		}
	}
}

// parse reads a file of short schemas: types, then every other top-level
// key as an object of fields.
func parse(t *testing.T, file string, src []byte) (map[string]*apiextensionsv1.JSONSchemaProps, *simpleschema.Parser, error) {
	t.Helper()
	var errs diag.List
	r := yamlpos.NewReader(file, &errs)
	root := r.Parse(src, "")
	top := r.Map(root, "")
	p := simpleschema.NewParser(r)
	if n := top.Get("types"); n != nil {
		p.Types(n, "types")
	}
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, k := range top.Order {
		if k != "types" {
			out[k] = p.Object(top.Get(k), k)
		}
	}
	return out, p, errs.Err()
}

func TestErrors(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no testdata/errors/*.yaml")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = parse(t, file, src)
			diagtest.Check(t, file, src, err, false)
		})
	}
}

// TestSchemas checks the schema each short form becomes, written as the
// YAML of a CRD's openAPIV3Schema, and that it is structural (what the API
// server requires of a CRD).
func TestSchemas(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{{
		name: "kro's example",
		in: `
spec:
  name: string | required=true immutable=true description="My Name"
  replicas: integer | default=1 minimum=1 maximum=100
  values: object
  ingress:
    enabled: boolean | default=false
    host: string | default="example.com"
  ports: "[]integer"
  env: "map[string]string"
  price: float | minimum=0.01
`,
		want: `
type: object
required: [name]
properties:
  name:
    type: string
    description: My Name
    x-kubernetes-validations: [{rule: self == oldSelf, message: field is immutable}]
  replicas: {type: integer, default: 1, minimum: 1, maximum: 100}
  values: {type: object, x-kubernetes-preserve-unknown-fields: true}
  ingress:
    type: object
    default: {}
    properties:
      enabled: {type: boolean, default: false}
      host: {type: string, default: example.com}
  ports: {type: array, items: {type: integer}}
  env: {type: object, additionalProperties: {type: string}}
  price: {type: number, minimum: 0.01}
`,
	}, {
		name: "custom types, required alias",
		in: `
types:
  Name: string | required=true minLength=1
  Container:
    name: Name
    port: integer | default=80
spec:
  main: Container
  sidecars: '[]Container | listType=map listMapKey=name'
`,
		want: `
type: object
properties:
  main:
    type: object
    required: [name]
    properties:
      name: {type: string, minLength: 1}
      port: {type: integer, default: 80}
  sidecars:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name]
    items:
      type: object
      required: [name]
      properties:
        name: {type: string, minLength: 1}
        port: {type: integer, default: 80}
`,
	}, {
		name: "enum, pattern, lists and defaults of every type",
		in: `
spec:
  mode: string | enum="debug, info" default=info
  code: integer | enum="1,2"
  tags: "[]string | uniqueItems=true minItems=1 maxItems=3 default=[a]"
  env: 'map[string]string | default={"A": "1"}'
  ratio: float | default=0.5
  id: string | pattern="^[a-z]+$" maxLength=8 validation="self != 'admin'"
`,
		want: `
type: object
default: {}
properties:
  mode: {type: string, enum: [debug, info], default: info}
  code: {type: integer, enum: [1, 2]}
  tags: {type: array, items: {type: string}, x-kubernetes-list-type: set, minItems: 1, maxItems: 3, default: [a]}
  env: {type: object, additionalProperties: {type: string}, default: {A: "1"}}
  ratio: {type: number, default: 0.5}
  id: {type: string, pattern: "^[a-z]+$", maxLength: 8, x-kubernetes-validations: [{rule: "self != 'admin'"}]}
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := parse(t, "test.yaml", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var want apiextensionsv1.JSONSchemaProps
			if err := sigsyaml.UnmarshalStrict([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(jsonOf(t, &want), jsonOf(t, got["spec"])); d != "" {
				t.Errorf("schema (-want +got):\n%s", d)
			}
			structural(t, got["spec"])
		})
	}
}

func jsonOf(t *testing.T, s *apiextensionsv1.JSONSchemaProps) any {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func structural(t *testing.T, s *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(s, internal, nil); err != nil {
		t.Fatal(err)
	}
	st, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	if errs := structuralschema.ValidateStructural(nil, st); len(errs) > 0 {
		t.Errorf("not structural: %v", errs.ToAggregate())
	}
}

// TestPositions checks that fields and markers are found where they are
// written, which is how a later check of the schema points at the source.
func TestPositions(t *testing.T) {
	src := "spec:\n  ingress:\n    host: string | default=\"x\"\n  port: \"integer | minimum=1\"\n"
	_, p, err := parse(t, "f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, marker, want string
	}{
		{"spec.ingress", "", "f.yaml:2:3"},
		{"spec.ingress.host", "", "f.yaml:3:5"},
		{"spec.ingress.host", "default", "f.yaml:3:20"},
		{"spec.port", "minimum", "f.yaml:4:20"},
	} {
		var pos diag.Pos
		var ok bool
		if tc.marker == "" {
			pos, ok = p.Pos(tc.path)
		} else {
			pos, ok = p.MarkerPos(tc.path, tc.marker)
		}
		if !ok || pos.String() != tc.want {
			t.Errorf("position of %s %s = %v (%t); want %s", tc.path, tc.marker, pos, ok, tc.want)
		}
	}
}
