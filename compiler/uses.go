package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
)

// session is one compilation and the Blueprints it uses, each compiled
// once however many use it. It finds cycles of uses.
type session struct {
	// done are the Blueprints compiled, by key.
	done map[string]*result
	// stack are the Blueprints being compiled, each using the next.
	stack []*frame
	opts  Options
}

// result is one Blueprint compiled: bp, or the diagnostics that failed it.
type result struct {
	bp   *ir.Blueprint
	errs diag.List
}

// frame is a Blueprint being compiled, and the entry of its uses it
// follows at the moment.
type frame struct {
	key string
	d   *decoder
	via ir.Pos
}

// sourceKey names a Blueprint's file once, however its path was spelled.
func sourceKey(name string) string { return path.Clean(filepath.ToSlash(name)) }

// compile decodes and checks src. A Blueprint on a cycle of uses, or that
// uses one that does not compile, fails too.
func (s *session) compile(src *load.Source) *result {
	key := sourceKey(src.Name)
	if r, ok := s.done[key]; ok {
		return r
	}
	d := newDecoder(src, s)
	s.stack = append(s.stack, &frame{key: key, d: d})
	bp, self := d.decode()
	if bp != nil {
		c := check(bp, self, d.used, d.parts, &d.errs, d.short != nil)
		d.finishSchema(bp, c)
	}
	s.stack = s.stack[:len(s.stack)-1]
	r := &result{errs: d.errs}
	if len(d.errs) == 0 && !d.brokenUse {
		r.bp = bp
	}
	s.done[key] = r
	return r
}

// uses reads the uses section: the kinds the Blueprint builds on, each
// another Blueprint (blueprint: its file) or a CRD (crd: its manifest).
func (d *decoder) uses(top *yamlpos.Map) {
	n := top.Get("uses")
	if n == nil || yamlpos.IsNull(n) {
		return
	}
	first := map[string]string{} // kind → the entry that uses it first
	for i, item := range d.List(n, "uses") {
		at := fmt.Sprintf("uses[%d]", i)
		m := d.Map(item, at)
		if m == nil {
			continue
		}
		d.Only(m, "blueprint", "crd", "version")
		bpFile, bpNode := d.String(m, "blueprint", false)
		crdFile, crdNode := d.String(m, "crd", false)
		version, versionNode := d.String(m, "version", false)
		var u *ir.Use
		switch {
		case bpNode != nil && crdNode != nil:
			d.add(d.Pos(m.KeyNode("crd")), diag.InvalidValue, "write one entry for each", "%s names a blueprint and a crd; an entry uses one", at)
			continue
		case bpFile != "":
			if versionNode != nil {
				d.add(d.Pos(m.KeyNode("version")), diag.InvalidValue, "remove it: the used Blueprint's crd says which version it reconciles", "%s.version is for a crd", at)
			}
			u = d.useBlueprint(at+".blueprint", bpFile, bpNode)
		case crdFile != "":
			u = d.useCRD(at+".crd", crdFile, crdNode, version, versionNode)
		case bpNode == nil && crdNode == nil:
			d.add(d.Pos(item), diag.MissingField, "write blueprint: ../other/blueprint.yaml (another Blueprint) or crd: manifests/x.yaml (an operator's CRD)", "%s names neither a blueprint nor a crd", at)
			continue
		default:
			continue // an empty string, reported by String
		}
		if u == nil {
			d.brokenUse = true
			continue
		}
		u.Pos = d.Pos(item)
		kind := ir.FormatKind(u.GroupVersionKind)
		switch {
		case u.GroupVersionKind == d.bp.Resource.GroupVersionKind:
			d.add(u.Pos, diag.InvalidValue, "remove it: a Blueprint's children may be its own kind without uses", "%s: %s is the Blueprint's own kind", at, kind)
			continue
		case first[kind] != "":
			d.add(u.Pos, diag.InvalidValue, "use each kind once", "%s: %s is used already by %s", at, kind, first[kind])
			continue
		}
		if _, ok := lookupBuiltin(u.GroupVersionKind); ok {
			d.add(u.Pos, diag.InvalidValue, "remove it: built-in kinds need no uses", "%s: %s is built in", at, kind)
			continue
		}
		first[kind] = at
		d.bp.Uses = append(d.bp.Uses, u)
	}
}

