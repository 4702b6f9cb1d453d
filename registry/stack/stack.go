package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/registry"
)

// Kind is the kind of a Stack file; its apiVersion is Blueprints'.
const Kind = "Stack"

// apiVersion is the apiVersion a Stack declares.
const apiVersion = "inrun.dev/v1alpha1"

// Stack is a Stack file: the patterns a team runs.
type Stack struct {
	// Name is metadata.name.
	Name string
	// File is where the Stack was read from.
	File string
	// Patterns are the entries, in the order written.
	Patterns []*Entry
}

// Entry is one pattern of a Stack.
type Entry struct {
	// Name is the pattern's name in its namespace.
	Name string
	// Registry is the host[:port]/namespace the pattern is in: the entry's
	// own, else the Stack's.
	Registry string
	// Version is the constraint as written; Constraint is it parsed.
	Version    string
	Constraint *semver.Constraints
	// Digest, when set, names the one pattern manifest to run
	// (sha256:...), instead of the newest version that meets Constraint.
	// inrun run REGISTRY/NAME@sha256:... sets it; a Stack file names
	// versions.
	Digest string
	// Accept are the deprecations of this pattern the team accepts.
	Accept []*Acceptance
	// Pos is where the entry is.
	Pos diag.Pos
}

// Acceptance is one accept: of an entry: the versions it covers may run
// although deprecated, through the day Until.
type Acceptance struct {
	// Version is the constraint as written; Constraint is it parsed.
	Version    string
	Constraint *semver.Constraints
	// Until is the last day (UTC) the acceptance holds.
	Until time.Time
	// Pos is where the acceptance is.
	Pos diag.Pos
}

// Host is the registry's host[:port]; Namespace the path under it. For
// an OCI layout directory (oci:DIR), Host is the whole of it and the
// namespace is empty.
func (e *Entry) Host() string {
	if _, ok := registry.IsLayoutRegistry(e.Registry); ok {
		return e.Registry
	}
	h, _, _ := strings.Cut(e.Registry, "/")
	return h
}

// Namespace is the entry's namespace in its registry.
func (e *Entry) Namespace() string {
	if _, ok := registry.IsLayoutRegistry(e.Registry); ok {
		return ""
	}
	_, ns, _ := strings.Cut(e.Registry, "/")
	return ns
}

// ReadFile reads the Stack at path. A relative OCI layout directory
// (registry: oci:DIR) is relative to the Stack file.
func ReadFile(path string) (*Stack, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the Stack: %w", err)
	}
	s, err := Read(path, data)
	if err != nil {
		return nil, err
	}
	for _, e := range s.Patterns {
		if dir, ok := registry.IsLayoutRegistry(e.Registry); ok && !filepath.IsAbs(dir) {
			e.Registry = registry.LayoutScheme + filepath.Join(filepath.Dir(path), dir)
		}
	}
	return s, nil
}

const constraintHint = `write a semver constraint, such as "1.2.3", "^1.2", "~1.2.0" or ">=1.2.0 <2.0.0"`

