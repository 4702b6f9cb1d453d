package compiler

import (
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"regexp"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// reconcile reads the reconcile section: the arguments sent to a reconciler,
// and the reconciler (url, service, api or go) with its kinds and
// credentials.
func (d *decoder) reconcile(top *yamlpos.Map) {
	n := top.Get("reconcile")
	if n == nil {
		return
	}
	o := d.Map(n, "reconcile")
	if o == nil {
		return
	}
	d.Only(o, "args", "url", "service", "go", "timeout", "resources", "tokenSecret", "caBundle", "api", "workflow")
	r := &ir.Reconcile{Pos: d.Pos(n)}
	if a := o.Get("args"); a != nil {
		if a.Kind != yaml.MappingNode {
			d.add(d.Pos(a), diag.WrongType, "", "reconcile.args must be a map, not %s", describe(a))
		} else {
			r.Args = d.value(a)
		}
	}
	u, un := d.String(o, "url", false)
	svc := o.Get("service")
	if u != "" || svc != nil {
		r.Remote = &ir.Remote{Pos: d.Pos(n)}
	}
	if u != "" {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			d.add(d.Pos(un), diag.InvalidValue, "use an absolute http:// or https:// URL", "reconcile.url %q is not an absolute http(s) URL", u)
		}
		r.Remote.URL = u
	}
	if svc != nil {
		if u != "" {
			d.add(d.Pos(svc), diag.InvalidValue, "keep one of them", "reconcile has both url and service")
		}
		so := d.Map(svc, "reconcile.service")
		d.Only(so, "name", "namespace", "port", "path")
		ref := &ir.ServiceRef{}
		ref.Name, _ = d.String(so, "name", true)
		ref.Namespace, _ = d.String(so, "namespace", false)
		ref.Path, _ = d.String(so, "path", false)
		if p := so.Get("port"); p != nil {
			v := d.value(p)
			port, ok := v.Literal.(int64)
			if v.Kind != ir.Literal || !ok || port < 1 || port > 65535 {
				d.add(v.Pos, diag.InvalidValue, "", "reconcile.service.port must be an integer from 1 to 65535")
			}
			ref.Port = int32(port)
		}
		r.Remote.Service = ref
	}
	if n := o.Get("go"); n != nil {
		if r.Remote != nil {
			d.add(d.Pos(o.KeyNode("go")), diag.InvalidValue, "keep one reconciler: go, url, service or api", "reconcile.go cannot be combined with url, service or api")
		} else {
			r.Remote = &ir.Remote{Pos: d.Pos(n)}
		}
		d.reconcileGo(n, r.Remote)
	}
	if t, tn := d.String(o, "timeout", false); t != "" {
		timeout, err := time.ParseDuration(t)
		if err != nil || timeout <= 0 {
			d.add(d.Pos(tn), diag.InvalidValue, "write a Go duration such as 10s", "reconcile.timeout %q is not a positive duration", t)
		}
		if r.Remote == nil {
			d.add(d.Pos(tn), diag.InvalidValue, "set reconcile.url or reconcile.service", "reconcile.timeout without a reconciler to call")
		} else {
			r.Remote.Timeout = timeout
		}
	}
	if n := o.Get("api"); n != nil {
		if r.Remote != nil {
			d.add(d.Pos(o.KeyNode("api")), diag.InvalidValue, "keep reconcile.api, or url/service for a reconciler that speaks Inrun's contract", "reconcile.api cannot be combined with url, service or go")
		} else {
			r.Remote = &ir.Remote{Pos: d.Pos(n)}
		}
		r.Remote.API = d.apiMapping(n)
	}
	d.remoteResources(o, r)
	d.remoteAuth(o, r)
	d.workflow(o, r)
	if r.Remote != nil && r.Remote.API != nil && r.Workflow == nil {
		for _, f := range r.Remote.API.Result.Fields {
			if f.Key != "step" {
				continue
			}
			d.add(f.KeyPos, diag.InvalidValue, "declare reconcile.workflow with its steps, or remove result.step", "reconcile.api.result.step says how a workflow step went, but the Blueprint has no reconcile.workflow")
		}
	}
	d.bp.Reconcile = r
}

// httpMethods are the methods reconcile.api may use.
var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// apiResultFields are the fields of a ReconcileResult reconcile.api.result
// may set.
var apiResultFields = []string{"status", "labels", "annotations", "resources", "conditions", "events", "requeueAfter", "done", "step"}

