package e2e

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/inputfile"
	"github.com/inrun/inrun/internal/match"
	"github.com/inrun/inrun/internal/yamlpos"
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
	// Gateway, when set, runs the intent gateway for the run, for the
	// cases' requests.
	Gateway *Gateway
	Cases   []Case

	// kinds are every apiVersion and kind the file uses, for Check.
	kinds []kindUse
	// reconcilerPos is where the reconciler block is.
	reconcilerPos ir.Pos
	// gatewayPos is where the gateway block is.
	gatewayPos ir.Pos
}

// Gateway is the gateway block: the intent gateway (inrun serve) runs in
// the process for the run, and the tokens it names are made for the run
// and revoked after it.
type Gateway struct {
	// Tokens are the run's tokens by name, each with its scopes. A
	// request names one.
	Tokens map[string][]string
}

// Request is an HTTP request to the gateway.
type Request struct {
	// Method is GET, POST, PUT or DELETE.
	Method string
	// Path is the path and query, such as /v1/intents?wait=60s.
	Path string
	// Token names a token of the gateway block; empty sends none.
	Token string
	// Body is sent as JSON; nil sends none. BodyText is sent as it is
	// instead, for bodies that are not JSON.
	Body     any
	BodyText *string
	// Headers are added to the request.
	Headers map[string]string
}

// Response is what a request's answer must be: its status, and a partial
// match on its JSON body.
type Response struct {
	Status int
	Body   any
}

// Case is one scenario, run in a namespace of its own.
type Case struct {
	Name string
	// CRFile is the cr: field as written; empty for an inline object.
	CRFile string
	// CR is the custom resource, read from CRFile or given inline; nil for
	// a case whose requests to the gateway make it.
	CR *unstructured.Unstructured
	// Objects are created before the CR.
	Objects []*unstructured.Unstructured
	Steps   []Step
	// Pos is where the case starts in the file.
	Pos ir.Pos

	namePos ir.Pos
	// crPos is where the CR is given: its cr: field, or its object.
	crPos ir.Pos
	// crYAML is the CR's YAML, in crFile (the CR's file, or this file
	// for an inline object), for positions.
	crYAML *yaml.Node
	crFile string
}

// Step is an optional action on the CR followed by expectations, polled
// until they hold or the step's timeout runs out.
type Step struct {
	// Request is sent to the gateway; nil for none. A GET is sent again
	// at each poll until the expectations hold; other methods once.
	Request *Request
	// Patch is a JSON merge patch applied to the CR; nil for none.
	Patch map[string]any
	// Delete deletes the CR.
	Delete bool
	// Migrate runs inrun migrate apply, rollback or clean; nil for none.
	Migrate *Migrate
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
	case s.Request != nil:
		return "request " + s.Request.Method + " " + s.Request.Path
	case s.Migrate != nil:
		return "migrate " + s.Migrate.Run
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
	// Response is what the step's request must be answered; nil checks
	// nothing.
	Response *Response
	// Refused expects the API server to refuse the step's patch or, in a
	// first step without an action, the case's CR, with a message holding
	// each of these substrings.
	Refused []string

	// statusPos is where each field of Status is written, by its path.
	statusPos map[string]ir.Pos
}

// Empty reports whether the expectation checks nothing.
func (e *Expectation) Empty() bool {
	return len(e.Objects) == 0 && len(e.Absent) == 0 && e.Status == nil && e.Response == nil && len(e.Refused) == 0
}