// Read reads a Stack from data, named file in positions. Every problem
// is reported at once, each with its position, code and a hint.
func Read(file string, data []byte) (*Stack, error) {
	var errs diag.List
	r := yamlpos.NewReader(file, &errs)
	r.What = "the Stack"
	s := &Stack{File: file}
	root := r.Parse(data, "start with apiVersion: "+apiVersion+" and kind: "+Kind)
	if root == nil {
		return nil, errs.Err()
	}
	top := r.Map(root, "")
	if top == nil {
		return nil, errs.Err()
	}
	r.Only(top, "apiVersion", "kind", "metadata", "registry", "patterns")
	if v, n := r.String(top, "apiVersion", true); v != "" && v != apiVersion {
		r.Errorf(n, diag.InvalidValue, "use apiVersion: "+apiVersion, "unsupported apiVersion %q", v)
	}
	if v, n := r.String(top, "kind", true); v != "" && v != Kind {
		r.Errorf(n, diag.InvalidValue, "use kind: "+Kind, "kind must be %s, not %q", Kind, v)
	}
	if mn := top.Get("metadata"); mn != nil {
		md := r.Map(mn, "metadata")
		r.Only(md, "name", "labels", "annotations")
		s.Name, _ = r.String(md, "name", false)
	}
	defReg, defNode := r.String(top, "registry", false)
	if defReg != "" {
		checkRegistry(r, defNode, "registry", defReg)
	}
	pn := top.Get("patterns")
	items := r.List(pn, "patterns")
	if len(items) == 0 && (pn == nil || yamlpos.IsNull(pn) || pn.Kind == yaml.SequenceNode) {
		r.Errorf(top.Node, diag.MissingField, "list the patterns the team runs, each with a name and a version", "patterns is required")
	}
	seen := map[string]*yaml.Node{}
	for i, item := range items {
		path := fmt.Sprintf("patterns[%d]", i)
		m := r.Map(item, path)
		if m == nil {
			continue
		}
		r.Only(m, "name", "version", "registry", "accept")
		e := &Entry{Pos: r.Pos(item)}
		var nn *yaml.Node
		e.Name, nn = r.Required(m, "name", "the pattern's name, as inrun patterns lists it")
		e.Registry = defReg
		if reg, n := r.String(m, "registry", false); reg != "" {
			if checkRegistry(r, n, path+".registry", reg) {
				e.Registry = reg
			}
		} else if defReg == "" {
			r.Errorf(item, diag.MissingField, "set registry: REGISTRY/NAMESPACE on the entry or at the top of the Stack", "%s.registry is required: the Stack names no registry", path)
		}
		if e.Name != "" {
			key := e.Registry + "/" + e.Name
			if prev, dup := seen[key]; dup {
				r.Errorf(nn, diag.DuplicateName, "keep one entry per pattern", "pattern %s is listed twice (line %d)", e.Name, prev.Line)
			} else {
				seen[key] = nn
			}
		}
		var vn *yaml.Node
		e.Version, vn = r.Required(m, "version", constraintHint)
		if e.Version != "" {
			e.Constraint = constraint(r, vn, path+".version", e.Version)
		}
		e.Accept = accepts(r, m.Get("accept"), path+".accept")
		s.Patterns = append(s.Patterns, e)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// accepts reads an entry's accept: one acceptance as a map, or a list of
// them.
func accepts(r *yamlpos.Reader, n *yaml.Node, path string) []*Acceptance {
	if n == nil || yamlpos.IsNull(n) {
		return nil
	}
	items := []*yaml.Node{n}
	paths := []string{path}
	if n.Kind == yaml.SequenceNode {
		items, paths = r.List(n, path), nil
		for i := range items {
			paths = append(paths, fmt.Sprintf("%s[%d]", path, i))
		}
	}
	var out []*Acceptance
	for i, item := range items {
		m := r.Map(item, paths[i])
		if m == nil {
			continue
		}
		r.Only(m, "version", "until")
		a := &Acceptance{Pos: r.Pos(item)}
		var vn *yaml.Node
		a.Version, vn = r.Required(m, "version", "the deprecated version accepted, or a constraint over several")
		if a.Version != "" {
			a.Constraint = constraint(r, vn, paths[i]+".version", a.Version)
		}
		if un := m.Get("until"); un == nil || yamlpos.IsNull(un) {
			r.Errorf(item, diag.MissingField, "an acceptance lasts until a date you choose, such as until: 2027-03-31", "%s.until is required", paths[i])
		} else {
			a.Until, _ = r.Date(un, paths[i]+".until")
		}
		out = append(out, a)
	}
	return out
}

// constraint parses a semver constraint, reporting one that does not.
func constraint(r *yamlpos.Reader, n *yaml.Node, path, text string) *semver.Constraints {
	c, err := semver.NewConstraint(text)
	if err != nil {
		r.Errorf(n, diag.InvalidValue, constraintHint, "%s %q is not a version constraint: %v", path, text, err)
		return nil
	}
	return c
}

// checkRegistry checks a host[:port]/namespace.
func checkRegistry(r *yamlpos.Reader, n *yaml.Node, path, reg string) bool {
	if dir, ok := registry.IsLayoutRegistry(reg); ok {
		if dir == "" {
			r.Errorf(n, diag.InvalidValue, "write oci:DIR, the directory of an OCI layout", "%s %q names no directory", path, reg)
			return false
		}
		return true
	}
	host, ns, _ := strings.Cut(reg, "/")
	if _, err := registry.ParseReference(reg + "/x"); err != nil || host == "" || strings.Contains(ns, ":") || strings.Contains(ns, "@") {
		r.Errorf(n, diag.InvalidValue, "write REGISTRY[/NAMESPACE], such as registry.example/team", "%s %q is not a registry namespace", path, reg)
		return false
	}
	return true
}
