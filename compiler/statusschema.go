package compiler

import (
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// finishSchema completes the CRD of a schema: section once the checker has
// typed emit.status: it declares the status, and checks the CRD as the API
// server will when it is installed.
func (d *decoder) finishSchema(bp *ir.Blueprint, c *checker) {
	s := d.short
	if s == nil || s.crd == nil {
		return
	}
	root := s.root.DeepCopy()
	root.Properties["status"] = *s.statusSchema(bp, c)
	s.crd.Spec.Versions[0].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root}
	bp.Resource.Schema = root
	bp.Resource.CRD = s.crd
	s.validate(bp, &d.errs)
}

// statusSchema is the status of the generated CRD: what schema.status
// declares, the type of every other emit.status field (c nil: any field, as
// while the checker runs), and what the runtime writes. A remote
// reconciler's Result says its own status fields, so with one the status
// keeps any field too.
func (s *shortSchema) statusSchema(bp *ir.Blueprint, c *checker) *apiextensionsv1.JSONSchemaProps {
	out := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	if c == nil || (bp.Reconcile != nil && bp.Reconcile.Remote != nil) {
		out.XPreserveUnknownFields = ptrTo(true)
	}
	if c != nil && bp.Status != nil {
		for _, f := range bp.Status.Fields {
			out.Properties[f.Key] = c.valueSchema(f.Value, "status."+f.Key, 0)
			s.emitted["status."+f.Key] = f.KeyPos
		}
	}
	if s.status != nil && c == nil {
		// While the checker runs, emit.status may add fields to the
		// objects schema.status declares.
		declared := s.status.DeepCopy()
		openObjects(declared)
		mergeSchema(out, declared)
		out.Required = s.status.Required
	} else if s.status != nil {
		mergeSchema(out, s.status)
		out.Required = s.status.Required
		out.Default = s.status.Default
	}
	out.Properties["observedGeneration"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64",
		Description: "The generation of the spec the runtime last reconciled."}
	out.Properties["conditions"] = conditionsSchema
	if c != nil && c.workflow() != nil {
		out.Properties["workflow"] = workflowSchema
	}
	if c != nil {
		if api := c.apiMapping(); api != nil && api.ID != nil {
			if _, ok := out.Properties[api.ID.Field]; !ok {
				out.Properties[api.ID.Field] = apiextensionsv1.JSONSchemaProps{Type: "string",
					Description: "The id the API assigned to this resource's record."}
			}
		}
	}
	return out
}

// workflowSchema is status.workflow as the runtime writes it
// (reconciler.WorkflowStatus): kept whole, so that the runtime may add a
// field without a new CRD.
var workflowSchema = apiextensionsv1.JSONSchemaProps{
	Type:                   "object",
	Description:            "The progress of reconcile.workflow, which the runtime maintains.",
	XPreserveUnknownFields: ptrTo(true),
}

// conditionsSchema is status.conditions as the runtime writes them.
var conditionsSchema = apiextensionsv1.JSONSchemaProps{
	Type:        "array",
	Description: "Ready, Progressing and Degraded, which the runtime maintains.",
	Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"status", "type"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"type":               {Type: "string"},
			"status":             {Type: "string"},
			"reason":             {Type: "string"},
			"message":            {Type: "string"},
			"lastTransitionTime": {Type: "string", Format: "date-time"},
			"observedGeneration": {Type: "integer", Format: "int64"},
		},
	}},
}

// mergeSchema adds declared's fields to out: a declared field wins over an
// inferred one, except that the fields of two objects merge.
func mergeSchema(out, declared *apiextensionsv1.JSONSchemaProps) {
	for k, d := range declared.Properties {
		inferred, ok := out.Properties[k]
		if ok && inferred.Type == "object" && d.Type == "object" && inferred.Properties != nil && d.Properties != nil {
			merged := inferred.DeepCopy()
			mergeSchema(merged, &d)
			d.Properties = merged.Properties
		}
		out.Properties[k] = d
	}
}