// apiMapping reads reconcile.api: an existing HTTP API called with a
// request built by expressions, and a Result built from its response.
func (d *decoder) apiMapping(n *yaml.Node) *ir.APIMapping {
	o := d.Map(n, "reconcile.api")
	if o == nil {
		return nil
	}
	d.Only(o, "method", "url", "headers", "body", "result", "id", "create", "adopt", "idempotencyKey", "statuses")
	m := &ir.APIMapping{Pos: d.Pos(n)}
	m.Method = d.apiMethod(o, "reconcile.api")
	if u := o.Get("url"); u == nil {
		d.add(d.Pos(n), diag.MissingField, "add the API's URL; it may hold ${...}", "reconcile.api.url is required")
	} else {
		m.URL = d.apiURL(u, "reconcile.api.url")
	}
	if h := o.Get("headers"); h != nil {
		if h.Kind != yaml.MappingNode {
			d.add(d.Pos(h), diag.WrongType, "", "reconcile.api.headers must be a map, not %s", describe(h))
		} else {
			m.Headers = d.value(h)
		}
	}
	if b := o.Get("body"); b != nil {
		m.Body = d.value(b)
	}
	if idn := o.Get("id"); idn != nil {
		io := d.Map(idn, "reconcile.api.id")
		d.Only(io, "field", "from")
		if io != nil {
			m.ID = &ir.APIID{Pos: d.Pos(idn)}
			m.ID.Field, _ = d.String(io, "field", false)
			if m.ID.Field == "" {
				m.ID.Field = "id"
			}
			if f := io.Get("from"); f != nil {
				m.ID.From = d.value(f)
			} else {
				d.add(d.Pos(idn), diag.MissingField, "say where a create's reply has the id, e.g. from: ${response.body.id}", "reconcile.api.id.from is required")
			}
		}
	}
	if cn := o.Get("create"); cn != nil {
		co := d.Map(cn, "reconcile.api.create")
		d.Only(co, "method", "url")
		if co != nil {
			m.Create = &ir.APICall{Pos: d.Pos(cn), Method: d.apiMethod(co, "reconcile.api.create")}
			if u := co.Get("url"); u != nil {
				m.Create.URL = d.apiURL(u, "reconcile.api.create.url")
			} else {
				d.add(d.Pos(cn), diag.MissingField, "add the URL records are created at, e.g. https://dns.example/records", "reconcile.api.create.url is required")
			}
		}
		if m.ID == nil {
			d.add(d.Pos(o.KeyNode("create")), diag.InvalidValue, "add reconcile.api.id: where the id the API assigns is kept and read from", "reconcile.api.create without reconcile.api.id")
		}
	} else if m.ID != nil {
		d.add(d.Pos(o.KeyNode("id")), diag.MissingField, "add create: {url: ...}, the call that creates the record while no id is known", "reconcile.api.id without reconcile.api.create")
	}
	if an := o.Get("adopt"); an != nil {
		ao := d.Map(an, "reconcile.api.adopt")
		d.Only(ao, "method", "url", "from")
		if ao != nil {
			m.Adopt = &ir.APIAdopt{APICall: ir.APICall{Pos: d.Pos(an), Method: d.apiMethod(ao, "reconcile.api.adopt")}}
			if u := ao.Get("url"); u != nil {
				m.Adopt.URL = d.apiURL(u, "reconcile.api.adopt.url")
			}
			if f := ao.Get("from"); f != nil {
				m.Adopt.From = d.value(f)
			}
		}
	}
	if key, kn := d.String(o, "idempotencyKey", false); key != "" {
		if !headerNameRE.MatchString(key) {
			d.add(d.Pos(kn), diag.InvalidValue, "name an HTTP header, such as Idempotency-Key", "reconcile.api.idempotencyKey %q is not a header name", key)
		}
		m.IdempotencyKey = key
	}
	d.apiStatuses(o, m)
	r := o.Get("result")
	if r == nil {
		d.add(d.Pos(n), diag.MissingField, "say what the response means, e.g. result: {status: {phase: ${response.body.state}}}", "reconcile.api.result is required")
		return m
	}
	ro := d.Map(r, "reconcile.api.result")
	d.Only(ro, apiResultFields...)
	m.Result = d.value(r)
	return m
}

// headerNameRE is an HTTP header name (RFC 9110 token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// statusKeyRE is a status code, or a class such as 4xx.
var statusKeyRE = regexp.MustCompile(`^[1-5]([0-9]{2}|xx)$`)

