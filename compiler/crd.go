package compiler

import (
	"cmp"
	"errors"
	"io/fs"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/simpleschema"
)

// crd resolves the crd section: a manifest file, or an installed CRD named
// by group, version and kind; or, instead of it, the schema section, the
// short form of a CRD that Inrun generates (schema.go).
func (d *decoder) crd(top *yamlpos.Map) {
	n := top.Get("crd")
	if s := top.Get("schema"); s != nil {
		if n == nil {
			d.schema(s)
			return
		}
		d.add(d.Pos(top.KeyNode("schema")), diag.InvalidValue, "keep one: crd names a CRD that exists, schema describes one for Inrun to generate",
			"crd and schema both say what the custom resource is")
	}
	if n == nil {
		d.add(d.Pos(top.Node), diag.MissingField, "add crd.file: manifests/crd.yaml, crd.group/version/kind, or schema: with the short form of the CRD", "crd is required (or schema)")
		return
	}
	o := d.Map(n, "crd")
	if o == nil {
		return
	}
	d.Only(o, "file", "group", "version", "kind", "plural", "scope")
	r := &d.bp.Resource
	r.Pos = d.Pos(n)
	file, fileNode := d.String(o, "file", false)
	version, versionNode := d.String(o, "version", false)
	if file == "" {
		d.installedCRD(o, version)
		return
	}
	for _, k := range []string{"group", "kind", "plural", "scope"} {
		if o.Get(k) != nil {
			d.add(d.Pos(o.KeyNode(k)), diag.InvalidValue, "remove it: the manifest says it", "crd.%s is taken from crd.file", k)
		}
	}
	r.CRDFile = file
	m := d.readCRD("crd.file", file, fileNode, version, versionNode)
	if m == nil {
		return
	}
	r.CRD = m.crd
	r.GroupVersionKind = m.gvk
	r.Plural = m.plural
	r.Namespaced = m.namespaced
	r.StatusSubresource = m.statusSubresource
	r.Schema = m.schema
	d.self = m.structural
}

// crdManifest is what a CRD manifest says of the version a Blueprint reads.
type crdManifest struct {
	crd               *apiextensionsv1.CustomResourceDefinition
	gvk               schema.GroupVersionKind
	plural            string
	namespaced        bool
	statusSubresource bool
	// schema is the version's schema, and structural its structural form;
	// both nil when it has none usable (reported).
	schema     *apiextensionsv1.JSONSchemaProps
	structural *structuralschema.Structural
}

// readCRD reads the CRD manifest file names (field says where: crd.file,
// uses[0].crd), and the version given, or else its storage version. It
// returns nil when the file holds no CRD, and a manifest without a
// version when it has none to read; either is reported.
func (d *decoder) readCRD(field, file string, fileNode *yaml.Node, version string, versionNode *yaml.Node) *crdManifest {
	path := d.src.Files.Path(file)
	data, err := d.src.Files.ReadFile(file)
	if err != nil {
		hint := "check the path; it is relative to the Blueprint's directory"
		if errors.Is(err, fs.ErrNotExist) {
			hint = "create it, or fix the path (relative to the Blueprint's directory)"
		}
		d.add(d.Pos(fileNode), diag.MissingCRDFile, hint, "%s %q cannot be read: %s", field, file, pathErrorText(err))
		return nil
	}
	crdPos := ir.Pos{File: path, Line: 1, Col: 1}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := sigsyaml.UnmarshalStrict(data, &crd); err != nil {
		d.add(crdPos, diag.InvalidCRD, "", "%s %q is not a valid CustomResourceDefinition: %v", field, file, err)
		return nil
	}
	if crd.Kind != "CustomResourceDefinition" || crd.APIVersion != "apiextensions.k8s.io/v1" {
		d.add(crdPos, diag.InvalidCRD, "the file must hold an apiextensions.k8s.io/v1 CustomResourceDefinition", "%s %q holds %s %s", field, file, crd.APIVersion, crd.Kind)
		return nil
	}
	m := &crdManifest{
		crd:        &crd,
		plural:     crd.Spec.Names.Plural,
		namespaced: crd.Spec.Scope != apiextensionsv1.ClusterScoped,
	}
	m.gvk.Group, m.gvk.Kind = crd.Spec.Group, crd.Spec.Names.Kind
	named := m.gvk.Kind != "" && m.plural != "" && m.gvk.Group != ""
	if !named {
		d.add(crdPos, diag.InvalidCRD, "set spec.group, spec.names.kind and spec.names.plural", "%s %q has no group, kind or plural", field, file)
	}

	var chosen *apiextensionsv1.CustomResourceDefinitionVersion
	var names []string
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		names = append(names, v.Name)
		if (version == "" && v.Storage) || v.Name == version {
			chosen = v
		}
	}
	if chosen == nil {
		if version != "" {
			d.add(d.Pos(versionNode), diag.InvalidValue, "the CRD serves "+strings.Join(names, ", "), "%s %q is not a version of %s", versionField(field), version, crd.Name)
		} else {
			d.add(crdPos, diag.InvalidCRD, "mark one version storage: true", "%s %q has no storage version", field, file)
		}
		return m // without a version
	}
	if !chosen.Served {
		d.add(d.Pos(cmp.Or(versionNode, fileNode)), diag.InvalidValue, "reconcile a served version", "version %s of %s is not served", chosen.Name, crd.Name)
	}
	m.gvk.Version = chosen.Name
	m.statusSubresource = chosen.Subresources != nil && chosen.Subresources.Status != nil
	if chosen.Schema == nil || chosen.Schema.OpenAPIV3Schema == nil {
		d.add(crdPos, diag.InvalidCRD, "add schema.openAPIV3Schema to the version", "version %s of %s has no schema", chosen.Name, crd.Name)
		return m
	}
	st, err := expr.ResourceSchema(chosen.Schema.OpenAPIV3Schema)
	if err != nil {
		d.add(crdPos, diag.InvalidCRD, "Kubernetes requires a structural schema: every field needs a type", "schema of %s %s is not structural: %v", crd.Name, chosen.Name, err)
		return m
	}
	m.schema, m.structural = chosen.Schema.OpenAPIV3Schema, st
	if field == "crd.file" && named {
		// The Blueprint's own CRD is installed from this file: what the
		// API server would refuse is said here, at its line, not when a
		// custom resource meets it. Another operator's (uses) is
		// installed already.
		d.crdRefused(path, data, &crd)
	}
	return m
}

