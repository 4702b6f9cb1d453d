package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/inputfile"
	"github.com/inrun/inrun/internal/match"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/sdk"
)

// The fields of each level of a simulate file, in the order the docs list
// them.
var (
	fileFields        = []string{"cases", "reconciler", "reply"}
	caseFields        = []string{"name", "cr", "object", "objects", "passes", "observe", "expect", "steps", "reply"}
	stepFields        = []string{"patch", "delete", "passes", "observe", "reply", "expect"}
	observeFields     = []string{"afterPass", "child", "status"}
	expectFields      = []string{"children", "absent", "status", "metadata", "events", "errors", "gone", "refused"}
	childExpectFields = []string{"id", "match", "items", "count"}
	reconcilerFields  = []string{"command", "url", "env", "dir", "startTimeout"}
)

// parser reads a simulate file's node tree into a File, reporting every
// problem through its Reader.
type parser struct {
	*yamlpos.Reader
	// at holds, for the case being read, where each of its references to
	// the Blueprint is, by its path in the case: checkCase reports there.
	at map[string]diag.Pos
}

func (p *parser) file(data []byte) *File {
	root := p.Parse(data, "add cases: (see docs/simulate.md)")
	if root == nil {
		return nil
	}
	top := p.Map(root, "")
	if top == nil {
		return nil
	}
	p.Only(top, fileFields...)
	f := &File{Path: p.File}
	if n := top.Get("reconciler"); n != nil {
		f.Reconciler = ReadReconciler(p.Reader, n)
	}
	if n := top.Get("reply"); n != nil {
		if f.Reply = p.reply(n, "reply"); f.Reply != nil {
			p.checkReply(n, "reply", f.Reply, false)
			f.replyNode = n
		}
	}
	if f.Reconciler != nil && f.Reply != nil {
		p.Errorf(top.KeyNode("reply"), diag.InvalidValue, "keep one: reconciler starts a process, reply is a recorded answer", "reconciler and reply are both set")
	}
	casesNode := top.Get("cases")
	items := p.List(casesNode, "cases")
	if len(items) == 0 && (casesNode == nil || yamlpos.IsNull(casesNode) || casesNode.Kind == yaml.SequenceNode) {
		at := root
		if casesNode != nil {
			at = casesNode
		}
		p.Errorf(at, diag.MissingField, "add at least one under cases:", "no cases")
	}
	names := map[string]int{}
	for i, n := range items {
		if c := p.readCase(f, i, n, names); c != nil {
			f.Cases = append(f.Cases, *c)
		}
	}
	return f
}

// readCase reads cases[i]. Its problems name the case, and their paths are
// relative to it. names maps the names read so far to their index.
func (p *parser) readCase(f *File, i int, n *yaml.Node, names map[string]int) *Case {
	m := p.Map(n, fmt.Sprintf("cases[%d]", i))
	if m == nil {
		return nil
	}
	m.Path = ""
	p.at = map[string]diag.Pos{}
	mark := p.Mark()
	label := fmt.Sprintf("cases[%d]", i)
	p.Only(m, caseFields...)
	c := &Case{pos: p.at}
	name, nameNode := p.Required(m, "name", "name each case; it is printed with its result")
	if name != "" {
		c.Name, label = name, strconv.Quote(name)
		if j, dup := names[name]; dup {
			p.Errorf(nameNode, diag.DuplicateName, "give each case its own name", "name %q is also the name of cases[%d]", name, j)
		} else {
			names[name] = i
		}
	}
	defer p.Label(mark, "case "+label)

	crNode, objNode := m.Get("cr"), m.Get("object")
	switch {
	case crNode != nil && objNode != nil:
		p.Errorf(m.KeyNode("object"), diag.InvalidValue, "keep one: cr names a file, object is the CR inline", "both cr and object are set")
	case crNode == nil && objNode == nil:
		p.Errorf(m.Node, diag.MissingField, "add cr: (a file, relative to this one) or object: (the CR inline)", "neither cr nor object is set")
	case crNode != nil:
		c.CR, _ = p.String(m, "cr", false)
		if c.CR == "" && (yamlpos.IsNull(crNode) || crNode.ShortTag() == "!!str") {
			p.Errorf(crNode, diag.MissingField, "name the CR's file, relative to this one", "cr must not be empty")
		}
	default:
		c.Object, c.objectNode = p.Object(objNode, "object"), objNode
	}
	for j, on := range p.List(m.Get("objects"), "objects") {
		if obj := p.Object(on, fmt.Sprintf("objects[%d]", j)); obj != nil {
			c.Objects = append(c.Objects, obj)
		}
	}
	c.Passes, c.Observe, c.Expect = p.phase(m, "")
	if len(c.Expect.Refused) > 0 {
		p.refusedAlone(m, "the case's CR", "passes", "observe", "reply", "steps")
	}
	if n := m.Get("reply"); n != nil {
		if c.Reply = p.reply(n, "reply"); c.Reply != nil {
			p.checkReply(n, "reply", c.Reply, false)
			c.replyNode = n
		}
	}
	replies := c.Reply != nil || f.Reply != nil
	deleted := -1
	for j, sn := range p.List(m.Get("steps"), "steps") {
		st := p.readStep(j, sn, replies)
		if st == nil {
			continue
		}
		if deleted >= 0 && (st.Patch != nil || st.Delete) {
			p.Errorf(sn, diag.InvalidValue, "move this step before the delete", "steps[%d] changes the CR, which steps[%d] deleted", j, deleted)
		}
		if st.Delete && st.Patch == nil && deleted < 0 {
			deleted = j
		}
		c.Steps = append(c.Steps, *st)
	}
	return c
}

