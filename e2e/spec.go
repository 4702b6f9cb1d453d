package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/simulate"
)

// DefaultTimeout is how long a step's expectations may take to hold when
// neither the step nor the file says.
const DefaultTimeout = 60 * time.Second

// File is a test/e2e.yaml: cases run against one Blueprint on a real API
// server. The format is documented in docs/e2e.md.
type File struct {
	// Path is where the file was read from; cr: paths are relative to it.
	Path string
	// Timeout is the file's default wait per step; zero when not set.
	Timeout time.Duration
	// Reconciler is a reconciler process started for the run, whose URL
	// replaces the Blueprint's reconcile.url; nil when the runtime calls the
	// reconciler the Blueprint names.
	Reconciler *simulate.Reconciler
	Cases      []Case

	// kinds are every apiVersion and kind the file uses, for Check.
	kinds []kindUse
	// reconcilerPos is where the reconciler block is.
	reconcilerPos ir.Pos
}

// Case is one scenario, run in a namespace of its own.
type Case struct {
	Name string
	// CRFile is the cr: field as written; empty for an inline object.
	CRFile string
	// CR is the custom resource, read from CRFile or given inline.
	CR *unstructured.Unstructured
	// Objects are created before the CR.
	Objects []*unstructured.Unstructured
	Steps   []Step
	// Pos is where the case starts in the file.
	Pos ir.Pos

	namePos ir.Pos
}

// Step is an optional action on the CR followed by expectations, polled
// until they hold or the step's timeout runs out.
type Step struct {
	// Patch is a JSON merge patch applied to the CR; nil for none.
	Patch map[string]any
	// Delete deletes the CR.
	Delete bool
	// Timeout is the step's own wait; zero when not set.
	Timeout time.Duration
	Expect  Expectation
	Pos     ir.Pos
}

// Action names what the step does before it waits: "patch", "delete" or
// "expect" for a step that only waits.
func (s *Step) Action() string {
	switch {
	case s.Delete:
		return "delete"
	case s.Patch != nil:
		return "patch"
	}
	return "expect"
}

// Expectation is what must hold at the end of a step. Every part is a
// partial match: only the fields it names are compared.
type Expectation struct {
	Objects []ObjectExpectation
	Absent  []ObjectRef
	// Status is a partial match on the CR's .status; nil checks nothing.
	Status map[string]any
}

// Empty reports whether the expectation checks nothing.
func (e *Expectation) Empty() bool {
	return len(e.Objects) == 0 && len(e.Absent) == 0 && e.Status == nil
}

// ObjectRef names one object. An empty Namespace means the case's
// namespace for a namespaced kind.
type ObjectRef struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	Pos        ir.Pos
}

// GroupVersionKind returns the kind the reference names.
func (r ObjectRef) GroupVersionKind() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
}

// ObjectExpectation is an object that must exist and match.
type ObjectExpectation struct {
	ObjectRef
	// Match is a partial match on the whole object; nil checks existence
	// only.
	Match map[string]any
}

// kindUse is one place the file names an apiVersion and kind.
type kindUse struct {
	pos   ir.Pos
	cse   string
	field string
	gvk   schema.GroupVersionKind
	// cr marks the case's custom resource, which must be the Blueprint's
	// kind.
	cr bool
}

