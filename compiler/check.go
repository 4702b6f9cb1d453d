package compiler

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/builtin"
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
	// env is the expressions' environment, once built.
	env *expr.Env
	// inferredStatus: the CRD is generated from a schema section, whose
	// status fields are declared from emit.status after this check.
	inferredStatus bool
}

// exprUse records where a whole-value expression's result lands.
type exprUse struct {
	shape      shape
	path, kind string
}

// check checks bp, whose CRD has the structural schema self (nil when
// none is known) and whose used kinds have those of used, and completes it:
// every expression gets its checked form, type and references, and
// children their order. inferredStatus says the CRD's status is declared
// from emit.status after the check.
func check(bp *ir.Blueprint, self *structuralschema.Structural, used map[schema.GroupVersionKind]*structuralschema.Structural, parts map[*ir.Expr][]*ir.Expr, errs *diag.List, inferredStatus bool) *checker {
	c := &checker{bp: bp, errs: errs, selfShape: anyValue, parts: parts, usedShapes: map[schema.GroupVersionKind]shape{}, inferredStatus: inferredStatus}
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
	c.checkServe()
	c.order()
	c.checkWorkflow()
	return c
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
		if !child.External {
			c.checkValue(child.Template, s, "", child.Kind)
			c.checkOwnerReferences(child)
			c.checkWorkload(child)
		}
	}
	for _, child := range c.bp.Children {
		if child.External && child.Template != nil && child.Template.Kind == ir.Map {
			c.checkExternalRef(child)
		}
	}
	c.checkStatusSchema()
	c.checkSameObject()
}

// checkOwnerReferences refuses a template's metadata.ownerReferences: the
// runtime writes the child's owner references itself (the custom resource
// as its controller, where garbage collection allows it), replacing the
// template's, which would otherwise be dropped without a word.
func (c *checker) checkOwnerReferences(child *ir.Child) {
	md := child.Template.Lookup("metadata")
	if md == nil || md.Kind != ir.Map {
		return
	}
	for _, f := range md.Fields {
		if f.Key == "ownerReferences" {
			c.errs.Add(f.KeyPos, diag.InvalidValue, "remove it: the custom resource is each child's controller owner (in its namespace, or from a cluster-scoped custom resource), and garbage collection deletes the child with it",
				"child %q: metadata.ownerReferences is written by Inrun, not by a template", child.ID)
		}
	}
}

// kindResolved reports whether the child's kind is one the compiler knows,
// and so its scope: an unknown kind is reported once (E0010), not again as
// cluster-scoped. Every kind known has a plural.
func kindResolved(child *ir.Child) bool { return child.Kind != "" && child.Plural != "" }

