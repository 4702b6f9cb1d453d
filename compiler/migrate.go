package compiler

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
)

// This file reads and checks a served field's migrate section: the old
// paths inrun migrate moves stored values from. A move only relocates a
// value, so each old path must exist in the CRD (which serves both paths
// while the move runs), hold a value of the new path's type, and carry no
// default (the API server would put a defaulted old value back after the
// move).

// migrateFields are the fields of a served field's migrate section.
var migrateFields = []string{"from", "acceptLoss"}

// serveMigrate reads serve.fields.<name>.migrate into f. crdType is the
// type the CRD gives f.Path ("" when unknown).
func (d *decoder) serveMigrate(n *yaml.Node, where string, f *ir.ServeField, crdType string) {
	where += ".migrate"
	m := d.Map(n, where)
	if m == nil {
		return
	}
	d.Only(m, migrateFields...)
	mig := &ir.FieldMigration{Pos: d.Pos(n)}
	if a := m.Get("acceptLoss"); a != nil {
		mig.AcceptLoss, _ = d.Bool(a, where+".acceptLoss")
	}
	fn := m.Get("from")
	var froms []*yaml.Node
	switch {
	case fn == nil:
		d.add(d.Pos(n), diag.MissingField, "name the path the value was stored at before, e.g. from: spec.repo", "%s.from is required", where)
		return
	case fn.Kind == yaml.ScalarNode:
		froms = []*yaml.Node{fn}
	default:
		froms = d.List(fn, where+".from")
		if fn.Kind == yaml.SequenceNode && len(fn.Content) == 0 {
			d.add(d.Pos(fn), diag.InvalidValue, "list the old paths, or remove migrate", "%s.from is empty", where)
		}
	}
	if f.Path == "" {
		d.add(d.Pos(n), diag.MissingField, "add path: the path values move to", "%s needs the field's path: a migration moves values to it", where)
		return
	}
	if d.self == nil {
		d.add(d.Pos(n), diag.InvalidValue, "give the Blueprint a CRD with a schema (crd.file or schema:) that has both the old and the new path", "%s needs the CRD's schema to check the old paths against", where)
		return
	}
	ok := true
	if def := d.schemaAt(f.Path); def != nil && def.Default.Object != nil {
		// The API server defaults every CR it serves, moved or not: a CR
		// whose value still sits at the old path would read the default
		// at the new one, and its children would follow it at once.
		d.add(d.Pos(n), diag.InvalidValue, "remove the default from "+f.Path+" in the CRD (and its schema: section) until inrun migrate clean has run; put it back after",
			"%s: the new path %s has a default in the CRD (%v), so every custom resource not yet moved reads it there, and its children follow it before any value moves", where, f.Path, def.Default.Object)
		ok = false
	}
	for i, pn := range froms {
		p, isStr := d.Str(pn, fmt.Sprintf("%s.from[%d]", where, i))
		if !isStr {
			ok = false
			continue
		}
		at := where + ".from"
		if len(froms) > 1 || fn.Kind == yaml.SequenceNode {
			at = fmt.Sprintf("%s.from[%d]", where, i)
		}
		switch {
		case p == f.Path:
			d.add(d.Pos(pn), diag.InvalidValue, "name the path the value was stored at before", "%s %s is the field's own path", at, p)
			ok = false
			continue
		case slices.Contains(mig.From, p):
			d.add(d.Pos(pn), diag.InvalidValue, "list each old path once", "%s %s is listed twice", at, p)
			ok = false
			continue
		case strings.HasPrefix(f.Path, p+".") || strings.HasPrefix(p, f.Path+"."):
			d.add(d.Pos(pn), diag.InvalidValue, "move the value between two separate paths", "%s %s and the field's path %s contain one another", at, p, f.Path)
			ok = false
			continue
		}
		if !d.migrateFrom(pn, at, p, f, crdType) {
			ok = false
			continue
		}
		mig.From = append(mig.From, p)
	}
	if ok && len(mig.From) > 0 {
		f.Migrate = mig
	}
}