// apiStatuses reads reconcile.api.statuses: what a reply's status means.
func (d *decoder) apiStatuses(o *yamlpos.Map, m *ir.APIMapping) {
	sn := o.Get("statuses")
	if sn == nil {
		return
	}
	so := d.Map(sn, "reconcile.api.statuses")
	if so == nil {
		return
	}
	m.Statuses = map[string]ir.APIStatusAction{}
	actions := []string{string(ir.StatusResult), string(ir.StatusFail), string(ir.StatusRecreate), string(ir.StatusAdopt)}
	for _, k := range so.Order {
		kn := so.KeyNode(k)
		key := strings.ToLower(k)
		if !statusKeyRE.MatchString(key) {
			d.add(d.Pos(kn), diag.InvalidValue, "write a status code such as 404, or a class such as 4xx", "reconcile.api.statuses: %q is not an HTTP status", k)
			continue
		}
		if key[0] == '5' || key == "429" {
			d.add(d.Pos(kn), diag.InvalidValue, "leave it out: 5xx and 429 are always failures, retried with backoff", "reconcile.api.statuses.%s cannot be changed", k)
			continue
		}
		action, vn := d.String(so, k, true)
		switch ir.APIStatusAction(action) {
		case ir.StatusResult, ir.StatusFail:
		case ir.StatusRecreate, ir.StatusAdopt:
			if m.ID == nil {
				d.add(d.Pos(vn), diag.InvalidValue, "add reconcile.api.id and create: only an API that assigns ids has records to recreate or adopt", "reconcile.api.statuses.%s: %s needs reconcile.api.id", k, action)
			}
		case "":
			continue
		default:
			hint := "use " + strings.Join(actions, ", ")
			if s, ok := closest(action, actions); ok {
				hint = "did you mean " + s + "?"
			}
			d.add(d.Pos(vn), diag.InvalidValue, hint, "reconcile.api.statuses.%s: %q is not an action", k, action)
			continue
		}
		m.Statuses[key] = ir.APIStatusAction(action)
	}
}

// apiMethod reads the method field of o, checking a literal one.
func (d *decoder) apiMethod(o *yamlpos.Map, path string) *ir.Value {
	mn := o.Get("method")
	if mn == nil {
		return nil
	}
	v := d.value(mn)
	if v.Kind == ir.Literal {
		if method, _ := v.Literal.(string); !httpMethods[strings.ToUpper(method)] {
			d.add(v.Pos, diag.InvalidValue, "use GET, POST, PUT, PATCH or DELETE", "%s.method %v is not an HTTP method", path, v.Literal)
		}
	}
	return v
}

// apiURL reads a URL the mapping calls. Its scheme and host are written
// out; only the rest may vary.
func (d *decoder) apiURL(n *yaml.Node, path string) *ir.Value {
	v := d.value(n)
	lead := ""
	switch v.Kind {
	case ir.Literal:
		lead, _ = v.Literal.(string)
	case ir.Interpolation:
		lead = v.Parts[0].Text
	}
	if !strings.HasPrefix(lead, "http://") && !strings.HasPrefix(lead, "https://") {
		d.add(v.Pos, diag.InvalidValue, "start it with http:// or https:// and the host; expressions may follow", "%s must be an absolute http(s) URL", path)
	}
	return v
}

// remoteResources reads reconcile.resources: the kinds the reconciler may
// return, resolved like template kinds.
func (d *decoder) remoteResources(o *yamlpos.Map, r *ir.Reconcile) {
	n := o.Get("resources")
	if n == nil {
		return
	}
	if r.Remote == nil {
		d.add(d.Pos(n), diag.InvalidValue, "set reconcile.url or reconcile.service", "reconcile.resources without a reconciler to call")
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.add(d.Pos(n), diag.WrongType, "list the kinds, each as apiVersion and kind", "reconcile.resources must be a list, not %s", describe(n))
		return
	}
	seen := map[schema.GroupVersionKind]bool{}
	for i, item := range n.Content {
		path := "reconcile.resources[" + itoa(i) + "]"
		ro := d.Map(item, path)
		if ro == nil {
			continue
		}
		d.Only(ro, "apiVersion", "kind")
		av, avNode := d.String(ro, "apiVersion", true)
		kind, kindNode := d.String(ro, "kind", true)
		if av == "" || kind == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(av)
		if err != nil {
			d.add(d.Pos(avNode), diag.InvalidValue, "", "%s.apiVersion %q: %v", path, av, err)
			continue
		}
		rk := ir.ResourceKind{Pos: d.Pos(item), GroupVersionKind: gv.WithKind(kind)}
		k, ok := d.lookupKind(rk.GroupVersionKind)
		if !ok {
			if !d.brokenUse {
				d.add(d.Pos(kindNode), diag.UnknownKind, d.kindHint(gv.Group, kind), "%s: kind %s %s is neither built in, the Blueprint's CRD, nor a kind it uses", path, av, kind)
			}
			continue
		}
		rk.Plural, rk.Namespaced = k.plural, k.namespaced
		if seen[rk.GroupVersionKind] {
			d.add(d.Pos(item), diag.InvalidValue, "list each kind once", "%s: %s is listed twice", path, ir.FormatKind(rk.GroupVersionKind))
			continue
		}
		seen[rk.GroupVersionKind] = true
		r.Remote.Resources = append(r.Remote.Resources, rk)
	}
}