// checkNamespace checks a child's namespace against the scopes of its kind
// and of the custom resource: both mistakes would fail every reconcile.
func (c *checker) checkNamespace(child *ir.Child) {
	if child.External || !kindResolved(child) || child.Template == nil {
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
	if c.bp.ControllerRef() != nil {
		return // a controller-runtime reconciler writes its own status
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
		if wf := c.workflow(); wf != nil {
			if fs, ok := status.field("workflow"); !ok {
				c.errs.Add(wf.Pos, diag.InvalidValue, fix, "reconcile.workflow keeps the workflow's progress in status.workflow, which the CRD's status schema does not have")
			} else if k := fs.kind(); k != anyShape && k != objectShape {
				c.errs.Add(wf.Pos, diag.InvalidValue, "make status.workflow an object in the CRD", "reconcile.workflow keeps the workflow's progress in status.workflow, which is %s in the CRD, not an object", shapeNames[k])
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

// workflow returns reconcile.workflow, or nil.
func (c *checker) workflow() *ir.Workflow {
	if rec := c.bp.Reconcile; rec != nil {
		return rec.Workflow
	}
	return nil
}

// apiMapping returns reconcile.api, or nil.
func (c *checker) apiMapping() *ir.APIMapping {
	if rec := c.bp.Reconcile; rec != nil && rec.Remote != nil {
		return rec.Remote.API
	}
	return nil
}

var (
	stringValue        = newGoShape(reflect.TypeFor[string]())
	labelSelectorShape = newGoShape(reflect.TypeFor[metav1.LabelSelector]())
)

// checkExternalRef checks what names an externalRef's objects: a name, or
// a label selector, and a namespace where the kind has one.
func (c *checker) checkExternalRef(child *ir.Child) {
	for _, f := range child.Template.Fields {
		switch f.Key {
		case "apiVersion", "kind":
		case "metadata":
			for _, mf := range f.Value.Fields {
				switch mf.Key {
				case "name":
					c.checkValue(mf.Value, stringValue, "metadata.name", "externalRef")
				case "namespace":
					if kindResolved(child) && !child.Namespaced {
						c.errs.Add(mf.KeyPos, diag.InvalidValue, "remove metadata.namespace", "%s is cluster-scoped: it has no namespace", child.Kind)
					}
					c.checkValue(mf.Value, stringValue, "metadata.namespace", "externalRef")
				case "selector":
					c.checkValue(mf.Value, labelSelectorShape, "metadata.selector", "externalRef")
					c.checkSelector(mf.Value)
				default:
					c.errs.Add(mf.KeyPos, diag.UnknownField, "an externalRef names its objects by metadata.name or metadata.selector, and metadata.namespace", "unknown field externalRef.metadata.%s", mf.Key)
				}
			}
		default:
			c.errs.Add(f.KeyPos, diag.UnknownField, "an externalRef has apiVersion, kind and metadata only", "unknown field externalRef.%s", f.Key)
		}
	}
}

// checkSelector checks the literals of a label selector as the API server
// would: label keys and values, and operators with the values they take.
// Expressions are checked when they are evaluated.
func (c *checker) checkSelector(sel *ir.Value) {
	if sel.Kind != ir.Map {
		return // checkValue reported it
	}
	if ml := sel.Lookup("matchLabels"); ml != nil && ml.Kind == ir.Map {
		for _, f := range ml.Fields {
			c.checkLabelKey(f.Key, f.KeyPos)
			c.checkLabelValue(f.Value)
		}
	}
	me := sel.Lookup("matchExpressions")
	if me == nil || me.Kind != ir.List {
		return
	}
	for i, req := range me.Items {
		if req.Kind != ir.Map {
			continue
		}
		path := fmt.Sprintf("metadata.selector.matchExpressions[%d]", i)
		key, op, values := req.Lookup("key"), req.Lookup("operator"), req.Lookup("values")
		if key == nil {
			c.errs.Add(req.Pos, diag.MissingField, "add key: with the label to test", "externalRef.%s.key is required", path)
		} else if s, ok := literalString(key); ok {
			c.checkLabelKey(s, key.Pos)
		}
		if op == nil {
			c.errs.Add(req.Pos, diag.MissingField, "add operator: In, NotIn, Exists or DoesNotExist", "externalRef.%s.operator is required", path)
			continue
		}
		ops, ok := literalString(op)
		if !ok {
			c.errs.Add(op.Pos, diag.InvalidValue, "write In, NotIn, Exists or DoesNotExist", "externalRef.%s.operator must be a literal", path)
			continue
		}
		switch metav1.LabelSelectorOperator(ops) {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			switch {
			case values == nil:
				c.errs.Add(op.Pos, diag.MissingField, "add values: with the label values to test", "externalRef.%s.values is required with operator %s", path, ops)
			case values.Kind == ir.List && len(values.Items) == 0:
				c.errs.Add(values.Pos, diag.InvalidValue, "give at least one value", "externalRef.%s.values must not be empty with operator %s", path, ops)
			case values.Kind == ir.List:
				for _, v := range values.Items {
					c.checkLabelValue(v)
				}
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if values != nil {
				c.errs.Add(values.Pos, diag.InvalidValue, "remove values", "externalRef.%s.values must be empty with operator %s", path, ops)
			}
		default:
			hint := "write In, NotIn, Exists or DoesNotExist"
			if near, ok := closest(ops, []string{"In", "NotIn", "Exists", "DoesNotExist"}); ok {
				hint = "did you mean " + near + "?"
			}
			c.errs.Add(op.Pos, diag.InvalidValue, hint, "externalRef.%s.operator %q is not a label selector operator", path, ops)
		}
	}
}

// isLabelMap reports whether the map at path holds labels, whose keys and
// values the API server validates: an object's, a pod template's, a
// selector's.
func isLabelMap(path string) bool {
	return strings.HasSuffix(path, "metadata.labels") || path == "matchLabels" || strings.HasSuffix(path, ".matchLabels") ||
		strings.HasSuffix(path, "nodeSelector")
}

// checkMetadataKey checks a literal label or annotation key, which the API
// server refuses unless it is a qualified name.
func (c *checker) checkMetadataKey(key string, pos ir.Pos, annotation bool) {
	if !annotation {
		c.checkLabelKey(key, pos)
		return
	}
	if errs := validation.IsQualifiedName(strings.ToLower(key)); len(errs) > 0 {
		c.errs.Add(pos, diag.InvalidValue, "an annotation key is a name, optionally prefixed by a DNS subdomain and /", "annotation key %q: %s", key, strings.Join(errs, "; "))
	}
}

func (c *checker) checkLabelKey(key string, pos ir.Pos) {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		c.errs.Add(pos, diag.InvalidValue, "a label key is a name, optionally prefixed by a DNS subdomain and /", "label key %q: %s", key, strings.Join(errs, "; "))
	}
}

func (c *checker) checkLabelValue(v *ir.Value) {
	if v == nil || v.Kind != ir.Literal {
		return
	}
	s, ok := v.Literal.(string)
	if !ok {
		return // checkValue reported it
	}
	if errs := validation.IsValidLabelValue(s); len(errs) > 0 {
		c.errs.Add(v.Pos, diag.InvalidValue, "", "label value %q: %s", s, strings.Join(errs, "; "))
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
		} else if text, ok := v.Literal.(string); ok && isQuantity(s) {
			if _, err := resource.ParseQuantity(text); err != nil {
				c.errs.Add(v.Pos, diag.InvalidValue, "write a number with a suffix the API server knows: 512Mi, 1G, 1.5, 500m (Ki, Mi, Gi are powers of 1024; k, M, G of 1000)",
					"%s of %s: %q is not a quantity", displayField(path), kind, text)
			}
		} else if ok {
			c.checkEnum(v, text, s, path, kind)
		}
	case ir.Expression:
		c.exprShapes[v.Expr] = exprUse{shape: s, path: path, kind: kind}
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
			labels, annotations := isLabelMap(path), strings.HasSuffix(path, "metadata.annotations")
			for _, f := range v.Fields {
				if labels || annotations {
					c.checkMetadataKey(f.Key, f.KeyPos, annotations)
				}
				if labels {
					c.checkLabelValue(f.Value)
				}
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

// checkEnum reports a literal the API server refuses in a field of an
// enum type (builtin.EnumValues): imagePullPolicy: always, protocol: tcp.
// An empty one is left alone, as the API server defaults most of them,
// but in a pointer field (pathType: ""), which it defaults only when unset.
func (c *checker) checkEnum(v *ir.Value, text string, s shape, path, kind string) {
	g, ok := s.(*goShape)
	if !ok || text == "" && !g.pointer {
		return
	}
	if g.t == restartPolicyType && podTemplateKind(kind) {
		return // checkWorkload's, which knows the policies the kind takes
	}
	values, ok := builtin.EnumValues(g.t)
	if !ok || slices.Contains(values, text) {
		return
	}
	quoted := make([]string, len(values))
	for i, value := range values {
		quoted[i] = strconv.Quote(value)
	}
	// Only a difference of case is taken for a misspelling: the values are
	// short, and a few edits turn one into another (HTTP into SCTP).
	hint := "use one of " + strings.Join(quoted, ", ")
	if i := slices.IndexFunc(values, func(value string) bool { return strings.EqualFold(value, text) }); i >= 0 {
		hint = "write " + quoted[i]
	}
	c.errs.Add(v.Pos, diag.InvalidValue, hint, "%s of %s: %q is not a supported value", displayField(path), kind, text)
}

var restartPolicyType = reflect.TypeFor[corev1.RestartPolicy]()

// podTemplateKind reports whether a built-in kind is a workload of
// podTemplates, whose pods take fewer restart policies than a Pod's.
func podTemplateKind(kind string) bool {
	for gk := range podTemplates {
		if strings.HasSuffix(gk, "/"+kind) {
			return true
		}
	}
	return false
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
