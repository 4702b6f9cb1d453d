package codegen

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inrun/inrun/ir"
)

// apiType is a struct type of the generated API package.
type apiType struct {
	name    string
	doc     []string
	markers []string
	t       *gtype
	// root and list types implement runtime.Object.
	root, list bool
}

// apiModel is the generated API package: the custom resource's kind as Go
// types derived from its CRD's OpenAPI schema.
type apiModel struct {
	pkg     string
	alias   string
	version string
	kind    string
	types   []*apiType
	root    *gtype
	names   map[string]bool
	tm      *typeModel
	// custom are the types of the Blueprint's own conditions.
	custom []string
}

func buildAPI(bp *ir.Blueprint, pkg string, tm *typeModel) *apiModel {
	r := bp.Resource
	m := &apiModel{
		pkg:     pkg,
		alias:   packageAlias(r.Group, r.Version),
		version: r.Version,
		kind:    r.Kind,
		names:   map[string]bool{r.Kind: true, r.Kind + "List": true},
		tm:      tm,
	}
	for _, c := range bp.Conditions {
		m.custom = append(m.custom, c.Type)
	}
	schema := r.Schema
	if schema == nil {
		schema = &apiextensionsv1.JSONSchemaProps{Type: "object"}
	}
	var top []*gfield
	top = append(top,
		&gfield{goName: "TypeMeta", t: tm.of(reflect.TypeFor[metav1.TypeMeta]()), embedded: true, inline: true},
		&gfield{json: "metadata", goName: "ObjectMeta", t: tm.of(reflect.TypeFor[metav1.ObjectMeta]()), embedded: true, omitempty: true},
	)
	spec, hasSpec := schema.Properties["spec"]
	if !hasSpec {
		spec = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}
	}
	specField := m.field(r.Kind, "spec", &spec, schema, true)
	if r.Schema == nil {
		specField.doc = []string{"Spec is the custom resource's spec: its CRD has no schema Inrun could read."}
	} else if specField.doc == nil {
		specField.doc = []string{fmt.Sprintf("Spec is what a %s asks for.", r.Kind)}
	}
	top = append(top, specField)

	status := schema.Properties["status"]
	if status.Type == "" {
		status.Type = "object"
	}
	if status.Properties == nil {
		status.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	} else {
		status.Properties = copyProps(status.Properties)
	}
	// The runtime writes these two on every custom resource.
	if _, ok := status.Properties["observedGeneration"]; !ok {
		status.Properties["observedGeneration"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64",
			Description: "ObservedGeneration is the generation the runtime last reconciled."}
	}
	if _, ok := status.Properties["conditions"]; !ok {
		status.Properties["conditions"] = apiextensionsv1.JSONSchemaProps{Type: "array"}
	}
	statusField := m.field(r.Kind, "status", &status, schema, true)
	if statusField.doc == nil {
		statusField.doc = []string{fmt.Sprintf("Status is what the runtime observed of a %s.", r.Kind)}
	}
	top = append(top, statusField)

	// Other top-level fields of the schema, in name order.
	for _, k := range sortedProps(schema.Properties) {
		switch k {
		case "apiVersion", "kind", "metadata", "spec", "status":
			continue
		}
		p := schema.Properties[k]
		top = append(top, m.field(r.Kind, k, &p, schema, false))
	}

	root := &apiType{
		name: r.Kind,
		doc:  []string{fmt.Sprintf("%s is the Schema for the %s API.", r.Kind, r.Plural)},
		root: true,
		markers: append([]string{"+kubebuilder:object:root=true"},
			resourceMarkers(bp)...),
	}
	root.t = &gtype{kind: gStruct, pkg: pkg, name: r.Kind, api: root, fields: top}
	m.root = root.t

	list := &apiType{
		name:    r.Kind + "List",
		doc:     []string{fmt.Sprintf("%sList contains a list of %s.", r.Kind, r.Kind)},
		list:    true,
		markers: []string{"+kubebuilder:object:root=true"},
	}
	list.t = &gtype{kind: gStruct, pkg: pkg, name: list.name, api: list, fields: []*gfield{
		{goName: "TypeMeta", t: tm.of(reflect.TypeFor[metav1.TypeMeta]()), embedded: true, inline: true},
		{json: "metadata", goName: "ListMeta", t: tm.of(reflect.TypeFor[metav1.ListMeta]()), embedded: true, omitempty: true},
		{json: "items", goName: "Items", t: &gtype{kind: gSlice, elem: root.t}},
	}}
	m.types = append(m.types, root, list)
	return m
}

func ptrTrue() *bool { t := true; return &t }

