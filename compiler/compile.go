package compiler

import (
	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
)

// Options configure a compilation.
type Options struct {
	// Components, when set, are the Go reconcilers the program that runs
	// the Blueprint has compiled in: a name reconcile.go gives that is not
	// registered there is an error (E0023). Nil checks only that names are
	// well-formed: a plain inrun checks a typed Blueprint it cannot run.
	Components *components.Registry
}

// CompileFile loads the Blueprint at path (see load.File) and compiles it.
func CompileFile(path string, opts Options) (*ir.Blueprint, error) {
	src, err := load.File(path)
	if err != nil {
		return nil, err
	}
	return Compile(src, opts)
}

// CompileConfigMap loads the Blueprint a ConfigMap holds (see
// load.ConfigMap) and compiles it: the loader inrun run gives the runner.
func CompileConfigMap(cm *corev1.ConfigMap) (*ir.Blueprint, error) {
	src, err := load.ConfigMap(cm)
	if err != nil {
		return nil, err
	}
	return Compile(src, Options{})
}

// CompileConfigMaps returns the loader inrun run --from-configmaps gives
// the runner: it compiles the Blueprint a ConfigMap holds, reading the
// Blueprints it uses from their own ConfigMaps through get (see
// load.ConfigMaps).
func CompileConfigMaps(get func(namespace, name string) (*corev1.ConfigMap, error)) func(*corev1.ConfigMap) (*ir.Blueprint, error) {
	return func(cm *corev1.ConfigMap) (*ir.Blueprint, error) {
		src, err := load.ConfigMaps{Get: get}.Load(cm)
		if err != nil {
			return nil, err
		}
		return Compile(src, Options{})
	}
}

// Compile compiles a loaded Blueprint, and the Blueprints it uses (each
// once; see ir.Use.Compiled). It returns the Blueprint and nil, or nil and
// an error holding every diagnostic (see diag.All), those of a used
// Blueprint at their own positions. The Blueprint is never changed
// afterwards: every stage downstream only reads it.
func Compile(src *load.Source, opts Options) (*ir.Blueprint, error) {
	s := &session{done: map[string]*result{}, opts: opts}
	r := s.compile(src)
	if err := r.errs.Err(); err != nil {
		return nil, err
	}
	return r.bp, nil
}

// decoder is the first half of a compilation: it reads the YAML into an
// ir.Blueprint whose expressions are not checked yet, one section a file
// (metadata.go, crd.go or schema.go, children.go, status.go, reconcile.go,
// serve.go, lifecycle.go, migratekind.go, reserved.go).
type decoder struct {
	*yamlpos.Reader
	src  *load.Source
	errs diag.List
	bp   *ir.Blueprint
	// self is the CRD's structural schema, or nil when there is none
	// usable: the checker then reads self dynamically.
	self *structuralschema.Structural
	// parts are the expressions a list of them (a kro-style readyWhen)
	// was made of, by the expression that joins them.
	parts map[*ir.Expr][]*ir.Expr
	// short is the schema section, when the Blueprint has one instead of
	// crd: its CRD is completed once emit.status is checked.
	short *shortSchema

	// session compiles the Blueprints this one uses.
	session *session
	// used are the structural schemas of the kinds uses names, by kind.
	used map[schema.GroupVersionKind]*structuralschema.Structural
	// brokenUse is set when an entry of uses could not be read: its kind
	// is unknown, and a child of it is not reported again.
	brokenUse bool
}

func newDecoder(src *load.Source, s *session) *decoder {
	d := &decoder{src: src, bp: &ir.Blueprint{File: src.Name}, parts: map[*ir.Expr][]*ir.Expr{}, session: s, used: map[schema.GroupVersionKind]*structuralschema.Structural{}}
	d.Reader = yamlpos.NewReader(src.Name, &d.errs)
	d.Reader.What = "the Blueprint"
	return d
}

// topLevelFields are the sections of a Blueprint, in the order docs list them.
var topLevelFields = []string{"apiVersion", "kind", "metadata", "crd", "schema", "uses", "onCreate", "onReconcile", "emit", "reconcile", "go", "serve", "migrate", "lifecycle"}

// kroFields are a kro ResourceGraphDefinition's fields, and what a
// Blueprint says instead (inrun import kro converts a whole one).
var kroFields = map[string]string{
	"resources": "kro's resources are onReconcile in a Blueprint, each with an id and a template; run inrun import kro to convert an RGD",
	"spec":      "a Blueprint has no spec: crd, onCreate, onReconcile, emit and reconcile are at the top; run inrun import kro to convert an RGD",
	"status":    "write the status fields under emit.status",
}

// decode reads every section. It returns nil when the file is not a
// Blueprint at all (not YAML, empty, not a map).
func (d *decoder) decode() (*ir.Blueprint, *structuralschema.Structural) {
	root := d.Parse(d.src.Data, "start with apiVersion: "+ir.APIVersion)
	if root == nil {
		return nil, nil
	}
	top := d.Map(root, "")
	if top == nil {
		return nil, nil
	}
	if top.Has("cases") && !top.Has("apiVersion") && !top.Has("kind") {
		// A test file given where the Blueprint goes: say so once, not
		// as every section a Blueprint lacks.
		d.add(d.Pos(top.KeyNode("cases")), diag.UnknownField, "this is a file of test cases (test/simulate.yaml or test/e2e.yaml): give it to inrun simulate or inrun e2e as their argument or --file; -f names the Blueprint",
			"not a Blueprint: it has cases, and no apiVersion or kind")
		return nil, nil
	}
	d.OnlyWith(top, kroFields, topLevelFields...)
	d.header(top)
	d.metadata(top)
	d.crd(top)
	d.uses(top)
	d.children(top)
	d.status(top)
	d.reconcile(top)
	d.hooks(top)
	d.controllerAlone(top)
	d.serve(top)
	d.lifecycle(top)
	d.migrate(top)
	d.reserved(top)
	return d.bp, d.self
}

// add reports a diagnostic.
func (d *decoder) add(pos ir.Pos, code diag.Code, hint, format string, args ...any) {
	d.errs.Add(pos, code, hint, format, args...)
}

// describe names the kind of a YAML value for messages.
func describe(n *yaml.Node) string { return yamlpos.Describe(n) }

// join appends key to a dotted path.
func join(path, key string) string { return yamlpos.Join(path, key) }
