package compiler

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/ir"
)

// Options configure a compilation.
type Options struct {
	// ReadFile reads the files a Blueprint names, such as crd.file, by their
	// path joined to the Blueprint's directory. Default: os.ReadFile.
	ReadFile func(name string) ([]byte, error)
}

func (o *Options) setDefaults() {
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
}

// CompileFile reads and compiles the Blueprint at path.
func CompileFile(path string, opts Options) (*ir.Blueprint, error) {
	opts.setDefaults()
	src, err := opts.ReadFile(path)
	if err != nil {
		hint := ""
		if errors.Is(err, fs.ErrNotExist) {
			hint = "run inrun in a directory with a blueprint.yaml, pass its path, or create one with inrun init"
		}
		return nil, ErrorList{{Pos: ir.Pos{File: path}, Code: MissingField, Msg: "cannot read Blueprint: " + unwrapPathError(err), Hint: hint}}.Err()
	}
	return Compile(path, src, opts)
}

func unwrapPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Compile compiles the Blueprint source src, read from file. It returns the
// Blueprint and nil, or nil and an error holding every diagnostic.
func Compile(file string, src []byte, opts Options) (*ir.Blueprint, error) {
	opts.setDefaults()
	c := &compilation{
		file: file,
		dir:  filepath.Dir(file),
		opts: opts,
		bp:   &ir.Blueprint{File: file},
	}
	c.compile(src)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return c.bp, nil
}

// compilation is the state of one Compile call.
type compilation struct {
	file string
	dir  string
	opts Options
	errs ErrorList
	bp   *ir.Blueprint
	// lines are the source's lines, to map offsets in scalars to columns.
	lines []string

	// selfShape is the CR's shape; childShapes are by child id.
	selfShape   shape
	childShapes map[string]shape
	// where each child's template fields go, for expression result checks.
	exprShapes map[*ir.Expr]exprUse
}

// exprUse records where a whole-value expression's result lands.
type exprUse struct {
	shape shape
	path  string
}

var topLevelFields = []string{"apiVersion", "kind", "metadata", "crd", "onCreate", "onReconcile", "emit", "reconcile", "serve", "migrate", "lifecycle"}

func (c *compilation) compile(src []byte) {
	c.lines = strings.Split(string(src), "\n")
	root, ok := c.parse(src)
	if !ok {
		return
	}
	top := c.object(root, "")
	if top == nil {
		return
	}
	c.only(top, topLevelFields...)

	if v, n := c.str(top, "apiVersion", true); v != "" && v != ir.APIVersion {
		c.errs.add(c.pos(n), InvalidValue, "use apiVersion: "+ir.APIVersion, "unsupported apiVersion %q", v)
	}
	if v, n := c.str(top, "kind", true); v != "" && v != "Blueprint" {
		c.errs.add(c.pos(n), InvalidValue, "use kind: Blueprint", "kind must be Blueprint, not %q", v)
	}
	c.metadata(top)
	c.crd(top)
	c.children(top)
	c.emit(top)
	c.reconcile(top)
	c.bp.Serve = c.section(top, "serve")
	c.bp.Migrate = c.section(top, "migrate")
	c.bp.Lifecycle = c.section(top, "lifecycle")

	c.checkTemplates()
	c.checkExpressions()
	c.order()
}

// parse decodes src into one YAML document node.
func (c *compilation) parse(src []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			c.errs.add(ir.Pos{File: c.file, Line: 1, Col: 1}, MissingField, "start with apiVersion: "+ir.APIVersion, "the Blueprint is empty")
			return nil, false
		}
		c.errs.add(yamlErrorPos(c.file, err), InvalidYAML, "", "%s", yamlErrorMsg(err))
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		c.errs.add(ir.Pos{File: c.file, Line: extra.Line, Col: extra.Column}, InvalidYAML, "put one Blueprint in each file", "a Blueprint file holds one YAML document")
	}
	// Decoding applies yaml's limit on alias expansion, which walking the
	// node tree, as value does, would not.
	var probe any
	if err := doc.Decode(&probe); err != nil && strings.Contains(err.Error(), "excessive aliasing") {
		c.errs.add(ir.Pos{File: c.file, Line: 1, Col: 1}, InvalidYAML, "write the repeated parts out, or alias less", "invalid YAML: document contains excessive aliasing")
		return nil, false
	}
	if len(doc.Content) == 0 {
		c.errs.add(ir.Pos{File: c.file, Line: 1, Col: 1}, MissingField, "start with apiVersion: "+ir.APIVersion, "the Blueprint is empty")
		return nil, false
	}
	return doc.Content[0], true
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