func copyProps(in map[string]apiextensionsv1.JSONSchemaProps) map[string]apiextensionsv1.JSONSchemaProps {
	out := make(map[string]apiextensionsv1.JSONSchemaProps, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func sortedProps(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// field builds the field json of a struct named parent, with the schema p,
// whose enclosing object's schema is in.
func (m *apiModel) field(parent, name string, p *apiextensionsv1.JSONSchemaProps, in *apiextensionsv1.JSONSchemaProps, top bool) *gfield {
	f := &gfield{json: name, goName: exportedName(name), schema: p}
	for _, req := range in.Required {
		if req == name {
			f.required = true
		}
	}
	f.defaulted = p.Default != nil
	if p.Description != "" {
		f.doc = strings.Split(strings.TrimSpace(p.Description), "\n")
	}
	statusConditions := parent == m.kind+"Status" && name == "conditions"
	switch {
	case statusConditions:
		f.t = &gtype{kind: gSlice, elem: m.tm.of(reflect.TypeFor[metav1.Condition]())}
		if f.doc == nil {
			f.doc = []string{"Conditions are Ready, Progressing and Degraded, which the runtime maintains."}
			if len(m.custom) > 0 {
				f.doc = []string{"Conditions are Ready, Progressing and Degraded, which the runtime maintains,", "and the Blueprint's own: " + strings.Join(m.custom, ", ") + "."}
			}
		}
	case top:
		f.t = m.structType(m.kind+exportedName(name), p)
	default:
		f.t = m.typeOf(parent+f.goName, name, p)
	}
	optional := !f.required
	pointer := optional && !f.defaulted && !top
	switch f.t.kind {
	case gSlice, gMap, gBytes:
		pointer = false
	}
	if p.Nullable && f.t.kind != gSlice && f.t.kind != gMap && f.t.kind != gBytes {
		pointer = true
	}
	if pointer {
		f.t = &gtype{kind: gPointer, elem: f.t}
	}
	f.omitempty = optional
	f.markers = fieldMarkers(p, optional, statusConditions)
	return f
}

// typeOf returns the Go type of schema p for a field json of the type
// named name's parent; nested object types are named name.
func (m *apiModel) typeOf(name, json string, p *apiextensionsv1.JSONSchemaProps) *gtype {
	switch {
	case p.XIntOrString:
		return m.tm.of(reflect.TypeFor[intstr.IntOrString]())
	case p.XEmbeddedResource:
		return m.tm.of(reflect.TypeFor[runtime.RawExtension]())
	}
	switch p.Type {
	case "object":
		switch {
		case len(p.Properties) > 0:
			return m.structType(name, p)
		case p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
			elem := m.typeOf(name, json, p.AdditionalProperties.Schema)
			if elem.kind == gSlice || elem.kind == gMap {
				return m.tm.of(reflect.TypeFor[apiextensionsv1.JSON]())
			}
			return &gtype{kind: gMap, elem: elem}
		}
		return m.tm.of(reflect.TypeFor[apiextensionsv1.JSON]())
	case "array":
		if p.Items == nil || p.Items.Schema == nil {
			return m.tm.of(reflect.TypeFor[apiextensionsv1.JSON]())
		}
		base := strings.TrimSuffix(name, exportedName(json))
		elem := m.typeOf(base+singular(exportedName(json)), json, p.Items.Schema)
		if elem.kind == gSlice || elem.kind == gMap || elem.kind == gBytes {
			return m.tm.of(reflect.TypeFor[apiextensionsv1.JSON]())
		}
		return &gtype{kind: gSlice, elem: elem}
	case "string":
		switch p.Format {
		case "date-time":
			return m.tm.of(reflect.TypeFor[metav1.Time]())
		case "byte":
			return tBytes
		}
		return tString
	case "integer":
		if p.Format == "int32" {
			return tInt32
		}
		return tInt64
	case "number":
		return tFloat64
	case "boolean":
		return tBool
	}
	return m.tm.of(reflect.TypeFor[apiextensionsv1.JSON]())
}

// structType declares a struct type for an object schema.
func (m *apiModel) structType(name string, p *apiextensionsv1.JSONSchemaProps) *gtype {
	for i := 2; m.names[name]; i++ {
		name = strings.TrimRight(name, "0123456789") + strconv.Itoa(i)
	}
	m.names[name] = true
	at := &apiType{name: name}
	at.t = &gtype{kind: gStruct, pkg: m.pkg, name: name, api: at}
	if p.Type == "object" && len(p.Properties) == 0 && p.AdditionalProperties == nil {
		// A free-form spec: no typed fields to offer.
		at.doc = []string{name + " has no fields of its own: its schema is free-form."}
	}
	m.types = append(m.types, at)
	for _, k := range sortedProps(p.Properties) {
		prop := p.Properties[k]
		at.t.fields = append(at.t.fields, m.field(name, k, &prop, p, false))
	}
	// Two JSON names may spell the same Go name (a-b and aB).
	seen := map[string]int{}
	for _, f := range at.t.fields {
		if n := seen[f.goName]; n > 0 {
			f.goName += strconv.Itoa(n + 1)
		}
		seen[f.goName]++
	}
	return at.t
}

// fieldMarkers renders the +kubebuilder markers that say what the schema
// of a field says.
func fieldMarkers(p *apiextensionsv1.JSONSchemaProps, optional, conditions bool) []string {
	var out []string
	if optional {
		out = append(out, "+optional")
	} else {
		out = append(out, "+required")
	}
	if conditions {
		return append(out, "+listType=map", "+listMapKey=type")
	}
	if p.Default != nil {
		out = append(out, "+kubebuilder:default="+string(p.Default.Raw))
	}
	if p.Nullable {
		out = append(out, "+nullable")
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	if p.Minimum != nil {
		out = append(out, "+kubebuilder:validation:Minimum="+num(*p.Minimum))
	}
	if p.ExclusiveMinimum {
		out = append(out, "+kubebuilder:validation:ExclusiveMinimum=true")
	}
	if p.Maximum != nil {
		out = append(out, "+kubebuilder:validation:Maximum="+num(*p.Maximum))
	}
	if p.ExclusiveMaximum {
		out = append(out, "+kubebuilder:validation:ExclusiveMaximum=true")
	}
	if p.MultipleOf != nil {
		out = append(out, "+kubebuilder:validation:MultipleOf="+num(*p.MultipleOf))
	}
	if p.MinLength != nil {
		out = append(out, fmt.Sprintf("+kubebuilder:validation:MinLength=%d", *p.MinLength))
	}
	if p.MaxLength != nil {
		out = append(out, fmt.Sprintf("+kubebuilder:validation:MaxLength=%d", *p.MaxLength))
	}
	if p.Pattern != "" {
		out = append(out, "+kubebuilder:validation:Pattern=`"+p.Pattern+"`")
	}
	if p.Format != "" && p.Format != "int32" && p.Format != "int64" {
		out = append(out, "+kubebuilder:validation:Format="+p.Format)
	}
	if len(p.Enum) > 0 {
		vals := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			vals[i] = string(e.Raw)
		}
		out = append(out, "+kubebuilder:validation:Enum="+strings.Join(vals, ";"))
	}
	if p.MinItems != nil {
		out = append(out, fmt.Sprintf("+kubebuilder:validation:MinItems=%d", *p.MinItems))
	}
	if p.MaxItems != nil {
		out = append(out, fmt.Sprintf("+kubebuilder:validation:MaxItems=%d", *p.MaxItems))
	}
	if p.UniqueItems {
		out = append(out, "+kubebuilder:validation:UniqueItems=true")
	}
	if p.MinProperties != nil {
		out = append(out, fmt.Sprintf("+kubebuilder:validation:MinProperties=%d", *p.MinProperties))
	}
	if p.MaxProperties != nil {
		out = append(out, fmt.Sprintf("+kubebuilder:validation:MaxProperties=%d", *p.MaxProperties))
	}
	if p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields {
		out = append(out, "+kubebuilder:pruning:PreserveUnknownFields")
	}
	if p.XEmbeddedResource {
		out = append(out, "+kubebuilder:validation:EmbeddedResource")
	}
	if p.XListType != nil {
		out = append(out, "+listType="+*p.XListType)
	}
	for _, k := range p.XListMapKeys {
		out = append(out, "+listMapKey="+k)
	}
	if p.XMapType != nil {
		out = append(out, "+mapType="+*p.XMapType)
	}
	for _, v := range p.XValidations {
		marker := "+kubebuilder:validation:XValidation:rule=" + strconv.Quote(v.Rule)
		if v.Message != "" {
			marker += ",message=" + strconv.Quote(v.Message)
		}
		out = append(out, marker)
	}
	return out
}

// resourceMarkers are the markers of the root type: scope, subresources and
// printer columns, as the CRD says.
func resourceMarkers(bp *ir.Blueprint) []string {
	r := bp.Resource
	scope := "Namespaced"
	if !r.Namespaced {
		scope = "Cluster"
	}
	res := fmt.Sprintf("+kubebuilder:resource:path=%s,scope=%s", r.Plural, scope)
	var out []string
	if crd := r.CRD; crd != nil {
		if crd.Spec.Names.Singular != "" {
			res += ",singular=" + crd.Spec.Names.Singular
		}
		if len(crd.Spec.Names.ShortNames) > 0 {
			res += ",shortName=" + strings.Join(crd.Spec.Names.ShortNames, ";")
		}
		if len(crd.Spec.Names.Categories) > 0 {
			res += ",categories=" + strings.Join(crd.Spec.Names.Categories, ";")
		}
		out = append(out, res)
		for _, v := range crd.Spec.Versions {
			if v.Name != r.Version {
				continue
			}
			if v.Subresources != nil && v.Subresources.Status != nil {
				out = append(out, "+kubebuilder:subresource:status")
			}
			if v.Storage {
				out = append(out, "+kubebuilder:storageversion")
			}
			for _, c := range v.AdditionalPrinterColumns {
				col := fmt.Sprintf("+kubebuilder:printcolumn:name=%s,type=%s,JSONPath=%s", strconv.Quote(c.Name), c.Type, strconv.Quote(c.JSONPath))
				if c.Description != "" {
					col += ",description=" + strconv.Quote(c.Description)
				}
				if c.Format != "" {
					col += ",format=" + c.Format
				}
				if c.Priority != 0 {
					col += fmt.Sprintf(",priority=%d", c.Priority)
				}
				out = append(out, col)
			}
		}
		return out
	}
	out = append(out, res)
	if r.StatusSubresource {
		out = append(out, "+kubebuilder:subresource:status")
	}
	return out
}