// openObjects makes every object of s with fields keep unknown ones too.
func openObjects(s *apiextensionsv1.JSONSchemaProps) {
	for k, p := range s.Properties {
		if p.Type == "object" && p.Properties != nil {
			p.XPreserveUnknownFields = ptrTo(true)
			openObjects(&p)
			s.Properties[k] = p
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// anySchema takes any value: what a field whose type is only known when it
// is computed (dyn) is declared as.
func anySchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptrTo(true)}
}

// maxSchemaDepth bounds the schema of a nested type.
const maxSchemaDepth = 32

// valueSchema is the schema of what v writes: literals by their type, text
// with ${...} as strings, expressions by their checked CEL type.
func (c *checker) valueSchema(v *ir.Value, path string, depth int) apiextensionsv1.JSONSchemaProps {
	if v == nil || depth > maxSchemaDepth {
		return anySchema()
	}
	switch v.Kind {
	case ir.Literal:
		switch v.Literal.(type) {
		case string:
			return apiextensionsv1.JSONSchemaProps{Type: "string"}
		case int64:
			return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
		case float64:
			return apiextensionsv1.JSONSchemaProps{Type: "number"}
		case bool:
			return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
		}
	case ir.Interpolation:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case ir.Expression:
		if v.Expr.Checked == nil {
			return anySchema() // it did not check: reported
		}
		return c.celSchema(v.Expr.Checked.OutputType(), v.Expr, path, depth)
	case ir.Map:
		out := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, f := range v.Fields {
			out.Properties[f.Key] = c.valueSchema(f.Value, join(path, f.Key), depth+1)
		}
		return out
	case ir.List:
		out := apiextensionsv1.JSONSchemaProps{Type: "array"}
		var items *apiextensionsv1.JSONSchemaProps
		for i, it := range v.Items {
			s := c.valueSchema(it, pathIndex(path, i), depth+1)
			switch {
			case items == nil:
				items = &s
			case !reflect.DeepEqual(*items, s):
				items = ptrTo(anySchema()) // items of several types
			}
		}
		if items == nil {
			items = ptrTo(anySchema())
		}
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
		return out
	}
	return anySchema() // null
}

// celSchema is the schema of the JSON a value of CEL type t becomes (see
// expr.ToJSON). An object typed by a CRD's schema keeps its fields; one of
// a built-in kind (whose JSON form its Go type decides) and anything dyn
// take any value.
func (c *checker) celSchema(t *cel.Type, x *ir.Expr, path string, depth int) apiextensionsv1.JSONSchemaProps {
	if depth > maxSchemaDepth {
		return anySchema()
	}
	switch t.Kind() {
	case types.BoolKind:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case types.IntKind, types.UintKind:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	case types.DoubleKind:
		return apiextensionsv1.JSONSchemaProps{Type: "number"}
	case types.StringKind, types.DurationKind:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case types.BytesKind:
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "byte"}
	case types.TimestampKind:
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}
	case types.ListKind:
		items := c.celSchema(t.Parameters()[0], x, path+"[]", depth+1)
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case types.MapKind:
		key, val := t.Parameters()[0], t.Parameters()[1]
		switch key.Kind() {
		case types.StringKind, types.DynKind, types.AnyKind, types.TypeParamKind:
		default:
			c.errs.Add(x.Pos, diag.ExprResultType, "make the keys strings, e.g. with string(k)",
				"emit.%s is %s: the keys of a custom resource's maps are strings", path, t)
			return anySchema()
		}
		vs := c.celSchema(val, x, path+"[]", depth+1)
		if vs.Type == "" && !vs.XIntOrString {
			// Values of any type: the map is an object that keeps any field.
			return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}
		}
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &vs}}
	case types.StructKind:
		return c.structSchema(t, x, path, depth)
	case types.OpaqueKind:
		if t.TypeName() == "optional_type" && len(t.Parameters()) == 1 {
			return c.celSchema(t.Parameters()[0], x, path, depth)
		}
	}
	return anySchema()
}

// structSchema is the schema of an object type: the fields of a type
// declared from a CRD's schema (named inrun.<variable>...), what Kubernetes
// declares the Go structs it writes as scalars as (nativeSchemas), and any
// value for another Go struct of a built-in kind, whose JSON its Go type
// decides.
func (c *checker) structSchema(t *cel.Type, x *ir.Expr, path string, depth int) apiextensionsv1.JSONSchemaProps {
	if s, ok := nativeSchemas[t.TypeName()]; ok {
		return *s.DeepCopy()
	}
	var fields map[string]*cel.Type
	ok := false
	if c.env != nil {
		fields, ok = c.env.ObjectFields(t.TypeName())
	}
	if !ok {
		return anySchema()
	}
	out := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for name, ft := range fields {
		out.Properties[name] = c.celSchema(ft, x, join(path, name), depth+1)
	}
	return out
}

// nativeSchemas are the Go structs of built-in kinds whose JSON is a
// scalar, by their CEL type names, declared as Kubernetes declares them
// in a CRD (as controller-gen writes them): times as date-time strings,
// quantities and IntOrStrings as an integer or a string.
var nativeSchemas = map[string]apiextensionsv1.JSONSchemaProps{
	expr.TimeType.TypeName():                                   {Type: "string", Format: "date-time"},
	expr.MicroTimeType.TypeName():                              {Type: "string", Format: "date-time"},
	expr.NativeTypeName(reflect.TypeFor[resource.Quantity]()):  intOrString,
	expr.NativeTypeName(reflect.TypeFor[intstr.IntOrString]()): intOrString,
}

var intOrString = apiextensionsv1.JSONSchemaProps{
	XIntOrString: true,
	AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
}