func yamlErrorPos(file string, err error) ir.Pos {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return ir.Pos{File: file}
	}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line := 0
		for _, d := range m[1] {
			line = line*10 + int(d-'0')
		}
		// yaml prints a parser error's line 0-based, a scanner error's 1-based.
		if yamlParserProblemRE.MatchString(err.Error()[len(m[0]):]) {
			line++
		}
		return ir.Pos{File: file, Line: line, Col: 1}
	}
	return ir.Pos{File: file}
}

// yamlParserProblemRE matches the problems yaml's parser (not its scanner)
// reports, from go.yaml.in/yaml/v3's parserc.go.
var yamlParserProblemRE = regexp.MustCompile(`^(did not find expected (key|node content|'-' indicator|',' or '[\]}]'|<document start>)|found (undefined tag handle|duplicate %(YAML|TAG) directive|incompatible YAML document))$`)

func yamlErrorMsg(err error) string {
	return "invalid YAML: " + strings.TrimPrefix(yamlLineRE.ReplaceAllString(err.Error(), ""), "yaml: ")
}

func (c *compilation) metadata(top *object) {
	n := top.get("metadata")
	if n == nil {
		c.errs.add(c.pos(top.node), MissingField, "add metadata.name", "metadata.name is required")
		return
	}
	md := c.object(n, "metadata")
	c.only(md, "name", "labels", "annotations")
	name, nn := c.str(md, "name", true)
	if name != "" {
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			c.errs.add(c.pos(nn), InvalidValue, "use lower-case letters, digits and '-'", "metadata.name %q is not a DNS-1123 label: %s", name, strings.Join(msgs, "; "))
		}
	}
	c.bp.Name = name
}

var idRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// celReserved are identifiers CEL reserves; a child id must not be one.
var celReserved = map[string]bool{
	"in": true, "as": true, "break": true, "const": true, "continue": true, "else": true,
	"for": true, "function": true, "if": true, "import": true, "let": true, "loop": true,
	"package": true, "namespace": true, "return": true, "var": true, "void": true,
	"true": true, "false": true, "null": true, "while": true,
}

func (c *compilation) children(top *object) {
	seen := map[string]ir.Pos{}
	for _, phase := range []ir.Phase{ir.OnCreate, ir.OnReconcile} {
		n := top.get(string(phase))
		if n == nil || n.ShortTag() == "!!null" {
			continue
		}
		if n.Kind != yaml.SequenceNode {
			c.errs.add(c.pos(n), WrongType, "write a list of children, each starting with - id:", "%s must be a list, not %s", phase, describe(n))
			continue
		}
		for i, item := range n.Content {
			child := c.child(item, phase, i)
			if child == nil || child.ID == "" {
				continue
			}
			if first, dup := seen[child.ID]; dup {
				c.errs.add(child.Pos, DuplicateID, "give each child its own id", "duplicate id %q, first used at %s", child.ID, first)
				continue
			}
			seen[child.ID] = child.Pos
			c.bp.Children = append(c.bp.Children, child)
		}
	}
}

