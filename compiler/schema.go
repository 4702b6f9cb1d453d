package compiler

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/util/jsonpath"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/simpleschema"
)

// shortSchema is a Blueprint's schema: section, kro's short form of the
// CRD, while the Blueprint compiles. Its spec is known once it is read;
// its status only once emit.status is checked (statusschema.go), so the
// CRD is completed after the checker has run.
type shortSchema struct {
	p *simpleschema.Parser
	// root is the schema self is checked against: spec as written, status
	// with its declared fields and the runtime's, open to any other.
	root *apiextensionsv1.JSONSchemaProps
	// status is schema.status as written, or nil.
	status *apiextensionsv1.JSONSchemaProps
	crd    *apiextensionsv1.CustomResourceDefinition
	// whole is where the section is.
	whole diag.Pos
	// reported are the lines the section's own problems are on: what the
	// API server's checks would say again there is left out.
	reported map[int]bool
	// emitted holds where each emit.status field is written, by its path
	// in the CRD's schema (status.url).
	emitted map[string]diag.Pos
	// validations are where each schema.validation rule is written.
	validations []diag.Pos
}

var (
	// kro's patterns for schema.apiVersion and schema.kind.
	versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)
	kindRE    = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]{0,62}$`)
)

// statusHint is what kro users write in schema.status, and where it goes in
// a Blueprint.
const statusHint = "kro writes status values in schema.status; a Blueprint writes them under emit.status, and schema.status declares types only (most are inferred)"

// schema reads the schema: section and fills the Resource from it as
// crd.file would, with the CRD's status still open (see finishSchema).
func (d *decoder) schema(n *yaml.Node) {
	o := d.Map(n, "schema")
	if o == nil {
		return
	}
	d.Only(o, "apiVersion", "group", "kind", "plural", "scope", "shortNames", "categories", "metadata",
		"spec", "status", "types", "validation", "additionalPrinterColumns")
	s := &shortSchema{p: simpleschema.NewParser(d.Reader), whole: d.Pos(n), emitted: map[string]diag.Pos{}}
	d.short = s
	mark := d.Mark()
	r := &d.bp.Resource
	r.Pos = d.Pos(n)

	version, vn := d.Required(o, "apiVersion", "write the CRD's version, such as v1alpha1")
	switch {
	case strings.Contains(version, "/"):
		d.add(d.Pos(vn), diag.InvalidValue, "write the version only, as kro does; the group goes in schema.group", "schema.apiVersion %q is the version of the CRD, such as v1, not a group/version", version)
	case version != "" && !versionRE.MatchString(version):
		d.add(d.Pos(vn), diag.InvalidValue, "write a Kubernetes version such as v1, v1alpha1 or v2beta3", "schema.apiVersion %q is not a version", version)
	}
	group, gn := d.Required(o, "group", "write the API group of the kind, such as example.com (kro defaults it to kro.run)")
	if group != "" {
		if msgs := validation.IsDNS1123Subdomain(group); len(msgs) > 0 || !strings.Contains(group, ".") {
			d.add(d.Pos(gn), diag.InvalidValue, "write a domain with at least one dot, such as example.com", "schema.group %q is not an API group", group)
		}
	}
	kind, kn := d.Required(o, "kind", "write the kind, such as WebApp")
	if kind != "" && !kindRE.MatchString(kind) {
		d.add(d.Pos(kn), diag.InvalidValue, "start with a capital letter; use letters and digits (WebApp)", "schema.kind %q is not a kind", kind)
	}
	plural, pn := d.String(o, "plural", false)
	if msgs := validation.IsDNS1035Label(plural); plural != "" && len(msgs) > 0 {
		d.add(d.Pos(pn), diag.InvalidValue, "write the lower-case plural of the kind, such as webapps", "schema.plural %q is not a resource name: %s", plural, strings.Join(msgs, "; "))
	}
	if plural == "" && kind != "" {
		plural = simpleschema.Plural(kind)
	}
	r.GroupVersionKind = schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	r.Plural = plural
	r.StatusSubresource = true
	r.Namespaced = true
	scope, sn := d.String(o, "scope", false)
	switch scope {
	case "", "Namespaced":
	case "Cluster":
		r.Namespaced = false
	default:
		d.add(d.Pos(sn), diag.InvalidValue, "use Namespaced or Cluster", "schema.scope %q is not a scope", scope)
	}
	shortNames := d.names(o, "shortNames")
	categories := d.names(o, "categories")
	labels, annotations := d.crdMetadata(o.Get("metadata"))

	if t := o.Get("types"); t != nil {
		s.p.Types(t, "schema.types")
	}
	spec := &apiextensionsv1.JSONSchemaProps{Type: "object"}
	if sp := o.Get("spec"); sp != nil {
		spec = s.p.Object(sp, "schema.spec")
	}
	if st := o.Get("status"); st != nil {
		s.p.ExpressionHint = statusHint
		s.status = s.p.Object(st, "schema.status")
		s.p.ExpressionHint = ""
		for _, k := range []string{"conditions", "observedGeneration"} {
			if pos, ok := s.p.Pos("schema.status." + k); ok {
				d.add(pos, diag.InvalidValue, "remove it: the runtime writes it, and the CRD declares it", "schema.status.%s is the runtime's", k)
			}
		}
	}
	s.root = &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       *spec,
			"status":     *s.statusSchema(nil, nil),
		},
		XValidations: d.validations(o.Get("validation"), s),
	}
	columns := d.printerColumns(o.Get("additionalPrinterColumns"))

	r.Schema = s.root
	if st, err := expr.ResourceSchema(s.root); err != nil {
		d.add(r.Pos, diag.InvalidValue, "", "the schema is not structural: %v", err)
	} else {
		d.self = st
	}
	s.crd = &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: labels, Annotations: annotations},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind),
				ShortNames: shortNames, Categories: categories,
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: columns,
			}},
		},
	}
	if !r.Namespaced {
		s.crd.Spec.Scope = apiextensionsv1.ClusterScoped
	}
	s.reported = map[int]bool{}
	for _, e := range (*d.Diags)[mark:] {
		if e.Pos.File == s.whole.File {
			s.reported[e.Pos.Line] = true
		}
	}
}

// orNode returns n, or else or.
func orNode(n, or *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return or
}

// names reads a list of lower-case names (shortNames, categories).
func (d *decoder) names(o *yamlpos.Map, key string) []string {
	var out []string
	path := join(o.Path, key)
	for i, it := range d.List(o.Get(key), path) {
		s, ok := d.Str(it, pathIndex(path, i))
		if !ok {
			continue
		}
		if msgs := validation.IsDNS1035Label(s); len(msgs) > 0 {
			d.add(d.Pos(it), diag.InvalidValue, "use lower-case letters, digits and '-'", "%s %q is not a name: %s", pathIndex(path, i), s, strings.Join(msgs, "; "))
			continue
		}
		out = append(out, s)
	}
	return out
}

func pathIndex(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// crdMetadata reads schema.metadata: the labels and annotations of the CRD,
// as kro has them.
func (d *decoder) crdMetadata(n *yaml.Node) (labels, annotations map[string]string) {
	if n == nil {
		return nil, nil
	}
	o := d.Map(n, "schema.metadata")
	d.Only(o, "labels", "annotations")
	read := func(key string) map[string]string {
		if o.Get(key) == nil {
			return nil
		}
		m := d.Map(o.Get(key), join("schema.metadata", key))
		if m == nil || len(m.Order) == 0 {
			return nil
		}
		out := map[string]string{}
		for _, k := range m.Order {
			if v, ok := d.Str(m.Get(k), join(m.Path, k)); ok {
				out[k] = v
			}
		}
		return out
	}
	if o == nil {
		return nil, nil
	}
	return read("labels"), read("annotations")
}

// validations reads schema.validation: CEL rules over the whole custom
// resource (self), each with the message the API server answers when one
// is false. kro's old spelling: expression and message.
func (d *decoder) validations(n *yaml.Node, s *shortSchema) []apiextensionsv1.ValidationRule {
	var out []apiextensionsv1.ValidationRule
	for i, it := range d.List(n, "schema.validation") {
		path := pathIndex("schema.validation", i)
		o := d.Map(it, path)
		if o == nil {
			continue
		}
		d.Only(o, "expression", "message")
		rule, rn := d.Required(o, "expression", `write a CEL rule over the custom resource, as in expression: self.spec.replicas <= 10`)
		msg, _ := d.String(o, "message", false)
		if strings.Contains(rule, "${") {
			d.add(d.Pos(rn), diag.InvalidValue, "write the rule without ${...}: it is CEL as a whole", "schema.validation expressions are CEL rules, not ${...} templates")
		}
		out = append(out, apiextensionsv1.ValidationRule{Rule: rule, Message: msg})
		s.validations = append(s.validations, d.Pos(orNode(rn, it)))
	}
	return out
}

// printerColumns reads schema.additionalPrinterColumns, as a CRD version
// spells them.
func (d *decoder) printerColumns(n *yaml.Node) []apiextensionsv1.CustomResourceColumnDefinition {
	var out []apiextensionsv1.CustomResourceColumnDefinition
	for i, it := range d.List(n, "schema.additionalPrinterColumns") {
		path := pathIndex("schema.additionalPrinterColumns", i)
		o := d.Map(it, path)
		if o == nil {
			continue
		}
		d.Only(o, "name", "type", "jsonPath", "description", "format", "priority")
		var c apiextensionsv1.CustomResourceColumnDefinition
		c.Name, _ = d.Required(o, "name", "name the column, as kubectl get shows it")
		var tn *yaml.Node
		c.Type, tn = d.Required(o, "type", "write integer, number, string, boolean or date")
		switch c.Type {
		case "", "integer", "number", "string", "boolean", "date":
		default:
			d.add(d.Pos(tn), diag.InvalidValue, "write integer, number, string, boolean or date", "%s.type %q is not a column type", path, c.Type)
		}
		var jn *yaml.Node
		c.JSONPath, jn = d.Required(o, "jsonPath", "write the field to show, such as .status.url")
		if c.JSONPath != "" {
			if _, err := jsonpath.Parse("column", "{"+c.JSONPath+"}"); err != nil || !strings.HasPrefix(c.JSONPath, ".") {
				d.add(d.Pos(jn), diag.InvalidValue, "write a JSONPath from the object, such as .status.url", "%s.jsonPath %q is not a JSONPath", path, c.JSONPath)
			}
		}
		c.Description, _ = d.String(o, "description", false)
		c.Format, _ = d.String(o, "format", false)
		if p := o.Get("priority"); p != nil {
			v, _ := d.Int(p, join(path, "priority"))
			c.Priority = int32(v)
		}
		out = append(out, c)
	}
	return out
}

// validate checks the generated schema as the API server does when the
// CRD is installed, each problem at the field of the schema: section it
// comes from: its defaults validate against it and are pruned, and its
// x-kubernetes-validations rules compile. (Structure and names are checked
// as the section is read.)
func (s *shortSchema) validate(bp *ir.Blueprint, errs *diag.List) {
	root := s.crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(root, internal, nil); err != nil {
		errs.Add(bp.Resource.Pos, diag.InvalidValue, "", "the generated schema cannot be checked: %v", err)
		return
	}
	st, err := structuralschema.NewStructural(internal)
	if err != nil {
		errs.Add(bp.Resource.Pos, diag.InvalidValue, "", "the generated schema is not structural: %v", err)
		return
	}
	base := field.NewPath("spec").Child("versions").Index(0).Child("schema").Child("openAPIV3Schema")
	seen := map[int]bool{} // lines: one problem of the API server's per marker
	report := func(fe *field.Error) {
		pos, name := s.source(fe.Field)
		if s.reported[pos.Line] || seen[pos.Line] {
			return
		}
		seen[pos.Line] = true
		hint := ""
		if strings.Contains(fe.Detail, "estimated rule cost exceeds budget") {
			hint = "bound what the rule reads: maxItems= on a list, maxLength= on a string; for the strings of a list, declare a type with a maxLength (types: {Host: string | maxLength=253}) and make the list []Host"
		}
		errs.Add(pos, diag.InvalidValue, hint, "%s: the API server would refuse the generated CRD: %s", name, oneLine(fe.ErrorBody()))
	}
	if fes := structuralschema.ValidateStructural(base, st); len(fes) > 0 {
		for _, fe := range fes {
			report(fe)
		}
		return
	}
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	rulesOK := true
	var walk func(n *structuralschema.Structural, pth *field.Path, root bool)
	walk = func(n *structuralschema.Structural, pth *field.Path, root bool) {
		if len(n.XValidations) > 0 {
			results, err := schemacel.Compile(n, model.SchemaDeclType(n, root || n.XEmbeddedResource), celconfig.PerCallLimit, envSet, schemacel.NewExpressionsEnvLoader())
			if err != nil {
				rulesOK = false
				report(field.Invalid(pth.Child("x-kubernetes-validations"), "", err.Error()))
			}
			for i, r := range results {
				if r.Error != nil {
					rulesOK = false
					report(field.Invalid(pth.Child("x-kubernetes-validations").Index(i).Child("rule"), n.XValidations[i].Rule, r.Error.Detail))
				}
			}
		}
		for name, p := range n.Properties {
			walk(&p, pth.Child("properties").Key(name), false)
		}
		if n.Items != nil {
			walk(n.Items, pth.Child("items"), false)
		}
		if n.AdditionalProperties != nil && n.AdditionalProperties.Structural != nil {
			walk(n.AdditionalProperties.Structural, pth.Child("additionalProperties"), false)
		}
	}
	walk(st, base, true)
	if rulesOK { // defaults are validated with the rules, which must compile
		fes, err := defaulting.ValidateDefaults(context.Background(), base, st, true, true)
		if err != nil {
			errs.Add(bp.Resource.Pos, diag.InvalidValue, "", "the defaults of the generated schema cannot be checked: %v", err)
		}
		for _, fe := range fes {
			report(fe)
		}
	}
	// The rest of what the API server checks: the rules' estimated cost,
	// list-map keys, ... Problems found above are not reported twice.
	for _, fe := range crdRefusals(s.crd) {
		report(fe)
	}
}

// celErrorRE is where a CEL compilation error says it is.
var celErrorRE = regexp.MustCompile(`ERROR: <input>:(\d+):(\d+): `)

// oneLine shortens what the API server says of a rule that does not compile
// to its first line, without CEL's drawing of where.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return celErrorRE.ReplaceAllString(s, "at $1:$2 of the rule: ")
}

var (
	schemaPathRE = regexp.MustCompile(`^spec\.versions\[0\]\.schema\.openAPIV3Schema((?:\.properties\[[^\]]*\]|\.items|\.additionalProperties)*)(?:\.(.*))?$`)
	propertyRE   = regexp.MustCompile(`\.properties\[([^\]]*)\]`)
	indexRE      = regexp.MustCompile(`^x-kubernetes-validations\[(\d+)\]`)
)

// markerOf names the marker a field of a JSON schema comes from.
var markerOf = map[string][]string{
	"default": {"default"}, "enum": {"enum"}, "pattern": {"pattern"}, "minimum": {"minimum"}, "maximum": {"maximum"},
	"minLength": {"minLength"}, "maxLength": {"maxLength"}, "minItems": {"minItems"}, "maxItems": {"maxItems"},
	"x-kubernetes-validations": {"validation", "immutable"}, "x-kubernetes-list-type": {"listType", "uniqueItems"},
	"x-kubernetes-list-map-keys": {"listMapKey"},
}

// source returns where the field of the generated CRD at path (as the API
// server's validation names it) comes from in the Blueprint, and how to
// name it there.
func (s *shortSchema) source(path string) (diag.Pos, string) {
	if m := schemaPathRE.FindStringSubmatch(path); m != nil {
		var fields []string
		for _, p := range propertyRE.FindAllStringSubmatch(m[1], -1) {
			fields = append(fields, p[1])
		}
		rest := m[2]
		if len(fields) == 0 {
			if im := indexRE.FindStringSubmatch(rest); im != nil {
				if i, _ := strconv.Atoi(im[1]); i < len(s.validations) {
					return s.validations[i], pathIndex("schema.validation", i)
				}
			}
			return s.whole, "schema"
		}
		name := "schema." + strings.Join(fields, ".")
		if fields[0] == "status" && len(fields) > 1 {
			if pos, ok := s.emitted["status."+fields[1]]; ok {
				return pos, "emit." + strings.Join(fields, ".")
			}
		}
		marker, _, _ := strings.Cut(rest, "[")
		marker, _, _ = strings.Cut(marker, ".")
		for i := len(fields); i > 0; i-- {
			p := "schema." + strings.Join(fields[:i], ".")
			if i == len(fields) {
				for _, mk := range markerOf[marker] {
					if pos, ok := s.p.MarkerPos(p, mk); ok {
						return pos, name
					}
				}
			}
			if pos, ok := s.p.Pos(p); ok {
				return pos, name
			}
		}
		return s.whole, name
	}
	return s.whole, "schema"
}