// schemaAt is the CRD's schema of a dotted path under the custom
// resource, or nil when the CRD has no such field.
func (d *decoder) schemaAt(path string) *structuralschema.Structural {
	s := d.self
	for _, seg := range strings.Split(path, ".") {
		if s == nil {
			return nil
		}
		next, found := s.Properties[seg]
		if !found {
			return nil
		}
		s = &next
	}
	return s
}

// migrateFrom checks one old path against the CRD's schema.
func (d *decoder) migrateFrom(pn *yaml.Node, at, p string, f *ir.ServeField, crdType string) bool {
	segs := strings.Split(p, ".")
	if segs[0] != "spec" || len(segs) < 2 || slices.Contains(segs, "") {
		d.add(d.Pos(pn), diag.InvalidValue, "write a dotted path under spec, such as spec.repo", "%s %q is not a path under spec", at, p)
		return false
	}
	d.transitional(p, f)
	s := d.self
	for i, seg := range segs {
		next, found := s.Properties[seg]
		if !found {
			prefix := strings.Join(segs[:i], ".")
			names := make([]string, 0, len(s.Properties))
			for k := range s.Properties {
				names = append(names, k)
			}
			sort.Strings(names)
			hint := "keep the old path in the CRD while values move: the CRD serves both paths until inrun migrate has moved every value"
			if near, ok := closest(seg, names); ok {
				hint = "did you mean " + join(prefix, near) + "? " + hint
			}
			d.add(d.Pos(pn), diag.UnknownField, hint, "%s: the CRD has no field %s", at, p)
			return false
		}
		if i < len(segs)-1 && next.Type != "object" {
			d.add(d.Pos(pn), diag.InvalidValue, "name a string, integer, number or boolean", "%s: %s is %s in the CRD, not an object", at, strings.Join(segs[:i+1], "."), article(next.Type))
			return false
		}
		s = &next
	}
	switch s.Type {
	case "string", "integer", "number", "boolean":
	default:
		d.add(d.Pos(pn), diag.InvalidValue, "name a string, integer, number or boolean: a served field holds one value", "%s: %s is %s in the CRD", at, p, article(s.Type))
		return false
	}
	t := crdType
	if t == "" {
		t = string(f.Type)
	}
	if t != "" && !typeAgrees(ir.FieldType(s.Type), t) {
		d.add(d.Pos(pn), diag.WrongType, "a migration moves values and converts none: move from a path of the same type (an integer may move to a number)",
			"%s: %s is %s in the CRD, but %s is %s: the move would change the value's type", at, p, article(s.Type), f.Path, article(t))
		return false
	}
	if s.Default.Object != nil {
		d.add(d.Pos(pn), diag.InvalidValue, "remove the default from "+p+" in the CRD while values move",
			"%s: %s has a default in the CRD, so the API server would put a value back there after every move", at, p)
		return false
	}
	return true
}

// migrateConflicts reports old paths that another field still writes, or
// that two fields move from.
func (d *decoder) migrateConflicts(s *ir.Serve) {
	from := map[string]string{}
	for _, f := range s.Fields {
		if f.Migrate == nil {
			continue
		}
		for _, p := range f.Migrate.From {
			if g := s.FieldAt(p); g != nil {
				d.add(f.Migrate.Pos, diag.InvalidValue, "a path is either written or moved away from: remove it from migrate.from, or map field "+g.Name+" elsewhere",
					"serve.fields.%s.migrate.from %s is the path of field %s", f.Name, p, g.Name)
			}
			if other, dup := from[p]; dup {
				d.add(f.Migrate.Pos, diag.InvalidValue, "move each old path into one field",
					"serve.fields.%s.migrate.from %s is also moved by field %s", f.Name, p, other)
			}
			from[p] = f.Name
		}
	}
}