func (c *compilation) child(n *yaml.Node, phase ir.Phase, index int) *ir.Child {
	path := string(phase) + "[" + itoa(index) + "]"
	o := c.object(n, path)
	if o == nil {
		return nil
	}
	c.only(o, "id", "template", "externalRef", "includeWhen", "readyWhen")
	child := &ir.Child{Phase: phase, Pos: c.pos(n)}
	id, idNode := c.str(o, "id", true)
	if id != "" {
		child.Pos = c.pos(idNode)
		switch {
		case id == "self":
			c.errs.add(child.Pos, InvalidID, "choose another id", "id %q is reserved for the custom resource", id)
		case !idRE.MatchString(id):
			c.errs.add(child.Pos, InvalidID, "use a lower-camel-case identifier such as "+suggestID(id), "id %q is not an identifier expressions can use", id)
		case celReserved[id]:
			c.errs.add(child.Pos, InvalidID, "choose another id", "id %q is a reserved word in CEL", id)
		default:
			child.ID = id
		}
	}
	path = string(phase) + "[" + orIndex(id, index) + "]"

	tmpl, ref := o.get("template"), o.get("externalRef")
	switch {
	case tmpl != nil && ref != nil:
		c.errs.add(c.pos(o.keys["externalRef"]), InvalidValue, "keep one: a template to apply, or an externalRef to read", "a child has either template or externalRef, not both")
	case tmpl == nil && ref == nil:
		c.errs.add(c.pos(n), MissingField, "add template: with the object to apply", "%s.template is required", path)
		return child
	case ref != nil:
		child.External = true
		tmpl = ref
	}
	if child.External && phase == ir.OnCreate {
		c.errs.add(c.pos(o.keys["externalRef"]), InvalidValue, "move it to onReconcile", "an externalRef is read on every reconcile; it cannot be onCreate")
	}
	field := "template"
	if child.External {
		field = "externalRef"
	}
	child.Template = c.value(tmpl)
	c.resolveKind(child, join(path, field))

	for _, f := range []struct {
		key string
		dst **ir.Expr
	}{{"includeWhen", &child.IncludeWhen}, {"readyWhen", &child.ReadyWhen}} {
		v := o.get(f.key)
		if v == nil {
			continue
		}
		val := c.value(v)
		if val.Kind != ir.Expression {
			c.errs.add(val.Pos, WrongType, "write ${...} around a boolean expression", "%s.%s must be one ${...} expression", path, f.key)
			continue
		}
		*f.dst = val.Expr
	}
	if child.External && child.ReadyWhen != nil {
		c.errs.add(child.ReadyWhen.Pos, InvalidValue, "remove readyWhen", "an externalRef has no readiness")
	}
	return child
}