// readStep reads steps[j] of a case; replies says whether the case has a
// recorded reply for a step's to replace.
func (p *parser) readStep(j int, n *yaml.Node, replies bool) *Step {
	field := fmt.Sprintf("steps[%d]", j)
	m := p.Map(n, field)
	if m == nil {
		return nil
	}
	p.Only(m, stepFields...)
	st := &Step{}
	if v := m.Get("patch"); v != nil {
		st.Patch = p.object(v, field+".patch")
	}
	if v := m.Get("delete"); v != nil {
		st.Delete, _ = p.Bool(v, field+".delete")
		if st.Delete && st.Patch != nil {
			p.Errorf(v, diag.InvalidValue, "a step does one thing to the CR: split it into two steps", "%s sets both patch and delete", field)
		}
	}
	if v := m.Get("reply"); v != nil {
		if st.Reply = p.reply(v, field+".reply"); st.Reply != nil {
			if replies {
				p.checkReply(v, field+".reply", st.Reply, st.Delete)
				st.replyNode = v
			} else {
				p.Errorf(m.KeyNode("reply"), diag.InvalidValue, "give the case (or the file) a reply too", "%s.reply replaces a recorded reply, but the case calls a reconciler", field)
			}
		}
	}
	st.Passes, st.Observe, st.Expect = p.phase(m, field)
	if len(st.Expect.Refused) > 0 {
		if st.Patch == nil {
			p.Errorf(m.KeyNode("expect"), diag.InvalidValue, "add the patch: the API server must refuse, or move refused to the case's expect for its CR", "%s.expect.refused: only a patch (or the case's CR) can be refused", field)
		}
		p.refusedAlone(m, field+".patch", "passes", "observe", "reply")
	}
	return st
}

// refusedAlone reports the fields of m that would run passes after
// what, which expect.refused says the API server refuses: nothing runs.
func (p *parser) refusedAlone(m *yamlpos.Map, what string, fields ...string) {
	for _, f := range fields {
		if m.Get(f) != nil {
			p.Errorf(m.KeyNode(f), diag.InvalidValue, "remove it, or give it a case or step of its own", "%s is refused (expect.refused), so no pass runs: %s has nothing to do", what, f)
		}
	}
}

