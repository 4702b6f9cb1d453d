package codegen

import (
	"reflect"
	"strings"
	"sync"

	"github.com/dave/jennifer/jen"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// gkind is what generated code may do with a value of a Go type.
type gkind int

const (
	gString gkind = iota
	gBool
	gInt
	gFloat
	gBytes
	gStruct
	gPointer
	gSlice
	gMap
	// gOpaque types have a JSON form of their own (metav1.Time,
	// resource.Quantity, intstr.IntOrString, runtime.RawExtension,
	// apiextensionsv1.JSON): generated code assigns them but never reads
	// into them.
	gOpaque
)

// gtype is a Go type generated code reads from or writes to: a k8s.io/api
// type, known by reflection, or one of the API types generated from the
// CRD's schema.
type gtype struct {
	kind gkind
	// pkg and name spell a named type; pkg is empty for a predeclared one.
	pkg, name string
	// bits is the size of a gInt: 8 to 64, or 0 for int.
	bits     int
	unsigned bool
	elem     *gtype
	// key is the key type of a gMap; nil for string.
	key *gtype

	// rt is the reflected type of a k8s.io/api type; api the generated
	// type. Exactly one is set for a gStruct.
	rt  reflect.Type
	api *apiType

	fieldsOnce sync.Once
	fields     []*gfield
}

// gfield is a field of a struct gtype.
type gfield struct {
	json      string
	goName    string
	t         *gtype
	embedded  bool
	inline    bool
	omitempty bool

	// Set on generated types only.
	schema    *apiextensionsv1.JSONSchemaProps
	required  bool
	defaulted bool
	doc       []string
	markers   []string
}

// code spells t in generated code.
func (t *gtype) code() *jen.Statement {
	switch {
	case t.name != "" && t.pkg != "":
		return jen.Qual(t.pkg, t.name)
	case t.name != "":
		return jen.Id(t.name)
	}
	switch t.kind {
	case gPointer:
		return jen.Op("*").Add(t.elem.code())
	case gSlice:
		return jen.Index().Add(t.elem.code())
	case gMap:
		if t.key != nil {
			return jen.Map(t.key.code()).Add(t.elem.code())
		}
		return jen.Map(jen.String()).Add(t.elem.code())
	case gBytes:
		return jen.Index().Byte()
	}
	panic("codegen: unnamed type of kind " + t.String())
}

// String is the Go spelling of t, for messages and tests.
func (t *gtype) String() string {
	switch {
	case t.name != "" && t.pkg != "":
		return t.pkg[strings.LastIndexByte(t.pkg, '/')+1:] + "." + t.name
	case t.name != "":
		return t.name
	}
	switch t.kind {
	case gPointer:
		return "*" + t.elem.String()
	case gSlice:
		return "[]" + t.elem.String()
	case gMap:
		if t.key != nil {
			return "map[" + t.key.String() + "]" + t.elem.String()
		}
		return "map[string]" + t.elem.String()
	case gBytes:
		return "[]byte"
	}
	return "?"
}

// named reports whether t is a named scalar type, such as corev1.Protocol,
// that a value of its underlying type must be converted to.
func (t *gtype) named() bool {
	return t.pkg != "" && (t.kind == gString || t.kind == gInt || t.kind == gFloat || t.kind == gBool)
}

// structFields returns the fields of a struct type.
func (t *gtype) structFields(m *typeModel) []*gfield {
	if t.rt != nil {
		t.fieldsOnce.Do(func() { t.fields = m.nativeFields(t.rt) })
	}
	return t.fields
}

// lookup finds the field a JSON key names, looking into inline fields. The
// path holds the inline fields passed through, then the field.
func (t *gtype) lookup(m *typeModel, key string) []*gfield {
	for _, f := range t.structFields(m) {
		if f.inline {
			if sub := f.t.lookup(m, key); sub != nil {
				return append([]*gfield{f}, sub...)
			}
			continue
		}
		if f.json == key {
			return []*gfield{f}
		}
	}
	return nil
}

// opaque names the types with a JSON form of their own.
var opaque = map[string]bool{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":                     true,
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":                true,
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":                 true,
	"k8s.io/apimachinery/pkg/api/resource.Quantity":                 true,
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString":               true,
	"k8s.io/apimachinery/pkg/runtime.RawExtension":                  true,
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": true,
}

const (
	pkgIntstr   = "k8s.io/apimachinery/pkg/util/intstr"
	pkgResource = "k8s.io/apimachinery/pkg/api/resource"
	pkgMetav1   = "k8s.io/apimachinery/pkg/apis/meta/v1"
	pkgRuntime  = "k8s.io/apimachinery/pkg/runtime"
	pkgApiext   = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// typeModel builds gtypes, each once.
type typeModel struct {
	mu     sync.Mutex
	native map[reflect.Type]*gtype
}

func newTypeModel() *typeModel {
	return &typeModel{native: map[reflect.Type]*gtype{}}
}

// of returns the gtype of a k8s.io/api Go type.
func (m *typeModel) of(rt reflect.Type) *gtype {
	m.mu.Lock()
	if t, ok := m.native[rt]; ok {
		m.mu.Unlock()
		return t
	}
	t := &gtype{}
	m.native[rt] = t
	m.mu.Unlock()

	if rt.Name() != "" {
		t.pkg, t.name = rt.PkgPath(), rt.Name()
	}
	switch rt.Kind() {
	case reflect.String:
		t.kind = gString
	case reflect.Bool:
		t.kind = gBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		t.kind, t.bits = gInt, intBits(rt)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		t.kind, t.bits, t.unsigned = gInt, intBits(rt), true
	case reflect.Float32, reflect.Float64:
		t.kind, t.bits = gFloat, rt.Bits()
	case reflect.Pointer:
		t.kind, t.elem = gPointer, m.of(rt.Elem())
	case reflect.Slice:
		if rt.Elem().Kind() == reflect.Uint8 {
			t.kind = gBytes
		} else {
			t.kind, t.elem = gSlice, m.of(rt.Elem())
		}
	case reflect.Map:
		if rt.Key().Kind() == reflect.String {
			t.kind, t.elem = gMap, m.of(rt.Elem())
			if rt.Key().Name() != "string" || rt.Key().PkgPath() != "" {
				t.key = m.of(rt.Key())
			}
		} else {
			t.kind = gOpaque
		}
	case reflect.Struct:
		if opaque[rt.PkgPath()+"."+rt.Name()] {
			t.kind = gOpaque
		} else {
			t.kind, t.rt = gStruct, rt
		}
	default:
		t.kind = gOpaque
	}
	if t.name == "" && t.pkg == "" && t.kind != gPointer && t.kind != gSlice && t.kind != gMap && t.kind != gBytes {
		t.name = rt.Kind().String()
	}
	return t
}

func intBits(rt reflect.Type) int {
	if rt.Kind() == reflect.Int || rt.Kind() == reflect.Uint {
		return 0
	}
	return rt.Bits()
}

func (m *typeModel) nativeFields(rt reflect.Type) []*gfield {
	var out []*gfield
	for i := 0; i < rt.NumField(); i++ {
		sf := rt.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		f := &gfield{json: name, goName: sf.Name, t: m.of(sf.Type), embedded: sf.Anonymous}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "inline":
				f.inline = true
			case "omitempty", "omitzero":
				f.omitempty = true
			}
		}
		if name == "" && sf.Anonymous {
			f.inline = true
		}
		if name == "" && !f.inline {
			f.json = sf.Name
		}
		out = append(out, f)
	}
	return out
}

// Scalar types generated code spells directly.
var (
	tString  = &gtype{kind: gString, name: "string"}
	tBool    = &gtype{kind: gBool, name: "bool"}
	tInt64   = &gtype{kind: gInt, name: "int64", bits: 64}
	tInt32   = &gtype{kind: gInt, name: "int32", bits: 32}
	tFloat64 = &gtype{kind: gFloat, name: "float64", bits: 64}
	tBytes   = &gtype{kind: gBytes}
)