func suggestID(id string) string {
	var b strings.Builder
	up := false
	for _, r := range id {
		switch {
		case r == '-' || r == '_' || r == '.' || r == ' ':
			up = b.Len() > 0
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		case b.Len() == 0:
			b.WriteString(strings.ToLower(string(r)))
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 || !idRE.MatchString(b.String()) {
		return "deployment"
	}
	return b.String()
}

func orIndex(id string, i int) string {
	if id != "" {
		return id
	}
	return itoa(i)
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// resolveKind reads apiVersion and kind from a child's template and finds
// out whether the kind is built in or the Blueprint's own CRD.
func (c *compilation) resolveKind(child *ir.Child, path string) {
	t := child.Template
	if t.Kind != ir.Map {
		c.errs.add(t.Pos, WrongType, "", "%s must be a map", path)
		return
	}
	av, kind := t.Lookup("apiVersion"), t.Lookup("kind")
	avs, ok1 := literalString(av)
	ks, ok2 := literalString(kind)
	if av == nil {
		c.errs.add(t.Pos, MissingField, "add apiVersion, e.g. apps/v1", "%s.apiVersion is required", path)
	} else if !ok1 {
		c.errs.add(av.Pos, InvalidValue, "write the apiVersion literally; RBAC and watches are derived from it", "%s.apiVersion must be a literal string", path)
	}
	if kind == nil {
		c.errs.add(t.Pos, MissingField, "add kind, e.g. Deployment", "%s.kind is required", path)
	} else if !ok2 {
		c.errs.add(kind.Pos, InvalidValue, "write the kind literally; RBAC and watches are derived from it", "%s.kind must be a literal string", path)
	}
	md := t.Lookup("metadata")
	if md == nil || md.Lookup("name") == nil {
		c.errs.add(t.Pos, MissingField, "add metadata.name, e.g. ${self.metadata.name}", "%s.metadata.name is required", path)
	}
	if !ok1 || !ok2 {
		return
	}
	gv, err := schema.ParseGroupVersion(avs)
	if err != nil {
		c.errs.add(av.Pos, InvalidValue, "", "%s.apiVersion %q: %v", path, avs, err)
		return
	}
	child.GroupVersionKind = gv.WithKind(ks)
	if child.GroupVersionKind == c.bp.Resource.GroupVersionKind {
		child.Plural = c.bp.Resource.Plural
		child.Namespaced = c.bp.Resource.Namespaced
		return
	}
	if b, ok := lookupBuiltin(child.GroupVersionKind); ok {
		child.BuiltIn = true
		child.Plural = b.plural
		child.Namespaced = b.namespaced
		return
	}
	c.errs.add(kind.Pos, UnknownKind, c.kindHint(ks), "%s: kind %s %s is neither built in nor the Blueprint's CRD", path, avs, ks)
}

// kindHint says what an unknown kind could have been.
func (c *compilation) kindHint(kind string) string {
	if versions := builtinVersions(kind); len(versions) > 0 {
		return "built-in " + kind + " is served as apiVersion " + strings.Join(versions, " or ")
	}
	if s, ok := closest(kind, append(builtinKindNames(), c.bp.Resource.Kind)); ok {
		return "did you mean kind " + s + "?"
	}
	return "a kind must be built into Kubernetes or be the Blueprint's CRD (" + c.bp.Resource.GroupVersionKind.String() + ")"
}

func literalString(v *ir.Value) (string, bool) {
	if v == nil || v.Kind != ir.Literal {
		return "", false
	}
	s, ok := v.Literal.(string)
	return s, ok && s != ""
}

func (c *compilation) emit(top *object) {
	n := top.get("emit")
	if n == nil {
		return
	}
	o := c.object(n, "emit")
	c.only(o, "status")
	if s := o.get("status"); s != nil {
		if s.Kind != yaml.MappingNode {
			c.errs.add(c.pos(s), WrongType, "", "emit.status must be a map, not %s", describe(s))
			return
		}
		c.bp.Status = c.value(s)
		for _, f := range c.bp.Status.Fields {
			if f.Key == "conditions" || f.Key == "observedGeneration" {
				c.errs.add(f.KeyPos, InvalidValue, "choose another name", "emit.status.%s is written by the runtime", f.Key)
			}
		}
	}
}

func (c *compilation) reconcile(top *object) {
	n := top.get("reconcile")
	if n == nil {
		return
	}
	o := c.object(n, "reconcile")
	if o == nil {
		return
	}
	c.only(o, "args", "url", "service", "timeout", "resources", "tokenSecret", "caBundle", "api")
	r := &ir.Reconcile{Pos: c.pos(n)}
	if a := o.get("args"); a != nil {
		if a.Kind != yaml.MappingNode {
			c.errs.add(c.pos(a), WrongType, "", "reconcile.args must be a map, not %s", describe(a))
		} else {
			r.Args = c.value(a)
		}
	}
	u, un := c.str(o, "url", false)
	svc := o.get("service")
	if u != "" || svc != nil {
		r.Remote = &ir.Remote{Pos: c.pos(n)}
	}
	if u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			c.errs.add(c.pos(un), InvalidValue, "use an absolute http:// or https:// URL", "reconcile.url %q is not an absolute http(s) URL", u)
		}
		r.Remote.URL = u
	}
	if svc != nil {
		if u != "" {
			c.errs.add(c.pos(svc), InvalidValue, "keep one of them", "reconcile has both url and service")
		}
		so := c.object(svc, "reconcile.service")
		c.only(so, "name", "namespace", "port", "path")
		ref := &ir.ServiceRef{}
		ref.Name, _ = c.str(so, "name", true)
		ref.Namespace, _ = c.str(so, "namespace", false)
		ref.Path, _ = c.str(so, "path", false)
		if p := so.get("port"); p != nil {
			v := c.value(p)
			port, ok := v.Literal.(int64)
			if v.Kind != ir.Literal || !ok || port < 1 || port > 65535 {
				c.errs.add(v.Pos, InvalidValue, "", "reconcile.service.port must be an integer from 1 to 65535")
			}
			ref.Port = int32(port)
		}
		r.Remote.Service = ref
	}
	if t, tn := c.str(o, "timeout", false); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			c.errs.add(c.pos(tn), InvalidValue, "write a Go duration such as 10s", "reconcile.timeout %q is not a positive duration", t)
		}
		if r.Remote == nil {
			c.errs.add(c.pos(tn), InvalidValue, "set reconcile.url or reconcile.service", "reconcile.timeout without a reconciler to call")
		} else {
			r.Remote.Timeout = d
		}
	}
	if n := o.get("api"); n != nil {
		if r.Remote != nil {
			c.errs.add(c.pos(o.keys["api"]), InvalidValue, "keep reconcile.api, or url/service for a reconciler that speaks Inrun's contract", "reconcile.api cannot be combined with url or service")
		} else {
			r.Remote = &ir.Remote{Pos: c.pos(n)}
		}
		r.Remote.API = c.apiMapping(n)
	}
	c.remoteResources(o, r)
	c.remoteAuth(o, r)
	c.bp.Reconcile = r
}