// phase reads the passes, observe and expect fields of a case or a step;
// prefix is the step's path, empty for the case.
func (p *parser) phase(m *yamlpos.Map, prefix string) (passes int, observe []Observation, expect Expectation) {
	runs := DefaultPasses
	if v := m.Get("passes"); v != nil && !yamlpos.IsNull(v) {
		if i, ok := p.Int(v, yamlpos.Join(prefix, "passes")); ok {
			if i < 1 {
				p.Errorf(v, diag.InvalidValue, "leave it out for the default of 2", "%s must be at least 1", yamlpos.Join(prefix, "passes"))
			} else {
				passes, runs = int(i), int(i)
			}
		}
	}
	for k, on := range p.List(m.Get("observe"), yamlpos.Join(prefix, "observe")) {
		path := fmt.Sprintf("%s[%d]", yamlpos.Join(prefix, "observe"), k)
		om := p.Map(on, path)
		if om == nil {
			continue
		}
		p.Only(om, observeFields...)
		var o Observation
		if v := om.Get("afterPass"); v == nil || yamlpos.IsNull(v) {
			p.Errorf(on, diag.MissingField, "the pass after which the cluster reports this status", "%s.afterPass is required", path)
		} else if i, ok := p.Int(v, path+".afterPass"); ok {
			if i < 1 || i >= int64(runs) {
				p.Errorf(v, diag.InvalidValue, "a pass must follow it to see the status", "%s.afterPass must be between 1 and %d (passes-1)", path, runs-1)
			} else {
				o.AfterPass = int(i)
			}
		}
		var childNode *yaml.Node
		o.Child, childNode = p.Required(om, "child", "the id of the child whose status this is")
		p.mark(path+".child", childNode)
		if v := om.Get("status"); v != nil {
			o.Status = p.object(v, path+".status")
		}
		observe = append(observe, o)
	}
	if v := m.Get("expect"); v != nil {
		expect = p.expectation(v, yamlpos.Join(prefix, "expect"))
	}
	return passes, observe, expect
}

func (p *parser) expectation(n *yaml.Node, path string) Expectation {
	// Partial matches may say !absent and !contains; nothing else may.
	p.Tags = match.Tags()
	defer func() { p.Tags = nil }()
	var e Expectation
	p.untagged(n, path)
	m := p.Map(n, path)
	if m == nil {
		return e
	}
	p.Only(m, expectFields...)
	// Map, List and Str take no tags; they would let one pass unread.
	for _, f := range []string{"children", "absent", "errors", "gone", "refused"} {
		p.untagged(m.Get(f), path+"."+f)
	}
	for k, cn := range p.List(m.Get("children"), path+".children") {
		p.untagged(cn, fmt.Sprintf("%s.children[%d]", path, k))
		cm := p.Map(cn, fmt.Sprintf("%s.children[%d]", path, k))
		if cm == nil {
			continue
		}
		p.Only(cm, childExpectFields...)
		for _, f := range []string{"id", "count"} {
			p.untagged(cm.Get(f), cm.Path+"."+f)
		}
		var ce ChildExpectation
		var idNode *yaml.Node
		ce.ID, idNode = p.Required(cm, "id", "the id of a child in the Blueprint, or remote.<id> for one a reconciler returns")
		p.mark(cm.Path+".id", idNode)
		if v := cm.Get("match"); v != nil {
			ce.Match = p.object(v, cm.Path+".match")
		}
		if v := cm.Get("items"); v != nil {
			if items, ok := p.Value(v, cm.Path+".items"); ok {
				switch items.(type) {
				case []any, match.Contains:
					ce.Items = items
				default:
					p.Errorf(v, diag.WrongType, "a list of partial objects, or !contains [...]", "%s.items must be a list, not %s", cm.Path, yamlpos.Describe(v))
				}
			}
		}
		if v := cm.Get("count"); v != nil {
			if n, ok := p.Int(v, cm.Path+".count"); ok {
				ce.Count = &n
			}
		}
		if ce.Match != nil && (ce.Items != nil || ce.Count != nil) {
			p.Errorf(cm.KeyNode("match"), diag.InvalidValue, "match checks a child that is one object; items and count a collection", "%s: match goes with neither items nor count", cm.Path)
		}
		e.Children = append(e.Children, ce)
	}
	e.Absent = p.strings(m.Get("absent"), path+".absent")
	e.Errors = p.strings(m.Get("errors"), path+".errors")
	if v := m.Get("status"); v != nil {
		if e.Status = p.object(v, path+".status"); e.Status != nil {
			yamlpos.Keys(v, func(key string, k *yaml.Node) { p.mark(path+".status."+key, k) })
		}
	}
	if v := m.Get("metadata"); v != nil {
		e.Metadata = p.object(v, path+".metadata")
	}
	if v := m.Get("events"); v != nil {
		if events, ok := p.Value(v, path+".events"); ok {
			switch events.(type) {
			case []any, match.Contains:
				e.Events = events
			default:
				p.Errorf(v, diag.WrongType, "a list of partial Events ({type, reason, message}), or !contains [...]", "%s.events must be a list, not %s", path, yamlpos.Describe(v))
			}
		}
	}
	if v := m.Get("gone"); v != nil {
		e.Gone, _ = p.Bool(v, path+".gone")
	}
	if v := m.Get("refused"); v != nil {
		e.Refused = p.strings(v, path+".refused")
		switch {
		case len(e.Refused) == 0:
			p.Errorf(v, diag.MissingField, "list what the API server's message must say, e.g. [spec.replicas, greater than or equal to 0]", "%s.refused must name at least one substring", path)
		case len(m.Order) > 1:
			p.Errorf(m.KeyNode("refused"), diag.InvalidValue, "move the other expectations to a case or step of their own: a refused CR or patch is not stored, and no pass runs", "%s.refused goes alone", path)
		}
	}
	return e
}

