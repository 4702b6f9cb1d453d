package compiler

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// This file reads and checks the Blueprint's migrate section: a kind move.
// The target is a kind the Blueprint uses, so its schema is known: a field
// both kinds have must hold the same type (a move copies values and
// converts none), and a field the target requires must be one the
// Blueprint's kind has. Which custom resources collide by name with
// objects of the target is only known in the cluster: inrun migrate plan
// says.

// The fields of the migrate section, of migrate.to and of migrate.selection.
var (
	migrateKindFields = []string{"to", "selection", "acceptLoss"}
	migrateToFields   = []string{"apiVersion", "kind", "namespace"}
	selectionFields   = []string{"matchLabels", "matchExpressions", "includeWhen"}
)

// migrate reads the top-level migrate section.
func (d *decoder) migrate(top *yamlpos.Map) {
	n := top.Get("migrate")
	if n == nil || yamlpos.IsNull(n) {
		return
	}
	m := d.Map(n, "migrate")
	if m == nil {
		return
	}
	d.Only(m, migrateKindFields...)
	mig := &ir.Migrate{Pos: d.Pos(top.KeyNode("migrate"))}
	ok := true
	if a := m.Get("acceptLoss"); a != nil {
		mig.AcceptLoss, _ = d.Bool(a, "migrate.acceptLoss")
	}
	// The section is kept even when wrong, so that its expression is
	// checked too: every problem is reported at once, and the IR of a
	// Blueprint with any is dropped.
	d.bp.Migrate = mig
	if sn := m.Get("selection"); sn != nil {
		var selOK bool
		mig.Selection, selOK = d.selection(sn)
		ok = ok && selOK
	} else {
		d.add(mig.Pos, diag.MissingField, "say which custom resources move, e.g. selection: {matchLabels: {tier: web}}; selection: {} moves every one", "migrate.selection is required")
		ok = false
	}
	tn := m.Get("to")
	if tn == nil {
		d.add(mig.Pos, diag.MissingField, "name the kind the custom resources move to, e.g. to: {apiVersion: platform.example.dev/v1, kind: WebApp}", "migrate.to is required")
		return
	}
	d.migrateTo(tn, mig)
	for _, f := range d.bp.Serve.Migrations() {
		d.add(f.Migrate.Pos, diag.InvalidValue, "move the fields first (inrun migrate apply), then remove their migrate sections and move the kind",
			"serve.fields.%s.migrate and migrate.to in one Blueprint: a migration moves fields or custom resources, not both at once", f.Name)
	}
}

// migrateTo reads migrate.to and checks the target against the Blueprint's
// kind.
func (d *decoder) migrateTo(n *yaml.Node, mig *ir.Migrate) bool {
	m := d.Map(n, "migrate.to")
	if m == nil {
		return false
	}
	d.Only(m, migrateToFields...)
	apiVersion, avNode := d.Required(m, "apiVersion", "the group/version the custom resources move to, e.g. platform.example.dev/v1")
	kind, kindNode := d.Required(m, "kind", "the kind the custom resources move to, e.g. WebApp")
	ns, nsNode := d.String(m, "namespace", false)
	if apiVersion == "" || kind == "" {
		return false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		d.add(d.Pos(avNode), diag.InvalidValue, "write group/version, e.g. platform.example.dev/v1", "migrate.to.apiVersion %q: %v", apiVersion, err)
		return false
	}
	to := &mig.To
	to.Pos = d.Pos(kindNode)
	to.GroupVersionKind = gv.WithKind(kind)
	own := d.bp.Resource.GroupVersionKind
	if to.Group == own.Group && to.Kind == own.Kind {
		d.add(d.Pos(kindNode), diag.InvalidValue, "a kind move goes to another group or kind; the versions of one kind are one CRD's versions, which the API server converts between",
			"migrate.to is %s, the Blueprint's own kind", ir.FormatKind(to.GroupVersionKind))
		return false
	}
	var use *ir.Use
	for _, u := range d.bp.Uses {
		if u.GroupVersionKind == to.GroupVersionKind {
			use = u
		}
	}
	if use == nil {
		if !d.brokenUse {
			hint := "add the kind to uses: the Blueprint that reconciles it (uses: [{blueprint: ../webapp/blueprint.yaml}]) or its CRD (uses: [{crd: webapp-crd.yaml}]), so that its schema can be checked"
			kinds := map[string]schema.GroupVersionKind{}
			for _, u := range d.bp.Uses {
				kinds[ir.FormatKind(u.GroupVersionKind)] = u.GroupVersionKind
			}
			if near, ok := suggest.Closest(ir.FormatKind(to.GroupVersionKind), slices.Sorted(maps.Keys(kinds))); ok {
				gvk := kinds[near]
				hint = fmt.Sprintf("did you mean apiVersion: %s, kind: %s (a kind it uses)? Else %s", gvk.GroupVersion(), gvk.Kind, hint)
			}
			d.add(d.Pos(kindNode), diag.UnknownKind, hint, "migrate.to: %s is not a kind the Blueprint uses", ir.FormatKind(to.GroupVersionKind))
		}
		return false
	}
	to.Plural, to.Namespaced, to.Blueprint, to.Schema = use.Plural, use.Namespaced, use.Blueprint, use.Schema
	ok := true
	switch {
	case nsNode != nil && !to.Namespaced:
		d.add(d.Pos(nsNode), diag.InvalidValue, "remove it: custom resources of a cluster-scoped kind have no namespace",
			"migrate.to.namespace: %s is cluster-scoped", ir.FormatKind(to.GroupVersionKind))
		ok = false
	case nsNode != nil && ns != "":
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			d.add(d.Pos(nsNode), diag.InvalidValue, "name a namespace", "migrate.to.namespace %q: %s", ns, strings.Join(errs, "; "))
			ok = false
		}
		to.Namespace = ns
	case to.Namespaced && !d.bp.Resource.Namespaced:
		d.add(to.Pos, diag.MissingField, "add namespace: the namespace the custom resources go to",
			"migrate.to: %s is namespaced and %s is cluster-scoped: migrate.to.namespace is required", ir.FormatKind(to.GroupVersionKind), d.bp.Resource.Kind)
		ok = false
	}
	if d.self != nil && d.used[to.GroupVersionKind] != nil {
		ok = d.convertible(to, d.self, d.used[to.GroupVersionKind]) && ok
	}
	return ok
}

