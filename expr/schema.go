package expr

import (
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiserver/pkg/cel/common"
)

// valueSchema is the schema common.UnstructuredToVal reads a custom resource
// with: model.Structural, whose Properties, Items, AdditionalProperties and
// WithTypeAndObjectMeta are built once per node instead of on every call.
//
// model.Structural allocates a new map of new adapters on each Properties
// call, and the unstructured values call it on every field read, which made
// it about half the cost of rendering a Blueprint that reads self. A
// Blueprint's schema does not change once compiled, so the whole tree is
// adapted once, by NewEnv; the results are shared and must not be modified.
type valueSchema struct {
	*model.Structural

	properties           map[string]common.Schema
	items                common.Schema
	additionalProperties common.SchemaOrBool
	// withMeta is set for x-kubernetes-embedded-resource nodes only, the
	// ones UnstructuredToVal asks for it.
	withMeta common.Schema
}

var _ common.Schema = (*valueSchema)(nil)

// newValueSchema adapts s and everything below it.
func newValueSchema(s *structuralschema.Structural) *valueSchema {
	v := &valueSchema{Structural: &model.Structural{Structural: s}}
	if s.Properties != nil {
		v.properties = make(map[string]common.Schema, len(s.Properties))
		for name, prop := range s.Properties {
			v.properties[name] = newValueSchema(&prop)
		}
	}
	if s.Items != nil {
		v.items = newValueSchema(s.Items)
	}
	if ap := s.AdditionalProperties; ap != nil {
		sb := &valueSchemaOrBool{allows: ap.Bool}
		if ap.Structural != nil {
			sb.schema = newValueSchema(ap.Structural)
		}
		v.additionalProperties = sb
	}
	if s.XEmbeddedResource {
		// WithTypeAndObjectMeta returns its argument when it already has
		// the type and object meta, so this stops after one step.
		if m := model.WithTypeAndObjectMeta(s); m == s {
			v.withMeta = v
		} else {
			v.withMeta = newValueSchema(m)
		}
	}
	return v
}

func (v *valueSchema) Properties() map[string]common.Schema { return v.properties }

func (v *valueSchema) Items() common.Schema { return v.items }

func (v *valueSchema) AdditionalProperties() common.SchemaOrBool { return v.additionalProperties }

func (v *valueSchema) WithTypeAndObjectMeta() common.Schema {
	if v.withMeta != nil {
		return v.withMeta
	}
	return newValueSchema(model.WithTypeAndObjectMeta(v.Structural.Structural))
}

// valueSchemaOrBool is model.StructuralOrBool with its schema adapted once.
type valueSchemaOrBool struct {
	schema common.Schema
	allows bool
}

func (sb *valueSchemaOrBool) Schema() common.Schema { return sb.schema }

func (sb *valueSchemaOrBool) Allows() bool { return sb.allows }