// untagged reports a local tag (!absent, !contains) on n, which is not
// a partial match: a tag is for expect.status, a child's match and items.
func (p *parser) untagged(n *yaml.Node, path string) {
	if n != nil && strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		p.Errorf(n, diag.InvalidValue, "remove it: tags widen a partial match, in expect.status, metadata and events, or a child's match or items", "%s: tag %s is not allowed here", yamlpos.DisplayPath(path), n.Tag)
		n.Tag = "" // read on as written without it, reported once
	}
}

// strings reads a list of strings, marking where each is.
func (p *parser) strings(n *yaml.Node, path string) []string {
	var out []string
	for i, item := range p.List(n, path) {
		at := fmt.Sprintf("%s[%d]", path, i)
		p.untagged(item, at)
		if s, ok := p.Str(item, at); ok {
			out = append(out, s)
			p.mark(at, item)
		}
	}
	if out == nil && n != nil && n.Kind == yaml.SequenceNode {
		out = []string{}
	}
	return out
}

// mark notes where the value at path, in the case being read, is.
func (p *parser) mark(path string, n *yaml.Node) {
	if p.at != nil && n != nil {
		p.at[path] = p.Pos(n)
	}
}

// object reads a mapping of any content (a patch, a partial match, a
// reply); null is no mapping.
func (p *parser) object(n *yaml.Node, path string) map[string]any {
	if yamlpos.IsNull(n) {
		return nil
	}
	return p.Object(n, path)
}

// reply reads a recorded reply. What is read despite a problem (a key set
// twice) is checked as the runtime would check it too, so that one run
// lists every mistake of the reply.
func (p *parser) reply(n *yaml.Node, path string) map[string]any {
	if yamlpos.IsNull(n) || yamlpos.Resolve(n).Kind != yaml.MappingNode {
		return p.object(n, path)
	}
	v, _ := p.Value(n, path)
	m, _ := v.(map[string]any)
	return m
}

// checkReply reads a recorded reply as the runtime would, as the answer to
// a finalizing request or not, and reports each of its problems at the
// node its path names.
func (p *parser) checkReply(n *yaml.Node, path string, reply map[string]any, finalizing bool) {
	_, err := sdk.DecodeResult(replyBody(reply), finalizing)
	if err == nil {
		return
	}
	var list sdk.ErrorList
	if !errors.As(err, &list) {
		p.Errorf(p.Key(n), diag.InvalidValue, "", "%s: %v", path, err)
		return
	}
	for _, fe := range list {
		code := replyCode(fe.Problem)
		at := p.Key(n)
		if fe.Path != "" {
			at = yamlpos.At(n, fe.Path, code == diag.UnknownField)
		}
		field := path
		switch {
		case fe.Path == "":
		case strings.HasPrefix(fe.Path, "["):
			field += fe.Path
		default:
			field += "." + fe.Path
		}
		p.Errorf(at, code, fe.Valid, "%s %s", field, fe.Problem)
	}
}