// httpMethods are the methods reconcile.api may use.
var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// apiResultFields are the fields of a ReconcileResult reconcile.api.result
// may set.
var apiResultFields = []string{"status", "labels", "annotations", "resources", "conditions", "events", "requeueAfter", "done"}

// apiMapping reads reconcile.api: an existing HTTP API called with a
// request built by expressions, and a Result built from its response.
func (c *compilation) apiMapping(n *yaml.Node) *ir.APIMapping {
	o := c.object(n, "reconcile.api")
	if o == nil {
		return nil
	}
	c.only(o, "method", "url", "headers", "body", "result")
	m := &ir.APIMapping{Pos: c.pos(n)}
	if mn := o.get("method"); mn != nil {
		m.Method = c.value(mn)
		if m.Method.Kind == ir.Literal {
			if method, _ := m.Method.Literal.(string); !httpMethods[strings.ToUpper(method)] {
				c.errs.add(m.Method.Pos, InvalidValue, "use GET, POST, PUT, PATCH or DELETE", "reconcile.api.method %v is not an HTTP method", m.Method.Literal)
			}
		}
	}
	if u := o.get("url"); u == nil {
		c.errs.add(c.pos(n), MissingField, "add the API's URL; it may hold ${...}", "reconcile.api.url is required")
	} else {
		m.URL = c.value(u)
		// The scheme and host are written out; only the rest may vary.
		lead := ""
		switch m.URL.Kind {
		case ir.Literal:
			lead, _ = m.URL.Literal.(string)
		case ir.Interpolation:
			lead = m.URL.Parts[0].Text
		}
		if !strings.HasPrefix(lead, "http://") && !strings.HasPrefix(lead, "https://") {
			c.errs.add(m.URL.Pos, InvalidValue, "start it with http:// or https:// and the host; expressions may follow", "reconcile.api.url must be an absolute http(s) URL")
		}
	}
	if h := o.get("headers"); h != nil {
		if h.Kind != yaml.MappingNode {
			c.errs.add(c.pos(h), WrongType, "", "reconcile.api.headers must be a map, not %s", describe(h))
		} else {
			m.Headers = c.value(h)
		}
	}
	if b := o.get("body"); b != nil {
		m.Body = c.value(b)
	}
	r := o.get("result")
	if r == nil {
		c.errs.add(c.pos(n), MissingField, "say what the response means, e.g. result: {status: {phase: ${response.body.state}}}", "reconcile.api.result is required")
		return m
	}
	ro := c.object(r, "reconcile.api.result")
	c.only(ro, apiResultFields...)
	m.Result = c.value(r)
	return m
}

