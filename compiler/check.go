package compiler

import (
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// checker is the second half of a compilation: it checks a decoded
// Blueprint against the types of the objects it writes and reads, and
// type-checks, records and orders its expressions.
type checker struct {
	bp   *ir.Blueprint
	errs *diag.List

	// selfShape is the CR's shape; childShapes are by child id.
	selfShape shape
	// usedShapes are the shapes of the kinds uses names.
	usedShapes  map[schema.GroupVersionKind]shape
	childShapes map[string]shape
	// exprShapes say where each whole-value expression's result lands.
	exprShapes map[*ir.Expr]exprUse
	// parts are the expressions a joined one was written as.
	parts map[*ir.Expr][]*ir.Expr
}

// exprUse records where a whole-value expression's result lands.
type exprUse struct {
	shape shape
	path  string
}

// check checks bp, whose CRD has the structural schema self (nil when
// none is known) and whose used kinds have those of used, and completes it: every expression gets its checked
// form, type and references, and children their order.
func check(bp *ir.Blueprint, self *structuralschema.Structural, used map[schema.GroupVersionKind]*structuralschema.Structural, parts map[*ir.Expr][]*ir.Expr, errs *diag.List) {
	c := &checker{bp: bp, errs: errs, selfShape: anyValue, parts: parts, usedShapes: map[schema.GroupVersionKind]shape{}}
	if self != nil {
		c.selfShape = structuralShape{self}
	}
	for gvk, st := range used {
		if st != nil {
			c.usedShapes[gvk] = structuralShape{st}
		}
	}
	c.checkTemplates()
	c.checkExpressions()
	c.order()
}

// checkTemplates checks every template, emit.status and externalRef against
// the shape of the object it becomes part of.
func (c *checker) checkTemplates() {
	c.childShapes = map[string]shape{}
	c.exprShapes = map[*ir.Expr]exprUse{}
	for _, child := range c.bp.Children {
		c.checkNamespace(child)
		var s shape
		switch {
		case child.BuiltIn:
			t, ok := expr.NativeType(child.GroupVersionKind)
			if !ok {
				continue
			}
			s = newGoShape(t)
		case child.Kind != "" && child.GroupVersionKind == c.bp.Resource.GroupVersionKind:
			s = c.selfShape
		case c.usedShapes[child.GroupVersionKind] != nil:
			// Another Blueprint's custom resource, or an operator's: typed
			// by its CRD as the Blueprint's own is.
			s = c.usedShapes[child.GroupVersionKind]
		default:
			continue
		}
		c.childShapes[child.ID] = s
		if child.External {
			c.checkExternalRef(child)
			continue
		}
		c.checkValue(child.Template, s, "", child.Kind)
	}
	c.checkStatusSchema()
}

// checkNamespace checks a child's namespace against the scopes of its kind
// and of the custom resource: both mistakes would fail every reconcile.
func (c *checker) checkNamespace(child *ir.Child) {
	if child.External || child.Kind == "" || child.Template == nil {
		return
	}
	ns := child.Template.Lookup("metadata").Lookup("namespace")
	switch {
	case !child.Namespaced && ns != nil:
		c.errs.Add(ns.Pos, diag.InvalidValue, "remove metadata.namespace", "%s is cluster-scoped: it has no namespace", child.Kind)
	case child.Namespaced && ns == nil && !c.bp.Resource.Namespaced && c.bp.Resource.Kind != "":
		c.errs.Add(child.Template.Pos, diag.MissingField, "set metadata.namespace, e.g. from the custom resource's spec",
			"child %q is a namespaced %s, and the %s is cluster-scoped: it has no namespace to put it in", child.ID, child.Kind, c.bp.Resource.Kind)
	}
}

// checkStatusSchema checks that the CRD lets the runtime write what it
// writes on every custom resource: status.conditions, status.observedGeneration,
// the id reconcile.api keeps, and emit.status. The API server would refuse
// (or drop) anything else, and every status write would fail.
func (c *checker) checkStatusSchema() {
	r := c.bp.Resource
	if r.Schema == nil || c.selfShape.kind() != objectShape {
		return // an installed CRD named by GVK, or a schema that takes anything
	}
	const fix = "add it to the CRD's status schema (x-kubernetes-preserve-unknown-fields: true on status accepts any field)"
	status, ok := c.selfShape.field("status")
	if !ok {
		c.errs.Add(r.Pos, diag.InvalidCRD, "add status to the CRD's schema with conditions and observedGeneration, or with x-kubernetes-preserve-unknown-fields: true",
			"the CRD's schema has no status: the runtime writes status.conditions and status.observedGeneration on every %s", r.Kind)
		if c.bp.Status != nil {
			c.errs.Add(c.bp.Status.Pos, diag.InvalidValue, "add status to the CRD's schema (x-kubernetes-preserve-unknown-fields: true accepts any field)",
				"emit.status is set but the CRD's schema has no status: the API server would drop every field")
		}
		return
	}
	if !r.StatusSubresource {
		c.errs.Add(r.Pos, diag.InvalidCRD, "add subresources: {status: {}} to the CRD version",
			"the CRD version has no status subresource: the runtime writes status through it, so that status writes never touch spec")
	}
	if status.kind() == objectShape {
		for _, f := range []struct {
			name string
			kind shapeKind
		}{{"conditions", listShape}, {"observedGeneration", integerShape}} {
			fs, ok := status.field(f.name)
			switch {
			case !ok:
				c.errs.Add(r.Pos, diag.InvalidCRD, fix, "the CRD's status schema has no %s: the runtime writes status.%s on every %s", f.name, f.name, r.Kind)
			case fs.kind() != anyShape && fs.kind() != f.kind:
				c.errs.Add(r.Pos, diag.InvalidCRD, "make it "+shapeNames[f.kind], "the CRD's status.%s is %s, but the runtime writes %s there", f.name, shapeNames[fs.kind()], shapeNames[f.kind])
			}
		}
		if api := c.apiMapping(); api != nil && api.ID != nil {
			if fs, ok := status.field(api.ID.Field); !ok {
				c.errs.Add(api.ID.Pos, diag.InvalidValue, fix, "reconcile.api.id keeps the id in status.%s, which the CRD's status schema does not have", api.ID.Field)
			} else if k := fs.kind(); k != anyShape && k != stringShape {
				c.errs.Add(api.ID.Pos, diag.InvalidValue, "make status."+api.ID.Field+" a string in the CRD", "reconcile.api.id keeps the id in status.%s, which is %s in the CRD, not a string", api.ID.Field, shapeNames[k])
			}
		}
	}
	if c.bp.Status != nil {
		c.checkValue(c.bp.Status, status, "status", r.Kind)
	}
}

// apiMapping returns reconcile.api, or nil.
func (c *checker) apiMapping() *ir.APIMapping {
	if rec := c.bp.Reconcile; rec != nil && rec.Remote != nil {
		return rec.Remote.API
	}
	return nil
}

func (c *checker) checkExternalRef(child *ir.Child) {
	for _, f := range child.Template.Fields {
		switch f.Key {
		case "apiVersion", "kind":
		case "metadata":
			for _, mf := range f.Value.Fields {
				if mf.Key != "name" && mf.Key != "namespace" {
					c.errs.Add(mf.KeyPos, diag.UnknownField, "an externalRef names an object by metadata.name and metadata.namespace", "unknown field externalRef.metadata.%s", mf.Key)
				}
			}
		default:
			c.errs.Add(f.KeyPos, diag.UnknownField, "an externalRef has apiVersion, kind and metadata only", "unknown field externalRef.%s", f.Key)
		}
	}
}

// checkValue reports fields s does not have and literals of the wrong type.
func (c *checker) checkValue(v *ir.Value, s shape, path, kind string) {
	if v == nil || s == nil || s.kind() == anyShape {
		return
	}
	switch v.Kind {
	case ir.Null:
	case ir.Literal:
		if !literalFits(v.Literal, s.kind()) {
			c.errs.Add(v.Pos, diag.TemplateWrongType, "", "%s of %s must be %s, not %s", displayField(path), kind, shapeNames[s.kind()], describeLiteral(v.Literal))
		}
	case ir.Expression:
		c.exprShapes[v.Expr] = exprUse{shape: s, path: path}
	case ir.Interpolation:
		if k := s.kind(); k != stringShape && k != intOrStringShape {
			c.errs.Add(v.Pos, diag.TemplateWrongType, "use a single ${...} to keep the expression's type", "%s of %s must be %s, but text with ${...} makes a string", displayField(path), kind, shapeNames[k])
		}
	case ir.Map:
		switch s.kind() {
		case objectShape:
			for _, f := range v.Fields {
				fs, ok := s.field(f.Key)
				if !ok {
					hint := ""
					if near, found := closest(f.Key, s.fieldNames()); found {
						hint = "did you mean " + join(path, near) + "?"
					}
					c.errs.Add(f.KeyPos, diag.TemplateUnknownField, hint, "unknown field %s in %s", join(path, f.Key), kind)
					continue
				}
				c.checkValue(f.Value, fs, join(path, f.Key), kind)
			}
		case mapShape:
			for _, f := range v.Fields {
				c.checkValue(f.Value, s.elem(), join(path, f.Key), kind)
			}
		default:
			c.errs.Add(v.Pos, diag.TemplateWrongType, "", "%s of %s must be %s, not a map", displayField(path), kind, shapeNames[s.kind()])
		}
	case ir.List:
		if s.kind() != listShape {
			c.errs.Add(v.Pos, diag.TemplateWrongType, "", "%s of %s must be %s, not a list", displayField(path), kind, shapeNames[s.kind()])
			return
		}
		for i, it := range v.Items {
			c.checkValue(it, s.elem(), fmt.Sprintf("%s[%d]", path, i), kind)
		}
	}
}

func displayField(path string) string {
	if path == "" {
		return "the object"
	}
	return path
}

func literalFits(lit any, k shapeKind) bool {
	switch lit.(type) {
	case string:
		return k == stringShape || k == intOrStringShape
	case int64:
		return k == integerShape || k == numberShape || k == intOrStringShape
	case float64:
		return k == numberShape || k == intOrStringShape
	case bool:
		return k == booleanShape
	}
	return true
}

func describeLiteral(lit any) string {
	switch t := lit.(type) {
	case string:
		return fmt.Sprintf("the string %q", t)
	case int64:
		return fmt.Sprintf("the integer %d", t)
	case float64:
		return fmt.Sprintf("the number %g", t)
	case bool:
		return fmt.Sprintf("the boolean %t", t)
	}
	return fmt.Sprint(lit)
}