// replyCode classifies a problem the sdk found in a reply, from the words
// it uses for each class: "is not a field of", "must be a string, not a
// number", "is required".
func replyCode(problem string) diag.Code {
	switch {
	case strings.HasPrefix(problem, "is not a field of"):
		return diag.UnknownField
	case strings.HasPrefix(problem, "must be ") && strings.Contains(problem, ", not "):
		return diag.WrongType
	case problem == "is required":
		return diag.MissingField
	}
	return diag.InvalidValue
}

// replyBody is a recorded reply as served: JSON, with apiVersion and kind
// filled in when left out.
func replyBody(reply map[string]any) []byte {
	m := make(map[string]any, len(reply)+2)
	maps.Copy(m, reply)
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = sdk.APIVersion
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = sdk.KindResult
	}
	// Values decoded from YAML always encode.
	data, _ := json.Marshal(m)
	return data
}

// ReadReconciler reads the reconciler block that test/simulate.yaml and
// test/e2e.yaml share, at n, reporting its problems through r: a command
// (required), a url, env, dir and startTimeout.
func ReadReconciler(r *yamlpos.Reader, n *yaml.Node) *Reconciler {
	m := r.Map(n, "reconciler")
	if m == nil {
		return nil
	}
	r.Only(m, reconcilerFields...)
	rec := &Reconciler{}
	const commandHint = "give the program and its arguments as a list, such as [python3, reconcilers/python/reconciler.py]"
	switch cmd := m.Get("command"); {
	case cmd == nil || yamlpos.IsNull(cmd):
		r.Errorf(m.Node, diag.MissingField, commandHint, "reconciler.command is required")
	default:
		items := r.List(cmd, "reconciler.command")
		for i, a := range items {
			s, ok := r.Str(a, fmt.Sprintf("reconciler.command[%d]", i))
			if ok && s == "" && i == 0 {
				r.Errorf(a, diag.MissingField, "name the program to run", "reconciler.command[0] must not be empty")
			}
			rec.Command = append(rec.Command, s)
		}
		if len(items) == 0 && cmd.Kind == yaml.SequenceNode {
			r.Errorf(cmd, diag.MissingField, commandHint, "reconciler.command is empty")
		}
	}
	if u, un := r.String(m, "url", false); u != "" {
		rec.URL = u
		if _, err := hostPort(u); err != nil {
			r.Errorf(un, diag.InvalidValue, "write one such as http://127.0.0.1:18088/reconcile, on the port the process listens on", "reconciler.url %q is not an absolute http:// or https:// URL", u)
		}
	}
	if v := m.Get("env"); v != nil {
		em := r.Map(v, "reconciler.env")
		for _, k := range orderOf(em) {
			val := em.Get(k)
			if val.Kind != yaml.ScalarNode || yamlpos.IsNull(val) {
				r.Errorf(val, diag.WrongType, `environment variables are text, such as PORT: "18088"`, "reconciler.env.%s must be text, not %s", k, yamlpos.Describe(val))
				continue
			}
			if rec.Env == nil {
				rec.Env = map[string]string{}
			}
			rec.Env[k] = val.Value
		}
	}
	rec.Dir, _ = r.String(m, "dir", false)
	if v := m.Get("startTimeout"); v != nil {
		if d := r.Duration(v, "reconciler.startTimeout"); d > 0 {
			rec.StartTimeout = &metav1.Duration{Duration: d}
		}
	}
	return rec
}

func orderOf(m *yamlpos.Map) []string {
	if m == nil {
		return nil
	}
	return m.Order
}

// ReadReply reads a recorded reply from a YAML or JSON file, as a simulate
// file's reply: apiVersion and kind may be left out, and it is checked as
// strictly as the runtime reads a reconciler's reply, each problem at its
// line.
func ReadReply(path string) (map[string]any, error) {
	data, err := inputfile.Read(path)
	if err != nil {
		return nil, unreadable(path, "the reply", err)
	}
	var diags diag.List
	p := &parser{Reader: yamlpos.NewReader(path, &diags)}
	p.What = "the reply"
	root := p.Parse(data, "write a ReconcileResult: status, resources, ... (see docs/reconciler-contract.md)")
	var reply map[string]any
	if root != nil {
		if reply = p.Object(root, ""); reply != nil {
			p.checkReply(root, "reply", reply, false)
		}
	}
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return reply, nil
}