// crdRefused reports, in the CRD file at path, what the API server would
// refuse when the CRD is installed.
func (d *decoder) crdRefused(path string, data []byte, crd *apiextensionsv1.CustomResourceDefinition) {
	fes := crdRefusals(crd)
	if len(fes) == 0 {
		return
	}
	var doc yaml.Node
	_ = yaml.Unmarshal(data, &doc)
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	for _, fe := range fes {
		pos := ir.Pos{File: path, Line: 1, Col: 1}
		if n := yamlpos.At(root, fe.Field, false); n != nil && n.Line > 0 {
			pos.Line, pos.Col = n.Line, n.Column
		}
		hint := "fix the CRD: the API server refuses it as it is"
		if strings.Contains(fe.Detail, "estimated rule cost exceeds budget") {
			hint = "bound what the rule reads: maxItems on arrays, maxLength on strings (on the items of an array of strings too), maxProperties on maps"
		}
		d.add(pos, diag.InvalidCRD, hint, "the API server would refuse this CRD when it is installed: %s", oneLine(fe.Error()))
	}
}

// versionField names the field that picks a CRD's version, next to the
// field that names its file.
func versionField(field string) string {
	if field == "crd.file" {
		return "crd.version"
	}
	return strings.TrimSuffix(field, ".crd") + ".version"
}

// installedCRD fills the Resource from crd.group/version/kind.
func (d *decoder) installedCRD(o *yamlpos.Map, version string) {
	r := &d.bp.Resource
	group, _ := d.String(o, "group", true)
	kind, _ := d.String(o, "kind", true)
	if version == "" {
		d.add(d.Pos(o.Node), diag.MissingField, "add crd.version, or crd.file with the CRD manifest", "crd.version is required without crd.file")
	}
	r.GroupVersionKind = schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	plural, _ := d.String(o, "plural", false)
	if plural == "" && kind != "" {
		// As the operator that installed it named it, most likely:
		// kubebuilder's plural (gateways, not apimachinery's gatewaies).
		plural = simpleschema.Plural(kind)
	}
	r.Plural = plural
	scope, scopeNode := d.String(o, "scope", false)
	switch scope {
	case "", "Namespaced":
		r.Namespaced = true
	case "Cluster":
	default:
		d.add(d.Pos(scopeNode), diag.InvalidValue, "use Namespaced or Cluster", "crd.scope %q is not a scope", scope)
	}
	r.StatusSubresource = true
}

// pathErrorText is err's cause without the path, which the diagnostic
// already names.
func pathErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
