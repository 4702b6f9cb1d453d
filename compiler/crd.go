package compiler

import (
	"cmp"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// crd resolves the crd section: a manifest file, or an installed CRD named
// by group, version and kind.
func (c *compilation) crd(top *object) {
	n := top.get("crd")
	if n == nil {
		c.errs.add(c.pos(top.node), MissingField, "add crd.file: manifests/crd.yaml, or crd.group/version/kind", "crd is required")
		return
	}
	o := c.object(n, "crd")
	if o == nil {
		return
	}
	c.only(o, "file", "group", "version", "kind", "plural", "scope")
	r := &c.bp.Resource
	file, fileNode := c.str(o, "file", false)
	version, versionNode := c.str(o, "version", false)
	if file == "" {
		c.installedCRD(o, version)
		c.selfShape = anyValue
		return
	}
	for _, k := range []string{"group", "kind", "plural", "scope"} {
		if o.get(k) != nil {
			c.errs.add(c.pos(o.keys[k]), InvalidValue, "remove it: the manifest says it", "crd.%s is taken from crd.file", k)
		}
	}
	r.CRDFile = file
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.dir, file)
	}
	data, err := c.opts.ReadFile(path)
	if err != nil {
		hint := "check the path; it is relative to the Blueprint's directory"
		if errors.Is(err, fs.ErrNotExist) {
			hint = "create it, or fix the path (relative to the Blueprint's directory)"
		}
		c.errs.add(c.pos(fileNode), MissingCRDFile, hint, "crd.file %q cannot be read: %s", file, unwrapPathError(err))
		c.selfShape = anyValue
		return
	}
	crdPos := ir.Pos{File: path, Line: 1, Col: 1}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		c.errs.add(crdPos, InvalidCRD, "", "crd.file %q is not a valid CustomResourceDefinition: %v", file, err)
		c.selfShape = anyValue
		return
	}
	if crd.Kind != "CustomResourceDefinition" || crd.APIVersion != "apiextensions.k8s.io/v1" {
		c.errs.add(crdPos, InvalidCRD, "the file must hold an apiextensions.k8s.io/v1 CustomResourceDefinition", "crd.file %q holds %s %s", file, crd.APIVersion, crd.Kind)
		c.selfShape = anyValue
		return
	}
	r.CRD = &crd
	r.Group = crd.Spec.Group
	r.Kind = crd.Spec.Names.Kind
	r.Plural = crd.Spec.Names.Plural
	r.Namespaced = crd.Spec.Scope != apiextensionsv1.ClusterScoped
	if r.Kind == "" || r.Plural == "" || r.Group == "" {
		c.errs.add(crdPos, InvalidCRD, "set spec.group, spec.names.kind and spec.names.plural", "crd.file %q has no group, kind or plural", file)
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
			c.errs.add(c.pos(versionNode), InvalidValue, "the CRD serves "+strings.Join(names, ", "), "crd.version %q is not a version of %s", version, crd.Name)
		} else {
			c.errs.add(crdPos, InvalidCRD, "mark one version storage: true", "crd.file %q has no storage version", file)
		}
		c.selfShape = anyValue
		return
	}
	if !chosen.Served {
		c.errs.add(c.pos(cmp.Or(versionNode, fileNode)), InvalidValue, "reconcile a served version", "version %s of %s is not served", chosen.Name, crd.Name)
	}
	r.Version = chosen.Name
	r.StatusSubresource = chosen.Subresources != nil && chosen.Subresources.Status != nil
	if chosen.Schema == nil || chosen.Schema.OpenAPIV3Schema == nil {
		c.errs.add(crdPos, InvalidCRD, "add schema.openAPIV3Schema to the version", "version %s of %s has no schema", chosen.Name, crd.Name)
		c.selfShape = anyValue
		return
	}
	r.Schema = chosen.Schema.OpenAPIV3Schema
	s, err := expr.ResourceSchema(r.Schema)
	if err != nil {
		c.errs.add(crdPos, InvalidCRD, "Kubernetes requires a structural schema: every field needs a type", "schema of %s %s is not structural: %v", crd.Name, chosen.Name, err)
		r.Schema = nil
		c.selfShape = anyValue
		return
	}
	c.selfShape = structuralShape{s}
}

// installedCRD fills the Resource from crd.group/version/kind.
func (c *compilation) installedCRD(o *object, version string) {
	r := &c.bp.Resource
	group, _ := c.str(o, "group", true)
	kind, _ := c.str(o, "kind", true)
	if version == "" {
		c.errs.add(c.pos(o.node), MissingField, "add crd.version, or crd.file with the CRD manifest", "crd.version is required without crd.file")
	}
	r.GroupVersionKind = schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	plural, _ := c.str(o, "plural", false)
	if plural == "" && kind != "" {
		gvr, _ := meta.UnsafeGuessKindToResource(r.GroupVersionKind)
		plural = gvr.Resource
	}
	r.Plural = plural
	scope, scopeNode := c.str(o, "scope", false)
	switch scope {
	case "", "Namespaced":
		r.Namespaced = true
	case "Cluster":
	default:
		c.errs.add(c.pos(scopeNode), InvalidValue, "use Namespaced or Cluster", "crd.scope %q is not a scope", scope)
	}
	r.StatusSubresource = true
}