// ReadFile reads and parses an e2e file.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes an e2e file strictly and checks it, reporting every problem
// at once as an ErrorList: unknown fields (with a suggestion), values of
// the wrong type, missing names, cases with both or neither of cr and
// object, bad durations, CR files that cannot be read. It does not know
// the cluster; Check does the kinds.
func Parse(path string, data []byte) (*File, error) {
	f, errs := parse(path, data)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// Load parses the e2e file at path and checks its kinds against bp and the
// built-in kinds, reporting every problem of both at once.
func Load(path string, bp *ir.Blueprint) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, errs := parse(path, data)
	if f != nil {
		errs = append(errs, f.checkKinds(bp, nil, true)...)
		errs = append(errs, f.checkReconciler(bp)...)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// The fields of each level of the file, in the order the docs list them.
var (
	fileFields       = []string{"timeout", "reconciler", "cases"}
	reconcilerFields = []string{"command", "url", "env", "dir", "startTimeout"}
	caseFields       = []string{"name", "cr", "object", "objects", "steps"}
	stepFields       = []string{"patch", "delete", "timeout", "expect"}
	expectFields     = []string{"objects", "absent", "status"}
	refFields        = []string{"apiVersion", "kind", "name", "namespace"}
	objectFields     = append(slices.Clone(refFields), "match")
)

// parser decodes the YAML node tree by hand, so that every problem carries
// its line and column and none stops the others from being found.
type parser struct {
	path string
	errs ErrorList
	// cse labels the case being parsed.
	cse string
	// keys maps a value node to its key node, for problems that concern a
	// field as a whole rather than its value.
	keys map[*yaml.Node]*yaml.Node
}

func parse(path string, data []byte) (*File, ErrorList) {
	p := &parser{path: path, keys: map[*yaml.Node]*yaml.Node{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrorList{{Pos: ir.Pos{File: path, Line: 1, Col: 1}, Msg: "the file is empty", Hint: "add cases: (see docs/e2e.md)"}}
		}
		return nil, ErrorList{syntaxError(path, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.errorf(&extra, "", "a second YAML document", "an e2e file is one document; drop the ---")
	}
	f := &File{Path: path}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	top := p.mapping(root, "", fileFields)
	if top == nil {
		return f, p.errs
	}
	if n := top["timeout"]; n != nil {
		f.Timeout = p.duration(n, "timeout")
	}
	if n := top["reconciler"]; n != nil {
		f.Reconciler = p.reconciler(n)
		f.reconcilerPos = p.pos(p.key(n))
	}
	casesNode := top["cases"]
	cases := p.sequence(casesNode, "cases")
	switch {
	case casesNode == nil:
		p.errorf(root, "cases", "no cases", "add at least one under cases:")
	case len(cases) == 0 && (isNull(resolve(casesNode)) || resolve(casesNode).Kind == yaml.SequenceNode):
		p.errorf(casesNode, "cases", "no cases", "add at least one under cases:")
	}
	seen := map[string]bool{}
	for i, n := range cases {
		c := p.parseCase(f, i, n)
		if c == nil {
			continue
		}
		if c.Name != "" {
			if seen[c.Name] {
				p.errs = append(p.errs, &Error{Pos: c.namePos, Case: strconv.Quote(c.Name), Field: "name", Msg: "an earlier case has the same name", Hint: "give each case its own name"})
			}
			seen[c.Name] = true
		}
		f.Cases = append(f.Cases, *c)
	}
	return f, p.errs
}

func (p *parser) parseCase(f *File, i int, n *yaml.Node) *Case {
	p.cse = fmt.Sprintf("cases[%d]", i)
	defer func() { p.cse = "" }()
	// The name labels every other problem of the case, so read it first.
	if n = resolve(n); n.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == "name" && n.Content[j+1].Kind == yaml.ScalarNode && n.Content[j+1].Value != "" {
				p.cse = strconv.Quote(n.Content[j+1].Value)
			}
		}
	}
	m := p.mapping(n, "", caseFields)
	if m == nil {
		return nil
	}
	c := &Case{Pos: p.pos(n), namePos: p.pos(n)}
	if v := m["name"]; v != nil {
		c.Name = p.str(v, "name")
		c.namePos = p.pos(v)
	}
	// A name of the wrong type has been reported already.
	if c.Name == "" && (m["name"] == nil || resolve(m["name"]).Kind == yaml.ScalarNode) {
		p.errorf(n, "name", "required", "name each case; it is printed with the result")
	}
	crNode, objNode := m["cr"], m["object"]
	switch {
	case crNode != nil && objNode != nil:
		p.errorf(p.key(objNode), "", "both cr and object are set", "keep one: cr names a file, object is the CR inline")
	case crNode == nil && objNode == nil:
		p.errorf(n, "", "neither cr nor object is set", "add cr: (a file, relative to this one) or object: (the CR inline)")
	case crNode != nil:
		c.CRFile = p.str(crNode, "cr")
		if c.CRFile != "" {
			c.CR = p.readCR(crNode, f, c.CRFile)
		} else {
			p.errorf(crNode, "cr", "empty", "name the CR's file, relative to this one")
		}
	default:
		c.CR = p.object(objNode, "object")
	}
	if c.CR != nil {
		use := kindUse{pos: p.pos(objNode), cse: p.cse, field: "object", gvk: c.CR.GroupVersionKind(), cr: true}
		if crNode != nil {
			use.pos, use.field = p.pos(crNode), "cr"
		}
		f.kinds = append(f.kinds, use)
	}
	for j, on := range p.sequence(m["objects"], "objects") {
		field := fmt.Sprintf("objects[%d]", j)
		if obj := p.object(on, field); obj != nil {
			c.Objects = append(c.Objects, obj)
			f.kinds = append(f.kinds, kindUse{pos: p.pos(on), cse: p.cse, field: field, gvk: obj.GroupVersionKind()})
		}
	}
	steps := p.sequence(m["steps"], "steps")
	if len(steps) == 0 && (m["steps"] == nil || isNull(resolve(m["steps"])) || resolve(m["steps"]).Kind == yaml.SequenceNode) {
		at := n
		if m["steps"] != nil {
			at = m["steps"]
		}
		p.errorf(at, "steps", "no steps", "add at least one step with an expect:")
	}
	deletedAt := -1
	for j, sn := range steps {
		s := p.parseStep(f, j, sn)
		if s == nil {
			continue
		}
		if deletedAt >= 0 && (s.Patch != nil || s.Delete) {
			p.errorf(sn, fmt.Sprintf("steps[%d]", j), fmt.Sprintf("steps[%d] already deleted the CR", deletedAt), "a patch or delete needs the CR; move this step before the delete")
		}
		if s.Delete && s.Patch == nil && deletedAt < 0 {
			deletedAt = j
		}
		c.Steps = append(c.Steps, *s)
	}
	return c
}

// checkReconciler reports a reconciler block the Blueprint gives nothing to
// do: without a reconcile section nothing calls it.
func (f *File) checkReconciler(bp *ir.Blueprint) ErrorList {
	if f.Reconciler == nil || bp == nil {
		return nil
	}
	if _, err := f.Reconciler.Endpoint(bp); err != nil {
		return ErrorList{{Pos: f.reconcilerPos, Field: "reconciler", Msg: err.Error()}}
	}
	return nil
}

// reconciler reads the reconciler block: a process to start for the run.
func (p *parser) reconciler(n *yaml.Node) *simulate.Reconciler {
	m := p.mapping(n, "reconciler", reconcilerFields)
	if m == nil {
		return nil
	}
	r := &simulate.Reconciler{}
	switch cmd := m["command"]; {
	case cmd == nil:
		p.errorf(n, "reconciler.command", "required", "the program and its arguments as a list, such as [python3, reconcilers/python/reconciler.py]")
	default:
		for i, a := range p.sequence(cmd, "reconciler.command") {
			r.Command = append(r.Command, p.str(a, fmt.Sprintf("reconciler.command[%d]", i)))
		}
		if c := resolve(cmd); len(r.Command) == 0 && (c.Kind == yaml.SequenceNode || isNull(c)) {
			p.errorf(cmd, "reconciler.command", "empty", "the program and its arguments as a list, such as [python3, reconcilers/python/reconciler.py]")
		}
	}
	if v := m["url"]; v != nil {
		r.URL = p.str(v, "reconciler.url")
		if r.URL != "" {
			if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.errorf(v, "reconciler.url", fmt.Sprintf("%q is not an absolute http:// or https:// URL", r.URL), "write one such as http://127.0.0.1:18089/reconcile, on the port the process listens on")
			}
		}
	}
	if v := m["env"]; v != nil {
		em := p.freeMap(v, "reconciler.env")
		ev := resolve(v)
		for i := 0; em != nil && i+1 < len(ev.Content); i += 2 {
			k, val := ev.Content[i].Value, resolve(ev.Content[i+1])
			if val.Kind != yaml.ScalarNode || isNull(val) {
				p.errorf(val, "reconciler.env."+k, "expected a value, got "+describe(val), "environment variables are text, such as PORT: \"18089\"")
				continue
			}
			if r.Env == nil {
				r.Env = map[string]string{}
			}
			r.Env[k] = val.Value
		}
	}
	if v := m["dir"]; v != nil {
		r.Dir = p.str(v, "reconciler.dir")
	}
	if v := m["startTimeout"]; v != nil {
		if d := p.duration(v, "reconciler.startTimeout"); d > 0 {
			r.StartTimeout = &metav1.Duration{Duration: d}
		}
	}
	return r
}

func (p *parser) parseStep(f *File, j int, n *yaml.Node) *Step {
	field := fmt.Sprintf("steps[%d]", j)
	before := len(p.errs)
	m := p.mapping(n, field, stepFields)
	if m == nil {
		return nil
	}
	s := &Step{Pos: p.pos(n)}
	if v := m["patch"]; v != nil {
		s.Patch = p.freeMap(v, field+".patch")
	}
	if v := m["delete"]; v != nil {
		s.Delete = p.boolean(v, field+".delete")
	}
	if s.Patch != nil && s.Delete {
		p.errorf(m["delete"], field, "both patch and delete are set", "a step does one thing to the CR; split it into two steps")
	}
	if v := m["timeout"]; v != nil {
		s.Timeout = p.duration(v, field+".timeout")
	}
	if v := m["expect"]; v != nil {
		s.Expect = p.parseExpect(f, field+".expect", v)
	}
	// A step with a misspelt or invalid field does something, just not
	// what was meant; saying it does nothing would only repeat that.
	if s.Patch == nil && !s.Delete && s.Expect.Empty() && len(p.errs) == before {
		p.errorf(n, field, "the step does nothing", "give it a patch, delete: true, or an expect with objects, absent or status")
	}
	return s
}

func (p *parser) parseExpect(f *File, field string, n *yaml.Node) Expectation {
	var e Expectation
	m := p.mapping(n, field, expectFields)
	if m == nil {
		return e
	}
	for k, on := range p.sequence(m["objects"], field+".objects") {
		of := fmt.Sprintf("%s.objects[%d]", field, k)
		om := p.mapping(on, of, objectFields)
		if om == nil {
			continue
		}
		oe := ObjectExpectation{ObjectRef: p.ref(on, om, of)}
		if v := om["match"]; v != nil {
			oe.Match = p.freeMap(v, of+".match")
		}
		e.Objects = append(e.Objects, oe)
		f.useKind(oe.ObjectRef, p.cse, of)
	}
	for k, an := range p.sequence(m["absent"], field+".absent") {
		af := fmt.Sprintf("%s.absent[%d]", field, k)
		am := p.mapping(an, af, refFields)
		if am == nil {
			continue
		}
		r := p.ref(an, am, af)
		e.Absent = append(e.Absent, r)
		f.useKind(r, p.cse, af)
	}
	if v := m["status"]; v != nil {
		e.Status = p.freeMap(v, field+".status")
	}
	return e
}

// useKind records the kind ref names, when it names one, for checkKinds.
func (f *File) useKind(r ObjectRef, cse, field string) {
	if r.APIVersion != "" && r.Kind != "" {
		f.kinds = append(f.kinds, kindUse{pos: r.Pos, cse: cse, field: field, gvk: r.GroupVersionKind()})
	}
}

// ref reads apiVersion, kind, name and namespace, all but namespace
// required.
func (p *parser) ref(n *yaml.Node, m map[string]*yaml.Node, field string) ObjectRef {
	r := ObjectRef{Pos: p.pos(n)}
	for _, f := range []struct {
		key  string
		into *string
	}{{"apiVersion", &r.APIVersion}, {"kind", &r.Kind}, {"name", &r.Name}, {"namespace", &r.Namespace}} {
		if v := m[f.key]; v != nil {
			*f.into = p.str(v, field+"."+f.key)
		}
		if *f.into == "" && f.key != "namespace" {
			p.errorf(n, field+"."+f.key, "required", "name the object by apiVersion, kind and name (namespace defaults to the case's)")
		}
	}
	if r.APIVersion != "" {
		if _, err := schema.ParseGroupVersion(r.APIVersion); err != nil {
			p.errorf(m["apiVersion"], field+".apiVersion", fmt.Sprintf("%q is not an apiVersion", r.APIVersion), "write group/version, or v1 for the core group")
		}
	}
	return r
}

// object reads an inline Kubernetes object, which needs apiVersion, kind
// and metadata.name.
func (p *parser) object(n *yaml.Node, field string) *unstructured.Unstructured {
	m := p.freeMap(n, field)
	if m == nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: m}
	if p.checkObject(p.key(n), field, u) {
		return u
	}
	return nil
}