// RefusesCR reports whether the case's first step expects its CR to be
// refused: the case then has that step only.
func (c *Case) RefusesCR() bool {
	return len(c.Steps) > 0 && len(c.Steps[0].Expect.Refused) > 0 && c.Steps[0].Action() == "expect"
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

// ReadFile reads and parses an e2e file, as Parse does.
func ReadFile(path string) (*File, error) {
	data, err := inputfile.Read(path)
	if err != nil {
		return nil, unreadable(path, err)
	}
	return Parse(path, data)
}

// Parse decodes an e2e file strictly and checks it, reporting every problem
// at once as diagnostics (package internal/diag), sorted, each with its
// file:line:col and code: unknown fields (with a suggestion), values of
// the wrong type, missing or repeated names, cases with both or neither of
// cr and object, bad durations, CR files that cannot be read. Problems of
// a case name it, or cases[i] when it has no name, and give the field's
// path within it. It does not know the cluster; Load and Run check the
// kinds.
func Parse(path string, data []byte) (*File, error) {
	var diags diag.List
	f := parse(path, data, &diags)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// Load parses the e2e file at path and checks its kinds against bp and the
// built-in kinds, reporting every problem of both at once.
func Load(path string, bp *ir.Blueprint) (*File, error) {
	data, err := inputfile.Read(path)
	if err != nil {
		return nil, unreadable(path, err)
	}
	var diags diag.List
	if f := parse(path, data, &diags); f != nil {
		diags = append(diags, f.check(bp, true)...)
		if len(diags) == 0 {
			return f, nil
		}
	}
	return nil, diags.Err()
}

// check reports what is wrong with the file's cases for bp, before any
// cluster is reached. local says the run starts its own control plane,
// which serves only the built-in kinds and bp's: the kinds named, and the
// CRs, are checked against those; an existing cluster's API server judges
// them itself.
func (f *File) check(bp *ir.Blueprint, local bool) diag.List {
	var diags diag.List
	if local {
		diags = append(diags, f.checkKinds(bp, nil, true)...)
		diags = append(diags, f.checkCRs(bp)...)
	}
	diags = append(diags, f.checkReconciler(bp)...)
	diags = append(diags, f.checkGateway(bp)...)
	diags = append(diags, f.checkStatus(bp)...)
	diags = append(diags, f.checkMigrate(bp)...)
	return diags
}

// unreadable is the one diagnostic of an e2e file that cannot be read.
func unreadable(path string, err error) error {
	hint := ""
	if errors.Is(err, os.ErrNotExist) {
		hint = "check the path, or create the file: docs/e2e.md says what goes in it (inrun init writes one in every example)"
	}
	var l diag.List
	l.Add(diag.Pos{File: path}, diag.UnreadableFile, hint, "cannot read the e2e file: %v", unwrapPathError(err))
	return l.Err()
}

// The fields of each level of the file, in the order the docs list them.
var (
	fileFields     = []string{"timeout", "reconciler", "gateway", "cases"}
	caseFields     = []string{"name", "cr", "object", "objects", "steps"}
	stepFields     = []string{"request", "patch", "delete", "migrate", "timeout", "expect"}
	expectFields   = []string{"objects", "absent", "status", "response", "refused"}
	requestFields  = []string{"method", "path", "token", "body", "bodyText", "headers"}
	responseFields = []string{"status", "body"}
	requestMethods = []string{"GET", "POST", "PUT", "DELETE"}
	refFields      = []string{"apiVersion", "kind", "name", "namespace"}
	objectFields   = append(slices.Clone(refFields), "match")
)

// parser reads the YAML node tree of an e2e file into a File, reporting
// every problem through its Reader, so that each carries its line and
// column and none stops the others from being found.
type parser struct {
	*yamlpos.Reader
	f *File
	// cse labels the case being read: its name quoted, or cases[i].
	cse string
}

// parse reads an e2e file, adding its problems to diags. It returns nil
// when the file is not a YAML mapping.
func parse(path string, data []byte, diags *diag.List) *File {
	r := yamlpos.NewReader(path, diags)
	r.What = "the e2e file"
	root := r.Parse(data, "add cases: (see docs/e2e.md)")
	if root == nil {
		return nil
	}
	top := r.Map(root, "")
	if top == nil {
		return nil
	}
	r.Only(top, fileFields...)
	p := &parser{Reader: r, f: &File{Path: path}}
	if n := top.Get("timeout"); n != nil {
		p.f.Timeout = r.Duration(n, "timeout")
	}
	if n := top.Get("reconciler"); n != nil {
		p.f.Reconciler = simulate.ReadReconciler(r, n)
		p.f.reconcilerPos = r.Pos(r.Key(n))
	}
	if n := top.Get("gateway"); n != nil {
		p.f.Gateway = p.readGateway(n)
		p.f.gatewayPos = r.Pos(r.Key(n))
	}
	casesNode := top.Get("cases")
	items := r.List(casesNode, "cases")
	if len(items) == 0 && (casesNode == nil || yamlpos.IsNull(casesNode) || casesNode.Kind == yaml.SequenceNode) {
		at := root
		if casesNode != nil {
			at = casesNode
		}
		r.Errorf(at, diag.MissingField, "add at least one under cases:", "no cases")
	}
	names := map[string]int{}
	for i, n := range items {
		if c := p.readCase(i, n, names); c != nil {
			p.f.Cases = append(p.f.Cases, *c)
		}
	}
	return p.f
}

// readCase reads cases[i]. Its problems name the case, and their paths are
// relative to it. names maps the names read so far to their index.
func (p *parser) readCase(i int, n *yaml.Node, names map[string]int) *Case {
	m := p.Map(n, fmt.Sprintf("cases[%d]", i))
	if m == nil {
		return nil
	}
	m.Path = ""
	mark := p.Mark()
	p.cse = fmt.Sprintf("cases[%d]", i)
	p.Only(m, caseFields...)
	c := &Case{Pos: p.Pos(m.Node), namePos: p.Pos(m.Node)}
	// The name labels every other problem of the case.
	if name, nn := p.Required(m, "name", "name each case; it is printed with the result"); name != "" {
		c.Name, c.namePos, p.cse = name, p.Pos(nn), strconv.Quote(name)
		if j, dup := names[name]; dup {
			p.Errorf(nn, diag.DuplicateName, "give each case its own name", "name %q is also the name of cases[%d]", name, j)
		} else {
			names[name] = i
		}
	}
	defer p.Label(mark, "case "+p.cse)

	crNode, objNode := m.Get("cr"), m.Get("object")
	switch {
	case crNode != nil && objNode != nil:
		p.Errorf(m.KeyNode("object"), diag.InvalidValue, "keep one: cr names a file, object is the CR inline", "both cr and object are set")
	case crNode == nil && objNode == nil:
		// A case whose requests make its CR through the gateway needs
		// none; readCase checks that once the steps are read.
	case crNode != nil:
		c.CRFile, _ = p.String(m, "cr", false)
		switch {
		case c.CRFile != "":
			c.CR, c.crYAML, c.crFile = p.readCR(crNode, c.CRFile)
		case yamlpos.IsNull(crNode) || crNode.ShortTag() == "!!str":
			p.Errorf(crNode, diag.MissingField, "name the CR's file, relative to this one", "cr must not be empty")
		}
	default:
		c.CR = p.object(objNode, m.KeyNode("object"), "object")
		c.crYAML, c.crFile = objNode, p.f.Path
	}
	if c.CR != nil {
		use := kindUse{pos: p.Pos(objNode), cse: p.cse, field: "object", gvk: c.CR.GroupVersionKind(), cr: true}
		if crNode != nil {
			use.pos, use.field = p.Pos(crNode), "cr"
		}
		c.crPos = p.Pos(m.KeyNode(use.field))
		p.f.kinds = append(p.f.kinds, use)
	}
	for j, on := range p.List(m.Get("objects"), "objects") {
		field := fmt.Sprintf("objects[%d]", j)
		if obj := p.object(on, on, field); obj != nil {
			c.Objects = append(c.Objects, obj)
			p.f.kinds = append(p.f.kinds, kindUse{pos: p.Pos(on), cse: p.cse, field: field, gvk: obj.GroupVersionKind()})
		}
	}
	stepsNode := m.Get("steps")
	steps := p.List(stepsNode, "steps")
	if len(steps) == 0 && (stepsNode == nil || yamlpos.IsNull(stepsNode) || stepsNode.Kind == yaml.SequenceNode) {
		at := m.Node
		if stepsNode != nil {
			at = stepsNode
		}
		p.Errorf(at, diag.MissingField, "add at least one step with an expect:", "no steps")
	}
	deletedAt := -1
	requests := false
	var needCR []int // steps that act on the case's own CR
	for j, sn := range steps {
		s := p.readStep(j, sn)
		if s == nil {
			continue
		}
		if s.Request != nil {
			requests = true
		}
		if s.Patch != nil || s.Delete || s.Expect.Status != nil {
			needCR = append(needCR, j)
		}
		if deletedAt >= 0 && (s.Patch != nil || s.Delete) {
			p.Errorf(sn, diag.InvalidValue, "move this step before the delete", "steps[%d] changes the CR, which steps[%d] deleted", j, deletedAt)
		}
		if s.Delete && s.Patch == nil && deletedAt < 0 {
			deletedAt = j
		}
		c.Steps = append(c.Steps, *s)
	}
	if c.RefusesCR() && len(steps) > 1 {
		p.Errorf(steps[1], diag.InvalidValue, "give these steps a case of their own: steps[0] expects the CR refused, so there is no CR to act on", "steps[1] follows a refused CR")
	}
	switch {
	case crNode != nil || objNode != nil:
	case c.RefusesCR():
		p.Errorf(m.Node, diag.MissingField, "add cr: or object: with the CR the API server must refuse", "steps[0] expects the CR refused, and the case has none")
	case !requests:
		p.Errorf(m.Node, diag.MissingField, "add cr: (a file, relative to this one) or object: (the CR inline), or steps that send requests to the gateway", "neither cr nor object is set")
	default:
		// The gateway makes the case's custom resources; there is no
		// one CR to patch, delete or read the status of.
		for _, j := range needCR {
			p.Errorf(steps[j], diag.MissingField, "give the case a cr: or object:, or change it through the gateway with request:", "steps[%d] patches, deletes or reads the status of the CR, and the case has none", j)
		}
	}
	return c
}

// checkReconciler reports a reconciler block the Blueprint gives nothing to
// do: without a reconcile section nothing calls it, and a process cannot
// serve an in-cluster Service without a url of its own.
func (f *File) checkReconciler(bp *ir.Blueprint) diag.List {
	if f.Reconciler == nil || bp == nil {
		return nil
	}
	var l diag.List
	if _, err := f.Reconciler.Endpoint(bp); err != nil {
		code := diag.MissingField
		if bp.Reconcile == nil || bp.Reconcile.Remote == nil {
			code = diag.InvalidValue
		}
		l.Add(f.reconcilerPos, code, "", "reconciler: %s", strings.TrimPrefix(err.Error(), "reconciler: "))
	}
	return l
}

// checkStatus reports a field of an expected status that the custom
// resource's status cannot have: expecting urll: !absent would hold
// whatever the runtime writes.
func (f *File) checkStatus(bp *ir.Blueprint) diag.List {
	if bp == nil || bp.ControllerRef() != nil {
		return nil
	}
	var l diag.List
	for _, c := range f.Cases {
		for j, st := range c.Steps {
			unknown := simulate.UnknownStatusFields(bp, st.Expect.Status)
			for _, name := range slices.Sorted(maps.Keys(unknown)) {
				l.Add(st.Expect.statusPos[name], diag.UnknownField, unknown[name], "case %q: steps[%d].expect.status.%s is no field of the %s's status", c.Name, j, name, bp.Resource.Kind)
			}
		}
	}
	return l
}

// checkCRs reports a case's CR that its CRD refuses, as the simulator's
// store would and the API server will, before a control plane starts for
// it: unless the case expects that refusal. Each problem is at its field,
// in the CR's file or in the case's object.
func (f *File) checkCRs(bp *ir.Blueprint) diag.List {
	if bp == nil || bp.Resource.Schema == nil {
		return nil
	}
	var l diag.List
	files := map[string]bool{} // a file's problems once, however many cases name it
	for _, c := range f.Cases {
		if c.CR == nil || c.crYAML == nil || c.RefusesCR() || c.CR.GroupVersionKind() != bp.Resource.GroupVersionKind {
			continue
		}
		label := fmt.Sprintf("case %q: object: ", c.Name)
		if c.CRFile != "" {
			if files[c.crFile] {
				continue
			}
			files[c.crFile], label = true, ""
		}
		r := yamlpos.NewReader(c.crFile, &l)
		simulate.CheckCR(bp, r, c.crYAML, label, " (or, to test the refusal, expect it: steps: [{expect: {refused: [...]}}])", c.CR.DeepCopy())
	}
	return l
}

// checkGateway reports a gateway block for a Blueprint that serves
// nothing: the gateway would have no target.
func (f *File) checkGateway(bp *ir.Blueprint) diag.List {
	if f.Gateway == nil || bp == nil || bp.Serve != nil {
		return nil
	}
	var l diag.List
	l.Add(f.gatewayPos, diag.InvalidValue, "add a serve: section to the Blueprint (see docs/gateway.md), or remove the gateway block", "gateway: Blueprint %s has no serve section, so the gateway has no target", bp.Name)
	return l
}

func (p *parser) readStep(j int, n *yaml.Node) *Step {
	field := fmt.Sprintf("steps[%d]", j)
	before := p.Mark()
	m := p.Map(n, field)
	if m == nil {
		return nil
	}
	p.Only(m, stepFields...)
	s := &Step{Pos: p.Pos(n)}
	if v := m.Get("request"); v != nil {
		s.Request = p.readRequest(field+".request", v)
		if m.Get("patch") != nil || m.Get("delete") != nil {
			p.Errorf(v, diag.InvalidValue, "a step does one thing: split it into two steps", "%s sends a request and changes the CR", field)
		}
	}
	if v := m.Get("patch"); v != nil {
		s.Patch = p.Object(v, field+".patch")
	}
	if v := m.Get("delete"); v != nil {
		s.Delete, _ = p.Bool(v, field+".delete")
		if s.Patch != nil && s.Delete {
			p.Errorf(v, diag.InvalidValue, "a step does one thing to the CR: split it into two steps", "%s sets both patch and delete", field)
		}
	}
	if v := m.Get("migrate"); v != nil {
		s.Migrate = p.readMigrate(field+".migrate", v)
		if m.Get("request") != nil || m.Get("patch") != nil || m.Get("delete") != nil {
			p.Errorf(v, diag.InvalidValue, "a step does one thing: split it into two steps", "%s runs a migration and does something else", field)
		}
	}
	if v := m.Get("timeout"); v != nil {
		s.Timeout = p.Duration(v, field+".timeout")
	}
	if v := m.Get("expect"); v != nil {
		s.Expect = p.readExpect(field+".expect", v)
	}
	// A step with a misspelt or invalid field does something, just not
	// what was meant; saying it does nothing would only repeat that.
	if s.Patch == nil && !s.Delete && s.Request == nil && s.Migrate == nil && s.Expect.Empty() && p.Mark() == before {
		p.Errorf(n, diag.MissingField, "give it a patch, delete: true, a request, a migrate, or an expect with objects, absent or status", "%s does nothing", field)
	}
	if len(s.Expect.Refused) > 0 {
		switch s.Action() {
		case "patch":
		case "expect":
			if j > 0 {
				p.Errorf(m.KeyNode("expect"), diag.InvalidValue, "add the patch: the API server must refuse, or move the step first to expect the case's CR refused", "%s.expect.refused: only a patch, or the case's CR in steps[0], can be refused", field)
			}
		default:
			p.Errorf(m.KeyNode("expect"), diag.InvalidValue, "give the refusal a step of its own with the patch: the API server must refuse", "%s.expect.refused: only a patch, or the case's CR in steps[0], can be refused, not a %s", field, s.Action())
		}
	}
	if s.Expect.Response != nil && s.Request == nil {
		p.Errorf(n, diag.InvalidValue, "add the request: the response is its answer", "%s expects a response and sends no request", field)
	}
	if s.Request != nil && p.f.Gateway == nil {
		p.Errorf(n, diag.MissingField, "add a gateway: block at the top of the file, with the tokens the requests use", "%s sends a request, and the file runs no gateway", field)
	} else if s.Request != nil && s.Request.Token != "" {
		if _, ok := p.f.Gateway.Tokens[s.Request.Token]; !ok {
			names := make([]string, 0, len(p.f.Gateway.Tokens))
			for k := range p.f.Gateway.Tokens {
				names = append(names, k)
			}
			slices.Sort(names)
			p.Errorf(n, diag.UnknownReference, "name one of gateway.tokens: "+strings.Join(names, ", "), "%s.request.token %q is not a token of the gateway block", field, s.Request.Token)
		}
	}
	return s
}

// readGateway reads the gateway block.
func (p *parser) readGateway(n *yaml.Node) *Gateway {
	m := p.Map(n, "gateway")
	if m == nil {
		return nil
	}
	p.Only(m, "tokens")
	g := &Gateway{Tokens: map[string][]string{}}
	tm := p.Map(m.Get("tokens"), "gateway.tokens")
	for _, name := range tm.Order {
		var scopes []string
		for i, sn := range p.List(tm.Get(name), "gateway.tokens."+name) {
			if s, ok := p.Str(sn, fmt.Sprintf("gateway.tokens.%s[%d]", name, i)); ok {
				scopes = append(scopes, s)
			}
		}
		if len(scopes) == 0 {
			p.Errorf(tm.KeyNode(name), diag.MissingField, "list the scopes the token carries, e.g. "+name+": [deploy]", "gateway.tokens.%s has no scope", name)
		}
		g.Tokens[name] = scopes
	}
	return g
}

// readRequest reads a step's request.
func (p *parser) readRequest(field string, n *yaml.Node) *Request {
	m := p.Map(n, field)
	if m == nil {
		return nil
	}
	p.Only(m, requestFields...)
	r := &Request{Method: "GET"}
	if method, mn := p.String(m, "method", false); mn != nil {
		r.Method = strings.ToUpper(method)
		if !slices.Contains(requestMethods, r.Method) {
			p.Errorf(mn, diag.InvalidValue, "use "+strings.Join(requestMethods, ", "), "%s.method %q is not a method of the gateway", field, method)
		}
	}
	path, pn := p.Required(m, "path", "give the path and query, such as /v1/intents?wait=60s")
	if path != "" && !strings.HasPrefix(path, "/") {
		p.Errorf(pn, diag.InvalidValue, "start it with /, such as /v1/targets/app/intents", "%s.path %q is not a path", field, path)
	}
	r.Path = path
	r.Token, _ = p.String(m, "token", false)
	if v := m.Get("body"); v != nil {
		r.Body, _ = p.Value(v, field+".body")
	}
	if v := m.Get("bodyText"); v != nil {
		if m.Get("body") != nil {
			p.Errorf(v, diag.InvalidValue, "keep one: body is sent as JSON, bodyText as it is", "%s has both body and bodyText", field)
		}
		if s, ok := p.Str(v, field+".bodyText"); ok {
			r.BodyText = &s
		}
	}
	if v := m.Get("headers"); v != nil {
		hm := p.Map(v, field+".headers")
		r.Headers = map[string]string{}
		for _, k := range hm.Order {
			r.Headers[k], _ = p.String(hm, k, false)
		}
	}
	return r
}

func (p *parser) readExpect(field string, n *yaml.Node) Expectation {
	// Partial matches may say !absent and !contains; nothing else may.
	p.Tags = match.Tags()
	defer func() { p.Tags = nil }()
	var e Expectation
	m := p.Map(n, field)
	if m == nil {
		return e
	}
	p.Only(m, expectFields...)
	for k, on := range p.List(m.Get("objects"), field+".objects") {
		om := p.Map(on, fmt.Sprintf("%s.objects[%d]", field, k))
		if om == nil {
			continue
		}
		p.Only(om, objectFields...)
		oe := ObjectExpectation{ObjectRef: p.ref(on, om)}
		if v := om.Get("match"); v != nil {
			oe.Match = p.Object(v, om.Path+".match")
		}
		e.Objects = append(e.Objects, oe)
		p.useKind(oe.ObjectRef, om.Path)
	}
	for k, an := range p.List(m.Get("absent"), field+".absent") {
		am := p.Map(an, fmt.Sprintf("%s.absent[%d]", field, k))
		if am == nil {
			continue
		}
		p.Only(am, refFields...)
		r := p.ref(an, am)
		e.Absent = append(e.Absent, r)
		p.useKind(r, am.Path)
	}
	if v := m.Get("status"); v != nil {
		e.Status = p.Object(v, field+".status")
		e.statusPos = map[string]ir.Pos{}
		yamlpos.Keys(v, func(key string, k *yaml.Node) { e.statusPos[key] = p.Pos(k) })
	}
	if v := m.Get("response"); v != nil {
		rm := p.Map(v, field+".response")
		if rm != nil {
			p.Only(rm, responseFields...)
			e.Response = &Response{}
			if sn := rm.Get("status"); sn != nil {
				if code, ok := p.Int(sn, field+".response.status"); ok {
					if code < 100 || code > 599 {
						p.Errorf(sn, diag.InvalidValue, "write an HTTP status, such as 201", "%s.response.status %d is not an HTTP status", field, code)
					}
					e.Response.Status = int(code)
				}
			}
			if bn := rm.Get("body"); bn != nil {
				e.Response.Body, _ = p.Value(bn, field+".response.body")
			}
		}
	}
	if v := m.Get("refused"); v != nil {
		for k, rn := range p.List(v, field+".refused") {
			if str, ok := p.Str(rn, fmt.Sprintf("%s.refused[%d]", field, k)); ok {
				e.Refused = append(e.Refused, str)
			}
		}
		switch {
		case len(e.Refused) == 0:
			p.Errorf(v, diag.MissingField, "list what the API server's message must say, e.g. [spec.replicas, greater than or equal to 0]", "%s.refused must name at least one substring", field)
		case len(m.Order) > 1:
			p.Errorf(m.KeyNode("refused"), diag.InvalidValue, "move the other expectations to a step of their own: what is refused is not stored", "%s.refused goes alone", field)
		}
	}
	return e
}

// useKind records the kind ref names, when it names one, for checkKinds.
func (p *parser) useKind(r ObjectRef, field string) {
	if r.APIVersion != "" && r.Kind != "" {
		p.f.kinds = append(p.f.kinds, kindUse{pos: r.Pos, cse: p.cse, field: field, gvk: r.GroupVersionKind()})
	}
}

// ref reads apiVersion, kind, name and namespace, all but namespace
// required.
func (p *parser) ref(n *yaml.Node, m *yamlpos.Map) ObjectRef {
	const hint = "name the object by apiVersion, kind and name (namespace defaults to the case's)"
	r := ObjectRef{Pos: p.Pos(n)}
	var vn *yaml.Node
	r.APIVersion, vn = p.Required(m, "apiVersion", hint)
	r.Kind, _ = p.Required(m, "kind", hint)
	r.Name, _ = p.Required(m, "name", hint)
	r.Namespace, _ = p.String(m, "namespace", false)
	if r.APIVersion != "" {
		if _, err := schema.ParseGroupVersion(r.APIVersion); err != nil {
			p.Errorf(vn, diag.InvalidValue, "write group/version, or v1 for the core group", "%s.apiVersion %q is not an apiVersion", m.Path, r.APIVersion)
		}
	}
	return r
}

// object reads the inline Kubernetes object at n, which needs apiVersion,
// kind and metadata.name; what it lacks is reported at at.
func (p *parser) object(n, at *yaml.Node, field string) *unstructured.Unstructured {
	m := p.Object(n, field)
	if m == nil {
		return nil
	}
	u := &unstructured.Unstructured{Object: m}
	if p.checkObject(at, field, u) {
		return u
	}
	return nil
}

// checkObject reports, at n, what u lacks to be a Kubernetes object.
func (p *parser) checkObject(n *yaml.Node, field string, u *unstructured.Unstructured) bool {
	ok := true
	for _, f := range []struct{ name, value string }{
		{"apiVersion", u.GetAPIVersion()}, {"kind", u.GetKind()}, {"metadata.name", u.GetName()},
	} {
		if f.value == "" {
			p.Errorf(n, diag.MissingField, "a Kubernetes object needs apiVersion, kind and metadata.name", "%s.%s is required", field, f.name)
			ok = false
		}
	}
	if ok {
		if _, err := schema.ParseGroupVersion(u.GetAPIVersion()); err != nil {
			p.Errorf(n, diag.InvalidValue, "write group/version, or v1 for the core group", "%s.apiVersion %q is not an apiVersion", field, u.GetAPIVersion())
			ok = false
		}
	}
	return ok
}

// readCR reads the CR file a case names at n, relative to the e2e file.
// Its problems point at n, the cr: field that names it, and say where in
// the CR file they are.
func (p *parser) readCR(n *yaml.Node, name string) (cr *unstructured.Unstructured, root *yaml.Node, path string) {
	path = name
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(p.f.Path), path)
	}
	data, err := inputfile.Read(path)
	if err != nil {
		hint := "the path is relative to the e2e file"
		if !errors.Is(err, os.ErrNotExist) {
			hint = ""
		}
		p.Errorf(n, diag.UnreadableFile, hint, "cr: cannot read %s: %v", path, unwrapPathError(err))
		return nil, nil, ""
	}
	var inner diag.List
	r := yamlpos.NewReader(path, &inner)
	r.What = "the CR file"
	root = r.Parse(data, "write the custom resource in it")
	var m map[string]any
	if root != nil {
		m = r.Object(root, "")
	}
	for _, d := range inner.Sort() {
		code := d.Code
		if root == nil || code == diag.InvalidYAML {
			code = diag.UnreadableFile
		}
		p.Errorf(n, code, d.Hint, "cr: %s: %s", d.Pos, d.Msg)
	}
	if m == nil {
		return nil, nil, ""
	}
	u := &unstructured.Unstructured{Object: m}
	if !p.checkObject(n, "cr", u) {
		return nil, nil, ""
	}
	return u, root, path
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