// remoteResources reads reconcile.resources: the kinds the reconciler may
// return, resolved like template kinds.
func (c *compilation) remoteResources(o *object, r *ir.Reconcile) {
	n := o.get("resources")
	if n == nil {
		return
	}
	if r.Remote == nil {
		c.errs.add(c.pos(n), InvalidValue, "set reconcile.url or reconcile.service", "reconcile.resources without a reconciler to call")
		return
	}
	if n.Kind != yaml.SequenceNode {
		c.errs.add(c.pos(n), WrongType, "list the kinds, each as apiVersion and kind", "reconcile.resources must be a list, not %s", describe(n))
		return
	}
	seen := map[schema.GroupVersionKind]bool{}
	for i, item := range n.Content {
		path := "reconcile.resources[" + itoa(i) + "]"
		ro := c.object(item, path)
		if ro == nil {
			continue
		}
		c.only(ro, "apiVersion", "kind")
		av, avNode := c.str(ro, "apiVersion", true)
		kind, kindNode := c.str(ro, "kind", true)
		if av == "" || kind == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(av)
		if err != nil {
			c.errs.add(c.pos(avNode), InvalidValue, "", "%s.apiVersion %q: %v", path, av, err)
			continue
		}
		rk := ir.ResourceKind{Pos: c.pos(item), GroupVersionKind: gv.WithKind(kind)}
		switch b, ok := lookupBuiltin(rk.GroupVersionKind); {
		case rk.GroupVersionKind == c.bp.Resource.GroupVersionKind:
			rk.Plural, rk.Namespaced = c.bp.Resource.Plural, c.bp.Resource.Namespaced
		case ok:
			rk.Plural, rk.Namespaced = b.plural, b.namespaced
		default:
			c.errs.add(c.pos(kindNode), UnknownKind, c.kindHint(kind), "%s: kind %s %s is neither built in nor the Blueprint's CRD", path, av, kind)
			continue
		}
		if seen[rk.GroupVersionKind] {
			c.errs.add(c.pos(item), InvalidValue, "list each kind once", "%s: %s is listed twice", path, rk.GroupVersionKind)
			continue
		}
		seen[rk.GroupVersionKind] = true
		r.Remote.Resources = append(r.Remote.Resources, rk)
	}
}

// remoteAuth reads reconcile.tokenSecret and reconcile.caBundle.
func (c *compilation) remoteAuth(o *object, r *ir.Reconcile) {
	if n := o.get("tokenSecret"); n != nil {
		so := c.object(n, "reconcile.tokenSecret")
		c.only(so, "name", "namespace", "key")
		ref := &ir.SecretKeyRef{}
		ref.Name, _ = c.str(so, "name", true)
		ref.Namespace, _ = c.str(so, "namespace", true)
		ref.Key, _ = c.str(so, "key", false)
		if ref.Key == "" {
			ref.Key = "token"
		}
		if r.Remote == nil {
			c.errs.add(c.pos(n), InvalidValue, "set reconcile.url or reconcile.service", "reconcile.tokenSecret without a reconciler to call")
		} else {
			r.Remote.TokenSecret = ref
		}
	}
	if ca, n := c.str(o, "caBundle", false); ca != "" {
		block, _ := pem.Decode([]byte(ca))
		if block == nil || block.Type != "CERTIFICATE" {
			c.errs.add(c.pos(n), InvalidValue, "paste the PEM, from -----BEGIN CERTIFICATE----- on", "reconcile.caBundle is not a PEM certificate")
		} else if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			c.errs.add(c.pos(n), InvalidValue, "", "reconcile.caBundle: %v", err)
		}
		if r.Remote != nil {
			r.Remote.CABundle = ca
		}
	}
}

func (c *compilation) section(top *object, key string) *ir.Section {
	n := top.get(key)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		c.errs.add(c.pos(n), WrongType, "", "%s must be a map, not %s", key, describe(n))
		return nil
	}
	raw := map[string]any{}
	if err := n.Decode(&raw); err != nil {
		c.errs.add(c.pos(n), InvalidYAML, "", "%s: %v", key, err)
		return nil
	}
	return &ir.Section{Pos: c.pos(n), Raw: raw}
}