// convertible reports, each at migrate.to, every field both kinds have
// with another type, and every field the target requires that the
// Blueprint's kind does not have. metadata is the same in every kind.
func (d *decoder) convertible(to *ir.MigrateTarget, from, into *structuralschema.Structural) bool {
	ok := true
	target := ir.FormatKind(to.GroupVersionKind)
	var walk func(path string, a, b *structuralschema.Structural)
	walk = func(path string, a, b *structuralschema.Structural) {
		if b.XPreserveUnknownFields {
			return
		}
		if path != "" && !typeAgrees(ir.FieldType(a.Type), b.Type) {
			d.add(to.Pos, diag.WrongType, "a kind move copies values and converts none: give the field the same type in both kinds, or move it to a new field first (serve.fields.<name>.migrate.from)",
				"migrate.to: %s is %s in %s but %s in %s: its values cannot move", path, article(a.Type), d.bp.Resource.Kind, article(b.Type), target)
			ok = false
			return
		}
		switch {
		case a.Items != nil && b.Items != nil:
			walk(path+"[]", a.Items, b.Items)
		case a.Type == "object":
			// A source that keeps unknown fields may hold what the target
			// requires: each object is checked when it moves.
			for _, req := range requiredOf(b) {
				if a.XPreserveUnknownFields {
					break
				}
				if _, has := a.Properties[req]; !has {
					if _, defaulted := b.Properties[req]; defaulted && b.Properties[req].Default.Object != nil {
						continue
					}
					d.add(to.Pos, diag.MissingField, "give the field a default in "+target+", or add it to "+d.bp.Resource.Kind+" and fill it first",
						"migrate.to: %s requires %s, which %s does not have: no custom resource could move", target, join(path, req), d.bp.Resource.Kind)
					ok = false
				}
			}
			names := make([]string, 0, len(a.Properties))
			for k := range a.Properties {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				if path == "" && (k == "metadata" || k == "apiVersion" || k == "kind") {
					continue
				}
				bs, has := b.Properties[k]
				if !has {
					continue // dropped: the plan lists the values lost
				}
				as := a.Properties[k]
				walk(join(path, k), &as, &bs)
			}
		}
	}
	walk("", from, into)
	return ok
}

// selection reads migrate.selection: a label selector and a condition
// over self.
func (d *decoder) selection(n *yaml.Node) (*ir.Selection, bool) {
	m := d.Map(n, "migrate.selection")
	if m == nil {
		return nil, false
	}
	d.Only(m, selectionFields...)
	sel := &ir.Selection{Pos: d.Pos(n)}
	ok := true
	if ln := m.Get("matchLabels"); ln != nil {
		lm := d.Map(ln, "migrate.selection.matchLabels")
		if lm != nil {
			sel.MatchLabels = map[string]string{}
			for _, k := range lm.Order {
				v, isStr := d.Str(lm.Get(k), "migrate.selection.matchLabels."+k)
				if !isStr {
					ok = false
					continue
				}
				sel.MatchLabels[k] = v
			}
		}
	}
	if en := m.Get("matchExpressions"); en != nil {
		for i, item := range d.List(en, "migrate.selection.matchExpressions") {
			at := fmt.Sprintf("migrate.selection.matchExpressions[%d]", i)
			em := d.Map(item, at)
			if em == nil {
				ok = false
				continue
			}
			d.Only(em, "key", "operator", "values")
			key, _ := d.Required(em, "key", "the label's key")
			op, _ := d.Required(em, "operator", "In, NotIn, Exists or DoesNotExist")
			req := metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOperator(op)}
			if vn := em.Get("values"); vn != nil {
				for j, v := range d.List(vn, at+".values") {
					s, _ := d.Str(v, fmt.Sprintf("%s.values[%d]", at, j))
					req.Values = append(req.Values, s)
				}
			}
			sel.MatchExpressions = append(sel.MatchExpressions, req)
		}
	}
	if ok {
		if _, err := metav1.LabelSelectorAsSelector(sel.LabelSelector()); err != nil {
			d.add(sel.Pos, diag.InvalidValue, "write a Kubernetes label selector, as a Deployment's: matchLabels, and matchExpressions with key, operator (In, NotIn, Exists, DoesNotExist) and values",
				"migrate.selection is not a valid label selector: %v", err)
			ok = false
		}
	}
	if wn := m.Get("includeWhen"); wn != nil {
		sel.IncludeWhen = d.condition(wn, "migrate.selection.includeWhen")
		ok = ok && sel.IncludeWhen != nil
	}
	return sel, ok
}
