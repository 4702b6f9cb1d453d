package expr

import (
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/ir"
)

// Self is the variable that holds the custom resource being reconciled.
const Self = "self"

// VarType says how one variable is typed and how its value is presented to
// CEL.
type VarType struct {
	// Native is the k8s.io/api struct type of a built-in kind.
	Native reflect.Type
	// Schema is the structural schema of a custom resource kind.
	Schema *structuralschema.Structural
	// Dynamic is true when no schema is known; the variable is dyn.
	Dynamic bool
	// List is true for a collection, or an externalRef by selector: the
	// variable is a list of objects, each typed as above.
	List bool

	// values is Schema adapted once for reading objects (see valueSchema).
	values *valueSchema
}

// Env is the CEL environment of one Blueprint.
type Env struct {
	cel  *cel.Env
	vars map[string]VarType
	// types are the CEL types of the objects variables hold (of one item,
	// for a collection).
	types map[string]*cel.Type
	// decls are the object types declared from CRD schemas; nil when
	// there are none.
	decls *apiservercel.DeclTypeProvider
}

// NewEnv builds the environment for bp from its Resource, Uses and
// Children; it reads nothing else, so the compiler can call it before the
// rest of the IR is complete.
func NewEnv(bp *ir.Blueprint) (*Env, error) {
	return newEnv(bp, nil)
}

// newEnv builds the environment of bp with extra variables typed by
// structural schemas beside self and the children.
func newEnv(bp *ir.Blueprint, extra map[string]*structuralschema.Structural) (*Env, error) {
	base, err := libraryEnv()
	if err != nil {
		return nil, err
	}

	vars := map[string]VarType{}
	for name, s := range extra {
		vars[name] = VarType{Schema: s, values: newValueSchema(s)}
	}
	var selfSchema *structuralschema.Structural
	if bp.Resource.Schema != nil {
		s, err := ResourceSchema(bp.Resource.Schema)
		if err != nil {
			return nil, fmt.Errorf("schema of %s: %w", bp.Resource.Kind, err)
		}
		selfSchema = s
		vars[Self] = VarType{Schema: s, values: newValueSchema(s)}
	} else {
		vars[Self] = VarType{Dynamic: true}
	}

	var natives []any
	seenNative := map[reflect.Type]bool{}
	for _, c := range bp.Children {
		switch {
		case c.BuiltIn:
			t, ok := NativeType(c.GroupVersionKind)
			if !ok {
				vars[c.ID] = VarType{Dynamic: true}
				break
			}
			vars[c.ID] = VarType{Native: t}
			if !seenNative[t] {
				seenNative[t] = true
				natives = append(natives, t)
			}
		case c.GroupVersionKind == bp.Resource.GroupVersionKind && selfSchema != nil:
			vars[c.ID] = vars[Self]
		case bp.Use(c.GroupVersionKind) != nil && bp.Use(c.GroupVersionKind).Schema != nil:
			// Another Blueprint's custom resource, or an operator's: typed
			// by its CRD.
			s, err := ResourceSchema(bp.Use(c.GroupVersionKind).Schema)
			if err != nil {
				return nil, fmt.Errorf("schema of %s: %w", c.Kind, err)
			}
			vars[c.ID] = VarType{Schema: s, values: newValueSchema(s)}
		default:
			vars[c.ID] = VarType{Dynamic: true}
		}
		if len(c.ForEach) > 0 || c.Selector {
			vt := vars[c.ID]
			vt.List = true
			vars[c.ID] = vt
		}
	}

	// Declared types: one DeclType per structural schema, named after the
	// variable so that messages say which object a field is missing from.
	var decls []*apiservercel.DeclType
	declOf := map[string]*apiservercel.DeclType{}
	for _, name := range sortedKeys(vars) {
		vt := vars[name]
		if vt.Schema == nil {
			continue
		}
		d := model.SchemaDeclType(vt.Schema, false)
		if d == nil {
			return nil, fmt.Errorf("schema of %s cannot be typed for CEL", name)
		}
		d = d.MaybeAssignTypeName("inrun." + name)
		decls = append(decls, d)
		declOf[name] = d
	}
	env := base
	var provider *apiservercel.DeclTypeProvider
	if len(decls) > 0 {
		provider = apiservercel.NewDeclTypeProvider(decls...)
		// Blueprints read self.metadata.namespace, not __namespace__.
		provider.SetRecognizeKeywordAsFieldName(true)
		opts, err := provider.EnvOptions(base.CELTypeProvider())
		if err != nil {
			return nil, err
		}
		if env, err = env.Extend(opts...); err != nil {
			return nil, err
		}
	}
	var opts []cel.EnvOption
	if len(natives) > 0 {
		natives = append(natives, ext.ParseStructTag("json"))
		opts = append(opts, ext.NativeTypes(natives...))
	}
	types := map[string]*cel.Type{}
	for _, name := range sortedKeys(vars) {
		vt := vars[name]
		switch {
		case vt.Native != nil:
			types[name] = cel.ObjectType(NativeTypeName(vt.Native))
		case vt.Schema != nil:
			types[name] = declOf[name].CelType()
		default:
			types[name] = cel.DynType
		}
		t := types[name]
		if vt.List {
			t = cel.ListType(t)
		}
		opts = append(opts, cel.Variable(name, t))
	}
	env, err = env.Extend(opts...)
	if err != nil {
		return nil, err
	}
	return &Env{cel: env, vars: vars, types: types, decls: provider}, nil
}