// useCRD reads a CRD the Blueprint builds on: children of its kind are
// typed by its schema.
func (d *decoder) useCRD(field, file string, fileNode *yaml.Node, version string, versionNode *yaml.Node) *ir.Use {
	m := d.readCRD(field, file, fileNode, version, versionNode)
	if m == nil || m.gvk.Version == "" {
		return nil
	}
	u := &ir.Use{
		GroupVersionKind: m.gvk,
		Plural:           m.plural,
		Namespaced:       m.namespaced,
		File:             file,
		Source:           d.src.Files.Path(file),
		CRD:              m.crd,
		Schema:           m.schema,
		ReadyCondition:   hasConditions(m.structural),
	}
	d.used[u.GroupVersionKind] = m.structural
	return u
}

// hasConditions reports whether a schema has status.conditions, a list: a
// kind whose controller says when it is Ready there, as Kubernetes' API
// conventions ask.
func hasConditions(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	status, ok := s.Properties["status"]
	if !ok {
		return false
	}
	conds, ok := status.Properties["conditions"]
	return ok && conds.Type == "array"
}

// useBlueprint compiles another Blueprint this one builds on: children of
// its custom resource's kind are typed by its CRD, and reconciled by it.
func (d *decoder) useBlueprint(field, file string, fileNode *yaml.Node) *ir.Use {
	s := d.session
	top := s.stack[len(s.stack)-1]
	top.via = d.Pos(fileNode)
	src, err := d.src.Open(file)
	if err != nil {
		hint := "" // where Blueprints are not files (ConfigMaps), the error says what to do
		var pe *fs.PathError
		switch {
		case !errors.As(err, &pe):
		case errors.Is(err, fs.ErrNotExist):
			hint = "fix the path (relative to the Blueprint's directory), or create the Blueprint there"
		default:
			hint = "check the path; it is relative to the Blueprint's directory"
		}
		d.add(d.Pos(fileNode), diag.UnreadableFile, hint, "%s %q cannot be read: %s", field, file, pathErrorText(err))
		return nil
	}
	key := sourceKey(src.Name)
	if i := slices.IndexFunc(s.stack, func(f *frame) bool { return f.key == key }); i >= 0 {
		s.cycle(i)
		return nil
	}
	r := s.compile(src)
	if r.bp == nil {
		// Its own diagnostics say why, at their own positions.
		d.errs = append(d.errs, r.errs...)
		return nil
	}
	used := r.bp
	u := &ir.Use{
		GroupVersionKind: used.Resource.GroupVersionKind,
		Plural:           used.Resource.Plural,
		Namespaced:       used.Resource.Namespaced,
		File:             file,
		Source:           used.File,
		Blueprint:        used.Name,
		CRD:              used.Resource.CRD,
		Schema:           used.Resource.Schema,
		ReadyCondition:   true,
		Compiled:         used,
	}
	if u.Schema != nil {
		st, err := expr.ResourceSchema(u.Schema)
		if err != nil {
			return nil // its compilation would have failed
		}
		d.used[u.GroupVersionKind] = st
	}
	return u
}

// cycle reports the cycle of uses from s.stack[i] back to itself, at the
// entry where the cycle starts, and fails every Blueprint on it.
func (s *session) cycle(i int) {
	var chain []string
	for _, f := range s.stack[i:] {
		chain = append(chain, f.d.src.Name)
	}
	chain = append(chain, s.stack[i].d.src.Name)
	start := s.stack[i]
	for _, f := range s.stack[i:] {
		f.d.add(start.via, diag.Cycle, "a Blueprint cannot use itself, directly or through others: remove one of these uses",
			"Blueprints use each other in a cycle: %s", strings.Join(chain, " → "))
		f.d.brokenUse = true
	}
}