func (p *parser) checkObject(n *yaml.Node, field string, u *unstructured.Unstructured) bool {
	ok := true
	for _, f := range []struct{ name, value string }{
		{"apiVersion", u.GetAPIVersion()}, {"kind", u.GetKind()}, {"metadata.name", u.GetName()},
	} {
		if f.value == "" {
			p.errorf(n, join(field, f.name), "required", "a Kubernetes object needs apiVersion, kind and metadata.name")
			ok = false
		}
	}
	if ok {
		if _, err := schema.ParseGroupVersion(u.GetAPIVersion()); err != nil {
			p.errorf(n, join(field, "apiVersion"), fmt.Sprintf("%q is not an apiVersion", u.GetAPIVersion()), "write group/version, or v1 for the core group")
			ok = false
		}
	}
	return ok
}

// readCR reads the CR file a case names, relative to the e2e file.
func (p *parser) readCR(n *yaml.Node, f *File, name string) *unstructured.Unstructured {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(f.Path), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		hint := "the path is relative to the e2e file"
		if !errors.Is(err, os.ErrNotExist) {
			hint = ""
		}
		p.errorf(n, "cr", fmt.Sprintf("cannot read %s: %v", path, unwrapPathError(err)), hint)
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.errorf(n, "cr", fmt.Sprintf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: ")), "")
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	// Problems inside the CR file point at the cr: field that names it.
	sub := &parser{path: p.path, cse: p.cse, keys: map[*yaml.Node]*yaml.Node{}}
	m := sub.freeMapAt(root, "cr", p.pos(n))
	p.errs = append(p.errs, sub.errs...)
	if m == nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: m}
	if !p.checkObject(n, "cr", u) {
		return nil
	}
	return u
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// mapping checks that n is a mapping whose keys are all in known, and
// returns its values by key. Unknown and repeated keys are reported. It
// returns nil when n is not a mapping.
func (p *parser) mapping(n *yaml.Node, field string, known []string) map[string]*yaml.Node {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		if isNull(n) {
			return map[string]*yaml.Node{}
		}
		p.errorf(n, field, "expected a mapping with "+strings.Join(known, ", ")+", got "+describe(n), "")
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if !slices.Contains(known, key) {
			hint := "known fields: " + strings.Join(known, ", ")
			if c, ok := closest(key, known); ok {
				hint = "did you mean " + join(field, c) + "?"
			}
			p.errorf(k, "", "unknown field "+join(field, key), hint)
			continue
		}
		if _, dup := out[key]; dup {
			p.errorf(k, join(field, key), "set twice", "keep one")
			continue
		}
		out[key] = v
		p.keys[v] = k
	}
	return out
}

