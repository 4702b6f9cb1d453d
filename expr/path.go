package expr

import (
	"reflect"
	"strings"
	"sync"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apiserver/pkg/cel/common"

	"github.com/inrun/inrun/ir"
)

// A fieldPath is an expression that only reads a path of fields below one
// variable, as most template values do: ${self.spec.image},
// ${deployment.status.readyReplicas}. Eval walks the variable's object
// along it instead of running the CEL program, and takes the program's
// answer wherever the walk meets anything but the plain case (a field
// absent or null, a string with a format, a value that is a map or a
// list, a name CEL escapes, ...): the answer is CEL's either way, and
// TestFieldPathsAreCEL compares the two on every Blueprint of the packs.
type fieldPath struct {
	root   string
	fields []string
	// vt is how the root is typed where the program was planned: the
	// walk is taken only where the Vars present it so.
	vt VarType
}

// fieldPathOf returns x's path when x is only a chain of field selections
// from one of env's variables (no has(), no optional or index step).
func fieldPathOf(env *Env, x *ir.Expr) *fieldPath {
	e := x.Checked.NativeRep().Expr()
	var fields []string
	for e.Kind() == celast.SelectKind {
		sel := e.AsSelect()
		if sel.IsTestOnly() || strings.Contains(sel.FieldName(), "__") {
			return nil
		}
		fields = append(fields, sel.FieldName())
		e = sel.Operand()
	}
	if e.Kind() != celast.IdentKind || len(fields) == 0 {
		return nil
	}
	vt, ok := env.vars[e.AsIdent()]
	if !ok || vt.List {
		return nil
	}
	for i, j := 0, len(fields)-1; i < j; i, j = i+1, j-1 {
		fields[i], fields[j] = fields[j], fields[i]
	}
	return &fieldPath{root: e.AsIdent(), fields: fields, vt: vt}
}

// eval walks the path in vars: the value, and true, when the walk found a
// plain value where CEL would give the same.
func (fp *fieldPath) eval(vars *Vars) (any, bool) {
	val, ok := vars.values[fp.root]
	if vt, known := vars.env.vars[fp.root]; !ok || !known || vt != fp.vt {
		return nil, false
	}
	vt := fp.vt
	switch {
	case vt.Native != nil:
		return nativePath(reflect.ValueOf(val), fp.fields)
	case vt.Schema != nil:
		rv, ok := val.(ref.Val)
		if !ok || vt.values == nil {
			return nil, false
		}
		return schemaPath(rv.Value(), vt.values, fp.fields)
	}
	return plainPath(val, fp.fields)
}

// schemaPath walks v, an object as common.UnstructuredToVal presents it
// with schema s, as its map's Find and UnstructuredToVal do.
func schemaPath(v any, s common.Schema, fields []string) (any, bool) {
	for _, f := range fields {
		if s.IsXIntOrString() || s.Type() != "object" {
			return nil, false
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		isObject := s.Properties() != nil
		if s.IsXEmbeddedResource() {
			s = s.WithTypeAndObjectMeta()
			isObject = s.Properties() != nil
		}
		var prop common.Schema
		switch {
		case isObject:
			prop = s.Properties()[f]
		case s.AdditionalProperties() != nil:
			prop = s.AdditionalProperties().Schema()
		}
		// An absent or null field is CEL's to report.
		if v, ok = m[f]; !ok || v == nil || prop == nil {
			return nil, false
		}
		s = prop
	}
	if s.IsXIntOrString() {
		switch v.(type) {
		case string, int64:
			return v, true
		}
		return nil, false
	}
	switch s.Type() {
	case "string":
		switch s.Format() {
		case "duration", "date", "date-time", "byte":
			return nil, false // CEL presents these as other types
		}
		str, ok := v.(string)
		return str, ok
	case "integer":
		i, ok := v.(int64)
		return i, ok
	case "boolean":
		b, ok := v.(bool)
		return b, ok
	}
	return nil, false
}

// plainPath walks v, a variable with no schema, presented to CEL as the
// map itself.
func plainPath(v any, fields []string) (any, bool) {
	for _, f := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[f]; !ok {
			return nil, false
		}
	}
	switch v.(type) {
	case string, int64, bool:
		return v, true
	}
	return nil, false
}

// nativePath walks v, a built-in kind's Go object, by the JSON names of
// its fields, as cel-go's native types read it.
func nativePath(v reflect.Value, fields []string) (any, bool) {
	for _, f := range fields {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil, false
		}
		i, ok := jsonFields(v.Type())[f]
		if !ok {
			return nil, false
		}
		v = v.Field(i)
	}
	// Only the plain Go types: a named one (a Protocol, a Quantity) is
	// CEL's to present.
	switch v.Type() {
	case stringType:
		return v.String(), true
	case int32Type, int64Type, intType:
		return v.Int(), true
	case boolType:
		return v.Bool(), true
	}
	return nil, false
}

var (
	stringType = reflect.TypeFor[string]()
	int32Type  = reflect.TypeFor[int32]()
	int64Type  = reflect.TypeFor[int64]()
	intType    = reflect.TypeFor[int]()
	boolType   = reflect.TypeFor[bool]()
)

// jsonFieldsOf caches jsonFields by type.
var jsonFieldsOf sync.Map

// jsonFields returns the index of each of t's fields by its JSON name, an
// embedded one's too when its tag names it (ObjectMeta is "metadata");
// inlined and unnamed fields are left out.
func jsonFields(t reflect.Type) map[string]int {
	if m, ok := jsonFieldsOf.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		m[name] = i
	}
	jsonFieldsOf.Store(t, m)
	return m
}
