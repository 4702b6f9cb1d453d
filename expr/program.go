package expr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/cel/common"

	"github.com/inrun/inrun/ir"
)

// Programs holds the compiled program of every expression of one Blueprint.
// It is safe for concurrent use: programs are built once, by Compile, but
// for an expression Eval walks as a path of fields (paths), which is
// planned the first time the walk cannot answer. A program costs about
// 35 KB however small its expression (CEL gives each its own table of
// every function), and most of a Blueprint's expressions are such paths,
// most of whose values the walk answers.
type Programs struct {
	env   *Env
	progs map[*ir.Expr]*program
	// paths are the expressions that only read a path of fields, which
	// Eval walks without the program where it can (see fieldPath).
	paths map[*ir.Expr]*fieldPath
}

// Compile plans the program of every expression in bp once, from the
// checked form the compiler left in it: no expression is parsed or
// type-checked again. bp must come from the compiler (or from ir.Unmarshal
// of what it produced), so an error here is a bug, not a user mistake.
func Compile(bp *ir.Blueprint) (*Programs, error) {
	env, err := NewEnv(bp)
	if err != nil {
		return nil, err
	}
	p := &Programs{env: env, progs: map[*ir.Expr]*program{}}
	// A collection's own expressions see its iterators and each.
	own := map[*ir.Expr]bool{}
	for _, c := range bp.Children {
		if len(c.ForEach) == 0 {
			continue
		}
		cenv, err := env.ForCollection(c, nil)
		if err != nil {
			return nil, err
		}
		xs := CollectionExprs(c)
		for _, x := range xs {
			own[x] = true
		}
		if err := p.plan(cenv, xs); err != nil {
			return nil, err
		}
	}
	var rest []*ir.Expr
	for _, x := range bp.RenderExprs() {
		if !own[x] {
			rest = append(rest, x)
		}
	}
	if err := p.plan(env, rest); err != nil {
		return nil, err
	}
	if api := bp.APIExprs(); len(api) > 0 {
		apiEnv, err := env.ForAPI()
		if err != nil {
			return nil, err
		}
		if err := p.plan(apiEnv, api); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// CollectionExprs returns the expressions of a collection child that see
// its iterators and each: includeWhen, readyWhen and the template. Its
// iterators' items see only what any other expression sees.
func CollectionExprs(c *ir.Child) []*ir.Expr {
	var out []*ir.Expr
	if c.IncludeWhen != nil {
		out = append(out, c.IncludeWhen)
	}
	if c.ReadyWhen != nil {
		out = append(out, c.ReadyWhen)
	}
	return append(out, c.Template.Exprs()...)
}

func (p *Programs) plan(env *Env, xs []*ir.Expr) error {
	for _, x := range xs {
		if x.Checked == nil {
			return fmt.Errorf("%s: ${%s} was not checked: compile the Blueprint first", x.Pos, x.Source)
		}
		prg := &program{env: env, x: x}
		p.progs[x] = prg
		if fp := fieldPathOf(env, x); fp != nil {
			if p.paths == nil {
				p.paths = map[*ir.Expr]*fieldPath{}
			}
			p.paths[x] = fp
			continue
		}
		if _, err := prg.get(); err != nil {
			return err
		}
	}
	return nil
}

// program is an expression's CEL program, planned once, when first asked.
type program struct {
	env  *Env
	x    *ir.Expr
	once sync.Once
	prg  cel.Program
	err  error
}

// get returns the program, planning it the first time.
func (p *program) get() (cel.Program, error) {
	p.once.Do(func() {
		opts := trackedOptions()
		if boundedCost(p.env.CEL(), p.x.Checked) {
			opts = []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
		}
		p.prg, p.err = p.env.CEL().Program(p.x.Checked, opts...)
		if p.err != nil {
			p.err = fmt.Errorf("%s: %w", p.x.Pos, p.err)
		}
	})
	return p.prg, p.err
}

// Env returns the environment the programs were compiled in.
func (p *Programs) Env() *Env { return p.env }

// Vars are the values of an evaluation's variables. Build them with NewVars;
// each object is converted for CEL once, however many expressions read it.
type Vars struct {
	env    *Env
	values map[string]any
}

// NewVars presents self and the live children, by id, to CEL. A child
// missing from children is absent: an expression that reads it fails.
func (p *Programs) NewVars(self *unstructured.Unstructured, children map[string]*unstructured.Unstructured) (*Vars, error) {
	v := &Vars{env: p.env, values: map[string]any{}}
	if err := v.Set(Self, self); err != nil {
		return nil, err
	}
	for id, obj := range children {
		if err := v.Set(id, obj); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Set presents obj as the variable name, replacing any earlier value.
func (v *Vars) Set(name string, obj *unstructured.Unstructured) error {
	if obj == nil {
		delete(v.values, name)
		return nil
	}
	vt, ok := v.env.vars[name]
	if !ok {
		return fmt.Errorf("no variable %q", name)
	}
	val, err := v.present(name, vt, obj)
	if err != nil {
		return err
	}
	v.values[name] = val
	return nil
}

// SetTyped presents obj as the variable name, as Set does, but reads a
// built-in kind from typed, obj's typed object, instead of converting obj.
// typed is not copied: it must not change while the Vars are in use.
func (v *Vars) SetTyped(name string, obj *unstructured.Unstructured, typed any) error {
	if v.TakesTyped(name, typed) {
		v.values[name] = typed
		return nil
	}
	return v.Set(name, obj)
}

// TakesTyped reports whether SetTyped presents the variable name from
// typed alone, without reading obj.
func (v *Vars) TakesTyped(name string, typed any) bool {
	vt, ok := v.env.vars[name]
	return ok && vt.Native != nil && typed != nil && reflect.TypeOf(typed) == reflect.PointerTo(vt.Native)
}

// present converts obj for CEL as vt says.
func (v *Vars) present(name string, vt VarType, obj *unstructured.Unstructured) (any, error) {
	switch {
	case vt.Native != nil:
		typed := reflect.New(vt.Native)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed.Interface()); err != nil {
			return nil, fmt.Errorf("%s: reading %s %s: %w", name, obj.GetKind(), obj.GetName(), err)
		}
		return typed.Interface(), nil
	case vt.Schema != nil:
		return common.UnstructuredToVal(withStatus(obj.Object, vt.Schema), vt.values), nil
	}
	return obj.Object, nil
}

// SetItems presents objs, in order, as the collection name: a list of its
// live objects.
func (v *Vars) SetItems(name string, objs []*unstructured.Unstructured) error {
	vt, ok := v.env.vars[name]
	if !ok || !vt.List {
		return fmt.Errorf("no collection %q", name)
	}
	list := make([]any, 0, len(objs))
	for _, obj := range objs {
		val, err := v.present(name, vt, obj)
		if err != nil {
			return err
		}
		list = append(list, val)
	}
	v.values[name] = list
	return nil
}

// SetItem presents obj as the variable name, typed as one object of the
// collection of: each, in a collection's readyWhen.
func (v *Vars) SetItem(name, of string, obj *unstructured.Unstructured) error {
	vt, ok := v.env.vars[of]
	if !ok {
		return fmt.Errorf("no collection %q", of)
	}
	val, err := v.present(name, vt, obj)
	if err != nil {
		return err
	}
	v.values[name] = val
	return nil
}

// Unset removes the variable name's value.
func (v *Vars) Unset(name string) { delete(v.values, name) }

// withStatus presents an object whose schema has a status, but which has
// none yet, with an empty one: has(self.status.id) is then false, as
// people expect of a custom resource no one has reconciled, instead of an
// error that there is no status.
func withStatus(obj map[string]any, s *structuralschema.Structural) map[string]any {
	if _, ok := obj["status"]; ok {
		return obj
	}
	if _, ok := s.Properties["status"]; !ok {
		return obj
	}
	out := make(map[string]any, len(obj)+1)
	for k, val := range obj {
		out[k] = val
	}
	out["status"] = map[string]any{}
	return out
}

// SetValue presents a plain JSON-like value as the variable name, such as
// args or response in reconcile.api.
func (v *Vars) SetValue(name string, value any) {
	v.values[name] = value
}

// Has reports whether the variable has a value.
func (v *Vars) Has(name string) bool {
	_, ok := v.values[name]
	return ok
}

// Eval evaluates x and returns its result as a JSON-compatible Go value:
// nil, bool, int64, float64, string, []any or map[string]any.
func (p *Programs) Eval(x *ir.Expr, vars *Vars) (any, error) {
	if fp := p.paths[x]; fp != nil {
		if v, ok := fp.eval(vars); ok {
			return v, nil
		}
	}
	return p.evalProgram(x, vars)
}

// evalProgram evaluates x with its CEL program.
func (p *Programs) evalProgram(x *ir.Expr, vars *Vars) (any, error) {
	planned, ok := p.progs[x]
	if !ok {
		return nil, fmt.Errorf("%s: expression %q was not compiled", x.Pos, x.Source)
	}
	prg, err := planned.get()
	if err != nil {
		return nil, err
	}
	out, _, err := prg.Eval(vars.values)
	if err != nil {
		return nil, &EvalError{Expr: x, Err: err}
	}
	v, err := ToJSON(out)
	if err != nil {
		return nil, &EvalError{Expr: x, Err: err}
	}
	return v, nil
}

// EvalBool evaluates a boolean expression such as includeWhen.
func (p *Programs) EvalBool(x *ir.Expr, vars *Vars) (bool, error) {
	v, err := p.Eval(x, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, &EvalError{Expr: x, Err: fmt.Errorf("want a bool, got %T", v)}
	}
	return b, nil
}

// Render evaluates a template Value into a JSON-compatible Go value.
func (p *Programs) Render(v *ir.Value, vars *Vars) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch v.Kind {
	case ir.Null:
		return nil, nil
	case ir.Literal:
		return v.Literal, nil
	case ir.Expression:
		return p.Eval(v.Expr, vars)
	case ir.Interpolation:
		var b strings.Builder
		for _, part := range v.Parts {
			if part.Expr == nil {
				b.WriteString(part.Text)
				continue
			}
			out, err := p.Eval(part.Expr, vars)
			if err != nil {
				return nil, err
			}
			b.WriteString(FormatString(out))
		}
		return b.String(), nil
	case ir.Map:
		m := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			out, err := p.Render(f.Value, vars)
			if err != nil {
				return nil, err
			}
			m[f.Key] = out
		}
		return m, nil
	case ir.List:
		l := make([]any, 0, len(v.Items))
		for _, it := range v.Items {
			out, err := p.Render(it, vars)
			if err != nil {
				return nil, err
			}
			l = append(l, out)
		}
		return l, nil
	}
	return nil, fmt.Errorf("%s: unknown value kind %v", v.Pos, v.Kind)
}

// EvalError is an expression that failed at run time, with its position.
type EvalError struct {
	Expr *ir.Expr
	Err  error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("%s: ${%s}: %v", e.Expr.Pos, e.Expr.Source, e.Err)
}

func (e *EvalError) Unwrap() error { return e.Err }

// DataPending reports whether err is an expression that read data a live
// child does not have yet: a key its object lacks, or an index past the
// end of one of its lists, such as
// ${ingress.status.loadBalancer.ingress[0].hostname} before the load
// balancer has an address. Such data comes later; the runtime waits for
// it instead of reporting an error. The same read of self, which the
// runtime does not wait on, is a mistake.
func DataPending(err error) bool {
	var ee *EvalError
	if !errors.As(err, &ee) || !readsChild(ee.Expr) {
		return false
	}
	// cel-go reports both as a plain *types.Err; these are the messages of
	// its maps and lists (common/types), and of runtime-lib/typed's
	// NoSuchKey, which compiled Go returns for the same read.
	msg := ee.Err.Error()
	return strings.HasPrefix(msg, "no such key: ") || strings.HasPrefix(msg, "index out of bounds: ")
}

// readsChild reports whether x reads a live child: a reference that is not
// self nor one of reconcile.api's variables.
func readsChild(x *ir.Expr) bool {
	for _, r := range x.Refs {
		switch r {
		case Self, Args, Finalizing, Response, ID, Step:
		default:
			return true
		}
	}
	return false
}

// FormatString formats an expression result inside interpolated text:
// strings as they are, null as nothing, numbers and bools as CEL prints them,
// lists and maps as JSON.
func FormatString(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case bool:
		return strconv.FormatBool(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ToJSON converts a CEL value into a JSON-compatible Go value.
func ToJSON(v ref.Val) (any, error) {
	switch t := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(t), nil
	case types.Int:
		return int64(t), nil
	case types.Uint:
		return int64(t), nil
	case types.Double:
		return float64(t), nil
	case types.String:
		return string(t), nil
	case types.Bytes:
		return base64.StdEncoding.EncodeToString(t), nil
	case types.Duration:
		return t.Duration.String(), nil
	case types.Timestamp:
		return t.Time.UTC().Format("2006-01-02T15:04:05Z"), nil
	case *types.Err:
		return nil, t
	}
	if v.Type() == types.OptionalType {
		if opt, ok := v.(*types.Optional); ok {
			if !opt.HasValue() {
				return nil, nil
			}
			return ToJSON(opt.GetValue())
		}
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		it := m.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				if raw, ok := rawMap(m); ok {
					return raw, nil
				}
				return nil, fmt.Errorf("map key %v is not a string", k)
			}
			ev, err := ToJSON(m.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(ks)] = ev
		}
		return out, nil
	}
	if l, ok := v.(traits.Lister); ok {
		out := []any{}
		it := l.Iterator()
		for it.HasNext() == types.True {
			ev, err := ToJSON(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		return out, nil
	}
	// Native Go values (built-in kinds' structs, quantities, times) take
	// their JSON form, the one the API server would store.
	raw, err := json.Marshal(v.Value())
	if err != nil {
		return nil, fmt.Errorf("cannot convert %s to JSON: %w", v.Type().TypeName(), err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return NormalizeNumbers(out), nil
}

// NormalizeNumbers turns whole float64s from encoding/json into int64, in
// place, as Kubernetes' unstructured decoding does, so that CEL sees ints.
func NormalizeNumbers(v any) any {
	switch t := v.(type) {
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
	case map[string]any:
		for k, e := range t {
			t[k] = NormalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = NormalizeNumbers(e)
		}
	}
	return v
}

// CompileSelf plans the programs of expressions that see self alone, such
// as a kind move's selection (ir.Blueprint.MigrateExprs), in the
// environment of bp's kind without its children.
func CompileSelf(bp *ir.Blueprint, xs []*ir.Expr) (*Programs, error) {
	env, err := NewEnv(&ir.Blueprint{Resource: bp.Resource})
	if err != nil {
		return nil, err
	}
	p := &Programs{env: env, progs: map[*ir.Expr]*program{}}
	return p, p.plan(env, xs)
}