// sequence returns the items of a list; a missing or null node is an empty
// list.
func (p *parser) sequence(n *yaml.Node, field string) []*yaml.Node {
	if n == nil {
		return nil
	}
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, field, "expected a list, got "+describe(n), "")
		return nil
	}
	return n.Content
}

func (p *parser) str(n *yaml.Node, field string) string {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		p.errorf(n, field, "expected a string, got "+describe(n), "")
		return ""
	}
	return n.Value
}

func (p *parser) boolean(n *yaml.Node, field string) bool {
	n = resolve(n)
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		p.errorf(n, field, "expected true or false, got "+describe(n), "")
		return false
	}
	return b
}

func (p *parser) duration(n *yaml.Node, field string) time.Duration {
	s := p.str(n, field)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		p.errorf(n, field, fmt.Sprintf("%q is not a positive duration", s), "write a Go duration such as 30s, 2m or 1m30s")
		return 0
	}
	return d
}

// freeMap reads a mapping of any content (an object, a patch, a match).
func (p *parser) freeMap(n *yaml.Node, field string) map[string]any {
	return p.freeMapAt(n, field, ir.Pos{})
}

// freeMapAt is freeMap; a valid at replaces the positions of its problems.
func (p *parser) freeMapAt(n *yaml.Node, field string, at ir.Pos) map[string]any {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		pos := p.pos(n)
		if at.IsValid() {
			pos = at
		}
		p.errs = append(p.errs, &Error{Pos: pos, Case: p.cse, Field: field, Msg: "expected a mapping, got " + describe(n)})
		return nil
	}
	v, err := value(n, field)
	if err != nil {
		pos := p.pos(err.node)
		if at.IsValid() {
			pos = at
		}
		p.errs = append(p.errs, &Error{Pos: pos, Case: p.cse, Field: err.field, Msg: err.msg})
		return nil
	}
	return v.(map[string]any)
}

