package compiler

import (
	"cmp"
	"errors"
	"io/fs"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
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
	path := d.src.Files.Path(file)
	data, err := d.src.Files.ReadFile(file)
	if err != nil {
		hint := "check the path; it is relative to the Blueprint's directory"
		if errors.Is(err, fs.ErrNotExist) {
			hint = "create it, or fix the path (relative to the Blueprint's directory)"
		}
		d.add(d.Pos(fileNode), diag.MissingCRDFile, hint, "crd.file %q cannot be read: %s", file, pathErrorText(err))
		return
	}
	crdPos := ir.Pos{File: path, Line: 1, Col: 1}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		d.add(crdPos, diag.InvalidCRD, "", "crd.file %q is not a valid CustomResourceDefinition: %v", file, err)
		return
	}
	if crd.Kind != "CustomResourceDefinition" || crd.APIVersion != "apiextensions.k8s.io/v1" {
		d.add(crdPos, diag.InvalidCRD, "the file must hold an apiextensions.k8s.io/v1 CustomResourceDefinition", "crd.file %q holds %s %s", file, crd.APIVersion, crd.Kind)
		return
	}
	r.CRD = &crd
	r.Group = crd.Spec.Group
	r.Kind = crd.Spec.Names.Kind
	r.Plural = crd.Spec.Names.Plural
	r.Namespaced = crd.Spec.Scope != apiextensionsv1.ClusterScoped
	if r.Kind == "" || r.Plural == "" || r.Group == "" {
		d.add(crdPos, diag.InvalidCRD, "set spec.group, spec.names.kind and spec.names.plural", "crd.file %q has no group, kind or plural", file)
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
			d.add(d.Pos(versionNode), diag.InvalidValue, "the CRD serves "+strings.Join(names, ", "), "crd.version %q is not a version of %s", version, crd.Name)
		} else {
			d.add(crdPos, diag.InvalidCRD, "mark one version storage: true", "crd.file %q has no storage version", file)
		}
		return
	}
	if !chosen.Served {
		d.add(d.Pos(cmp.Or(versionNode, fileNode)), diag.InvalidValue, "reconcile a served version", "version %s of %s is not served", chosen.Name, crd.Name)
	}
	r.Version = chosen.Name
	r.StatusSubresource = chosen.Subresources != nil && chosen.Subresources.Status != nil
	if chosen.Schema == nil || chosen.Schema.OpenAPIV3Schema == nil {
		d.add(crdPos, diag.InvalidCRD, "add schema.openAPIV3Schema to the version", "version %s of %s has no schema", chosen.Name, crd.Name)
		return
	}
	r.Schema = chosen.Schema.OpenAPIV3Schema
	s, err := expr.ResourceSchema(r.Schema)
	if err != nil {
		d.add(crdPos, diag.InvalidCRD, "Kubernetes requires a structural schema: every field needs a type", "schema of %s %s is not structural: %v", crd.Name, chosen.Name, err)
		r.Schema = nil
		return
	}
	d.self = s
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
		gvr, _ := meta.UnsafeGuessKindToResource(r.GroupVersionKind)
		plural = gvr.Resource
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
