package expr

import (
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/ir"
)

// Intent is the variable of serve.view that holds the intent's fields, in
// the caller's words, beside self.
const Intent = "intent"

// NewViewEnv builds the environment of serve.view: self, the custom
// resource with its status, typed by the CRD's schema, and intent, an
// object typed by serve.fields. Children are not variables: the gateway
// reads the custom resource, never what it owns.
func NewViewEnv(bp *ir.Blueprint) (*Env, error) {
	if bp.Serve == nil {
		return nil, fmt.Errorf("the Blueprint %s serves no intents", bp.Name)
	}
	return newEnv(&ir.Blueprint{Name: bp.Name, Resource: bp.Resource}, map[string]*structuralschema.Structural{Intent: IntentSchema(bp.Serve)})
}

// IntentSchema is the structural schema of an intent: an object with one
// property per field, of the field's type.
func IntentSchema(s *ir.Serve) *structuralschema.Structural {
	props := make(map[string]structuralschema.Structural, len(s.Fields))
	for _, f := range s.Fields {
		props[f.Name] = structuralschema.Structural{Generic: structuralschema.Generic{Type: string(f.Type)}}
	}
	return &structuralschema.Structural{Generic: structuralschema.Generic{Type: "object"}, Properties: props}
}

// CompileView plans the program of every expression of bp's serve.view,
// from the checked form the compiler left in it, as Compile does for the
// reconcile's expressions.
func CompileView(bp *ir.Blueprint) (*Programs, error) {
	env, err := NewViewEnv(bp)
	if err != nil {
		return nil, err
	}
	p := &Programs{env: env, progs: map[*ir.Expr]*program{}}
	if err := p.plan(env, bp.Serve.ViewExprs()); err != nil {
		return nil, err
	}
	return p, nil
}

// NewViewVars presents the custom resource as self and the intent's fields
// as intent.
func (p *Programs) NewViewVars(self *unstructured.Unstructured, intent map[string]any) (*Vars, error) {
	v, err := p.NewVars(self, nil)
	if err != nil {
		return nil, err
	}
	if err := v.Set(Intent, &unstructured.Unstructured{Object: intent}); err != nil {
		return nil, err
	}
	return v, nil
}