// ObjectFields returns the fields of an object type declared from a CRD's
// schema (a CEL struct type named inrun.<variable>...), by their names in
// the object, with their CEL types. It returns false for any other type.
func (e *Env) ObjectFields(typeName string) (map[string]*cel.Type, bool) {
	if e.decls == nil {
		return nil, false
	}
	d, ok := e.decls.FindDeclType(typeName)
	if !ok || !d.IsObject() {
		return nil, false
	}
	out := make(map[string]*cel.Type, len(d.Fields))
	for name, f := range d.Fields {
		if u, ok := apiservercel.Unescape(name); ok {
			name = u
		}
		out[name] = f.Type.CelType()
	}
	return out, true
}

// ForCollection returns the environment of a collection child's own
// expressions (template, includeWhen, readyWhen): this one plus its
// iterators, typed by items (dyn where items has none), and each, one of
// its live objects.
func (e *Env) ForCollection(c *ir.Child, items map[string]*cel.Type) (*Env, error) {
	vt := e.vars[c.ID]
	vt.List = false
	opts := []cel.EnvOption{cel.Variable(ir.Each, e.types[c.ID])}
	vars := make(map[string]VarType, len(e.vars)+len(c.ForEach)+1)
	for k, v := range e.vars {
		vars[k] = v
	}
	vars[ir.Each] = vt
	for _, it := range c.ForEach {
		t := items[it.Name]
		if t == nil {
			t = cel.DynType
		}
		opts = append(opts, cel.Variable(it.Name, t))
		vars[it.Name] = VarType{Dynamic: true}
	}
	env, err := e.cel.Extend(opts...)
	if err != nil {
		return nil, err
	}
	return &Env{cel: env, vars: vars, types: e.types, decls: e.decls}, nil
}

// The variables reconcile.api's expressions see besides self.
const (
	// Args is reconcile.args, evaluated.
	Args = "args"
	// Finalizing is true when the custom resource is being deleted.
	Finalizing = "finalizing"
	// Response is the API's answer, in reconcile.api.result only:
	// {status: int, headers: map, body: the JSON body or its text}.
	Response = "response"
	// ID is the id the API assigned the custom resource's record, kept in
	// its status (reconcile.api.id); "" while there is none.
	ID = "id"
	// Step is the workflow step the call is for (reconcile.workflow):
	// {name, attempt, idempotencyKey}, as a remote reconciler's request
	// carries it; name is "" when there is none (no workflow, or a
	// finalizing call).
	Step = "step"
)

// APIVars are the variables reconcile.api's expressions see besides self
// and the children.
var APIVars = []string{Args, Finalizing, Response, ID, Step}