// remoteAuth reads reconcile.tokenSecret and reconcile.caBundle.
func (d *decoder) remoteAuth(o *yamlpos.Map, r *ir.Reconcile) {
	if n := o.Get("tokenSecret"); n != nil {
		so := d.Map(n, "reconcile.tokenSecret")
		d.Only(so, "name", "namespace", "key")
		ref := &ir.SecretKeyRef{}
		ref.Name, _ = d.String(so, "name", true)
		ref.Namespace, _ = d.String(so, "namespace", true)
		ref.Key, _ = d.String(so, "key", false)
		if ref.Key == "" {
			ref.Key = "token"
		}
		if r.Remote == nil {
			d.add(d.Pos(n), diag.InvalidValue, "set reconcile.url or reconcile.service", "reconcile.tokenSecret without a reconciler to call")
		} else if r.Remote.Go != nil || r.Remote.Controller != nil {
			d.add(d.Pos(n), diag.InvalidValue, "leave it out: a Go reconciler runs inside inrun and is called without HTTP", "reconcile.tokenSecret is for a reconciler over HTTP, not reconcile.go")
		} else {
			r.Remote.TokenSecret = ref
		}
	}
	if ca, n := d.String(o, "caBundle", false); ca != "" {
		block, _ := pem.Decode([]byte(ca))
		if block == nil || block.Type != "CERTIFICATE" {
			d.add(d.Pos(n), diag.InvalidValue, "paste the PEM, from -----BEGIN CERTIFICATE----- on", "reconcile.caBundle is not a PEM certificate")
		} else if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			d.add(d.Pos(n), diag.InvalidValue, "", "reconcile.caBundle: %v", err)
		}
		if r.Remote != nil && (r.Remote.Go != nil || r.Remote.Controller != nil) {
			d.add(d.Pos(n), diag.InvalidValue, "leave it out: a Go reconciler runs inside inrun and is called without HTTP", "reconcile.caBundle is for a reconciler over HTTP, not reconcile.go")
		} else if r.Remote != nil {
			r.Remote.CABundle = ca
		}
	}
}

// goRef reads a reference to Go code compiled into inrun, {KEY: NAME}:
// a what (components.Reconciler or Transform) registered under NAME.
func (d *decoder) goRef(n *yaml.Node, path, key, what string) *ir.GoRef {
	o := d.Map(n, path)
	if o == nil {
		return nil
	}
	d.Only(o, key)
	return d.goName(o, path, key, what, true)
}

// goName reads NAME at o's key: a what registered in package components.
// The name must be registered when the compilation is given the registry
// of the inrun that will run the Blueprint; else only its form is checked,
// and that inrun refuses the Blueprint if it lacks the name.
func (d *decoder) goName(o *yamlpos.Map, path, key, what string, required bool) *ir.GoRef {
	name, nn := d.String(o, key, required)
	if name == "" {
		return nil
	}
	ref := &ir.GoRef{Pos: d.Pos(nn), Name: name}
	if !components.ValidName(name) {
		d.add(ref.Pos, diag.InvalidValue, "use the name the Go module registers: lower-case letters, digits, '-' and '.', at most 63", "%s.%s %q is not a registered name's form", path, key, name)
		return ref
	}
	reg := d.session.opts.Components
	if reg == nil || reg.Has(what, name) {
		return ref
	}
	names := reg.Names(what)
	hint := didYouMean(name, names)
	if hint == "" {
		has := "none"
		if len(names) > 0 {
			has = strings.Join(names, ", ")
		}
		hint = "this inrun has " + components.Plural(what) + ": " + has + "; " + components.BuildHint
	}
	d.add(ref.Pos, diag.UnknownComponent, hint, "%s.%s: no %s %q is compiled into this inrun", path, key, what, name)
	return ref
}