type valueError struct {
	node  *yaml.Node
	field string
	msg   string
}

// value converts a node to the types JSON decoding gives, with integers as
// int64 as Kubernetes' own YAML decoding has them.
func value(n *yaml.Node, field string) (any, *valueError) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.Value == "<<" {
				return nil, &valueError{k, field, "keys must be plain strings (no merge keys or complex keys)"}
			}
			if _, dup := out[k.Value]; dup {
				return nil, &valueError{k, join(field, k.Value), "set twice"}
			}
			v, err := value(n.Content[i+1], join(field, k.Value))
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, item := range n.Content {
			v, err := value(item, fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, &valueError{n, field, err.Error()}
			}
			return b, nil
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return nil, &valueError{n, field, fmt.Sprintf("%s is not a 64-bit integer", n.Value)}
			}
			return i, nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return nil, &valueError{n, field, err.Error()}
			}
			return f, nil
		}
		return n.Value, nil
	}
	return nil, &valueError{n, field, "unsupported YAML node"}
}

func (p *parser) errorf(n *yaml.Node, field, msg, hint string) {
	p.errs = append(p.errs, &Error{Pos: p.pos(n), Case: p.cse, Field: field, Msg: msg, Hint: hint})
}

func (p *parser) pos(n *yaml.Node) ir.Pos {
	if n == nil {
		return ir.Pos{File: p.path}
	}
	return ir.Pos{File: p.path, Line: n.Line, Col: n.Column}
}

// key returns the key node of a mapping value, or the value itself.
func (p *parser) key(v *yaml.Node) *yaml.Node {
	if k, ok := p.keys[v]; ok {
		return k
	}
	return v
}

// yamlLine finds the line in a YAML syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML syntax error into an Error at its line.
func syntaxError(path string, err error) *Error {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Pos: ir.Pos{File: path}, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	line, _ := strconv.Atoi(m[1])
	// The YAML parser (not its scanner) counts the line it reports from
	// zero: its problems are the "did not find expected" key, node
	// content, indicator or bracket of a construct that starts on the
	// next line.
	if strings.HasPrefix(m[2], "did not find expected key") || strings.HasPrefix(m[2], "did not find expected node content") ||
		strings.HasPrefix(m[2], "did not find expected ','") || strings.HasPrefix(m[2], "did not find expected '-'") {
		line++
	}
	return &Error{Pos: ir.Pos{File: path, Line: line}, Msg: m[2]}
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "a YAML node of another kind"
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