// ForAPI returns the environment of reconcile.api's expressions: this one
// plus args, finalizing, response, id and step, which the API mapping sets.
func (e *Env) ForAPI() (*Env, error) {
	env, err := e.cel.Extend(
		cel.Variable(Args, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(Finalizing, cel.BoolType),
		cel.Variable(Response, cel.DynType),
		cel.Variable(ID, cel.StringType),
		cel.Variable(Step, cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		return nil, err
	}
	vars := make(map[string]VarType, len(e.vars)+3)
	for k, v := range e.vars {
		vars[k] = v
	}
	for _, n := range APIVars {
		vars[n] = VarType{Dynamic: true}
	}
	return &Env{cel: env, vars: vars, types: e.types, decls: e.decls}, nil
}

// CEL returns the underlying cel-go environment.
func (e *Env) CEL() *cel.Env { return e.cel }

// Var returns how the named variable is typed.
func (e *Env) Var(name string) (VarType, bool) {
	vt, ok := e.vars[name]
	return vt, ok
}

// Compile parses and type-checks src.
func (e *Env) Compile(src string) (*cel.Ast, *cel.Issues) {
	return e.cel.Compile(src)
}

// NativeType returns the k8s.io/api struct type of a built-in kind, when
// cel-go can present it. Kinds it cannot (a field of type
// runtime.RawExtension, as in ControllerRevision, whose json:"-" field
// cel-go refuses) are not typed: expressions read them dynamically.
func NativeType(gvk schema.GroupVersionKind) (reflect.Type, bool) {
	t, ok := builtin.Scheme.AllKnownTypes()[gvk]
	if !ok {
		return nil, false
	}
	if v, done := presentable.Load(t); done {
		return t, v.(bool)
	}
	can := !contains(t, rawExtensionType, map[reflect.Type]bool{})
	presentable.Store(t, can)
	return t, can
}

var (
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
	// presentable caches, by type, whether cel-go can present it.
	presentable sync.Map
)

// contains reports whether t holds a field of type want, at any depth.
func contains(t reflect.Type, want reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t == want {
		return true
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return false
	}
	seen[t] = true
	for i := range t.NumField() {
		if contains(t.Field(i).Type, want, seen) {
			return true
		}
	}
	return false
}

// NativeTypeName is the name cel-go's native type provider gives a struct,
// the name of its CEL type: v1.Time for a metav1.Time.
func NativeTypeName(t reflect.Type) string {
	return t.String()
}

// ResourceSchema turns a custom resource version's OpenAPI schema into the
// structural schema of a whole object: the schema as written plus apiVersion,
// kind and the metadata fields a Blueprint may read or write, whatever the
// CRD says of metadata (the API server keeps ObjectMeta whole).
func ResourceSchema(props *apiextensionsv1.JSONSchemaProps) (*structuralschema.Structural, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, err
	}
	if errs := structuralschema.ValidateStructural(nil, s); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if s.Properties == nil {
		s.Properties = map[string]structuralschema.Structural{}
	}
	str := structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}}
	strMap := structuralschema.Structural{
		Generic:              structuralschema.Generic{Type: "object"},
		AdditionalProperties: &structuralschema.StructuralOrBool{Structural: &str, Bool: true},
	}
	s.Properties["apiVersion"] = str
	s.Properties["kind"] = str
	s.Properties["metadata"] = structuralschema.Structural{
		Generic: structuralschema.Generic{Type: "object"},
		Properties: map[string]structuralschema.Structural{
			"name":              str,
			"generateName":      str,
			"namespace":         str,
			"uid":               str,
			"resourceVersion":   str,
			"creationTimestamp": str,
			"generation":        {Generic: structuralschema.Generic{Type: "integer"}},
			"labels":            strMap,
			"annotations":       strMap,
			"deletionTimestamp": str,
			"finalizers":        {Generic: structuralschema.Generic{Type: "array"}, Items: &str},
			"ownerReferences": {
				Generic: structuralschema.Generic{Type: "array"},
				Items: &structuralschema.Structural{
					Generic: structuralschema.Generic{Type: "object"},
					Properties: map[string]structuralschema.Structural{
						"apiVersion": str, "kind": str, "name": str, "uid": str,
						"controller":         {Generic: structuralschema.Generic{Type: "boolean"}},
						"blockOwnerDeletion": {Generic: structuralschema.Generic{Type: "boolean"}},
					},
				},
			},
		},
	}
	return s, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
