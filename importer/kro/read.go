package kro

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
)

// rgd is one ResourceGraphDefinition read and converted, waiting for the
// others of the import (see link) to be written out.
type rgd struct {
	bp *Blueprint
	// source is the base name of the file it came from.
	source  string
	kindPos diag.Pos
	// renamed is true when the Blueprint's name is not the RGD's.
	renamed bool

	metadata *yaml.Node // the Blueprint's metadata mapping
	schema   *yaml.Node // its schema mapping
	children []*child
	crds     []crdUse   // the CRDs of its children's kinds, in uses
	status   *yaml.Node // emit.status, or nil
	// comments carried from the RGD's keys to the Blueprint's.
	headComment, metadataComment, schemaComment, resourcesComment, statusComment string
}

// child is one converted resource.
type child struct {
	gvk     schema.GroupVersionKind
	kindPos diag.Pos
	node    *yaml.Node
	// path is the resource's in the RGD, spec.resources[i]; readyByKind
	// says it is a template without readyWhen, which kro calls ready
	// once it exists.
	path        string
	readyByKind bool
}

// kroSchemaFields are the fields of a ResourceGraphDefinition's
// spec.schema (validation is an older kro's), copied to a Blueprint's
// schema.
var kroSchemaFields = []string{"apiVersion", "kind", "group", "spec", "types", "status", "validation", "additionalPrinterColumns", "scope", "shortNames", "categories", "metadata"}

// reader reads the documents of one file.
type reader struct {
	*yamlpos.Reader
	base  string
	data  []byte
	lines []string
	notes *[]Note
	// crds are the CustomResourceDefinitions of the file.
	crds []*CRD
	// vars are the names the expressions of the RGD being read may read
	// besides schema: its resources' ids, each, and forEach names.
	vars map[string]bool
	// builtins are its resources of built-in kinds, by id.
	builtins map[string]schema.GroupVersionKind
}

func newReader(f File, diags *diag.List, notes *[]Note) *reader {
	r := &reader{
		Reader: yamlpos.NewReader(f.Name, diags),
		base:   path.Base(strings.ReplaceAll(f.Name, "\\", "/")),
		lines:  strings.Split(string(f.Data), "\n"),
		notes:  notes,
	}
	r.What = "the file"
	r.data = f.Data
	return r
}

func (r *reader) note(n *yaml.Node, format string, args ...any) {
	*r.notes = append(*r.notes, Note{Pos: r.Pos(n), Msg: fmt.Sprintf(format, args...)})
}

// file reads every document of the file.
func (r *reader) file() []*rgd {
	dec := yaml.NewDecoder(bytes.NewReader(r.data))
	var out []*rgd
	empty := true
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			pos, hint := yamlpos.SyntaxErrorPos(r.File, r.data, err)
			r.Diags.Add(pos, diag.InvalidYAML, hint, "%s", yamlpos.SyntaxErrorMsg(err))
			return out
		}
		if len(doc.Content) == 0 || yamlpos.IsNull(doc.Content[0]) {
			continue
		}
		empty = false
		out = append(out, r.document(doc.Content[0], doc.HeadComment)...)
	}
	if empty {
		r.Diags.Add(diag.Pos{File: r.File, Line: 1, Col: 1}, diag.MissingField, "give a file that holds a kind: ResourceGraphDefinition", "the file is empty")
	}
	return out
}

// document converts one document, root with the comment above it: a
// ResourceGraphDefinition, a CustomResourceDefinition (kept in r.crds), or
// a List of them, as kubectl get -o yaml prints several; or it reports
// what else it is.
func (r *reader) document(root *yaml.Node, head string) []*rgd {
	top := r.Map(root, "")
	if top == nil {
		return nil
	}
	apiVersion, avNode := r.String(top, "apiVersion", false)
	kind, kindNode := r.String(top, "kind", false)
	switch kind {
	case "List":
		var out []*rgd
		for _, item := range r.List(top.Get("items"), "items") {
			out = append(out, r.document(item, "")...)
		}
		return out
	case "CustomResourceDefinition":
		if apiVersion != CRDAPIVersion {
			r.Errorf(avNode, diag.InvalidValue, "give the CRD as the API server serves it: kubectl get crd NAME -o yaml", "apiVersion %q of a CustomResourceDefinition is not %s", apiVersion, CRDAPIVersion)
			return nil
		}
		if c := r.crd(root, head, top); c != nil {
			r.crds = append(r.crds, c)
		}
		return nil
	}
	if g := r.object(root, head, top, apiVersion, kind, avNode, kindNode); g != nil {
		return []*rgd{g}
	}
	return nil
}

// object converts a ResourceGraphDefinition, or reports why top is not one.
func (r *reader) object(root *yaml.Node, head string, top *yamlpos.Map, apiVersion, kind string, avNode, kindNode *yaml.Node) *rgd {
	if kind != "ResourceGraphDefinition" {
		at := kindNode
		if at == nil {
			at = root
		}
		r.Errorf(at, diag.InvalidValue, "give only ResourceGraphDefinitions, and the CustomResourceDefinitions of the kinds they create that another operator reconciles; custom resources stay as they are",
			"this document is %s, not a ResourceGraphDefinition: not converted", describeRoot(apiVersion, kind))
		return nil
	}
	if apiVersion != APIVersion {
		r.Errorf(avNode, diag.InvalidValue, "inrun import kro reads apiVersion "+APIVersion, "apiVersion %q is not kro's", apiVersion)
	}
	r.Only(top, "apiVersion", "kind", "metadata", "spec", "status")
	if k := top.KeyNode("status"); k != nil {
		r.note(k, "status is the cluster's record of the ResourceGraphDefinition, not part of it; left out")
	}

	g := &rgd{bp: &Blueprint{Pos: r.Pos(root)}, source: r.base, kindPos: r.Pos(root)}
	// Comments on what has no place of its own in a Blueprint go to the
	// top, under the line saying where it comes from.
	g.headComment = joinComments(head, root.HeadComment,
		keyComments(top, "apiVersion"), keyComments(top, "kind"), keyComments(top, "spec"))
	g.metadataComment = keyComments(top, "metadata")
	r.metadata(g, top)

	if top.Get("spec") == nil {
		r.Errorf(root, diag.MissingField, "add spec.schema and spec.resources", "spec is required")
		return g
	}
	spec := r.Map(top.Get("spec"), "spec")
	if spec == nil {
		return g
	}
	r.Only(spec, "schema", "resources")
	resources := r.List(spec.Get("resources"), "spec.resources")
	r.vars = map[string]bool{"each": true}
	r.builtins = map[string]schema.GroupVersionKind{}
	for _, res := range resources {
		if m := yamlpos.Resolve(res); m != nil && m.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(m.Content); i += 2 {
				switch k, v := m.Content[i].Value, yamlpos.Resolve(m.Content[i+1]); {
				case k == "id" && v.Kind == yaml.ScalarNode:
					r.vars[v.Value] = true
					if gvk, ok := literalKind(m); ok && builtin.Scheme.Recognizes(gvk) {
						r.builtins[v.Value] = gvk
					}
				case k == "forEach" && v.Kind == yaml.SequenceNode:
					for _, it := range v.Content {
						if it = yamlpos.Resolve(it); it.Kind == yaml.MappingNode && len(it.Content) > 0 {
							r.vars[it.Content[0].Value] = true
						}
					}
				}
			}
		}
	}
	r.schemaSection(g, spec)
	g.schemaComment = keyComments(spec, "schema")
	g.resourcesComment = keyComments(spec, "resources")
	for i, res := range resources {
		if c := r.resource(res, fmt.Sprintf("spec.resources[%d]", i)); c != nil {
			g.children = append(g.children, c)
		}
	}
	g.bp.Children = len(g.children)
	return g
}

// metadata reads the RGD's name, labels and annotations.
func (r *reader) metadata(g *rgd, top *yamlpos.Map) {
	if top.Get("metadata") == nil {
		r.Errorf(top.Node, diag.MissingField, "add metadata.name", "metadata.name is required")
		return
	}
	md := r.Map(top.Get("metadata"), "metadata")
	if md == nil {
		return
	}
	name, nameNode := r.Required(md, "name", "add metadata.name")
	g.bp.RGD = name
	g.metadata = mapping()
	if nameNode != nil {
		g.bp.Pos = r.Pos(nameNode)
	}
	for _, k := range md.Order {
		switch k {
		case "name":
		case "labels", "annotations":
			v := r.copy(md.Get(k), "metadata."+k, false)
			if k == "annotations" && v.Kind == yaml.MappingNode {
				v = r.dropLastApplied(v, md.Get(k), "ResourceGraphDefinition")
			}
			if v.Kind != yaml.MappingNode || len(v.Content) > 0 {
				g.metadata.Content = append(g.metadata.Content, r.copyKey(md.KeyNode(k)), v)
			}
		default:
			r.note(md.KeyNode(k), "metadata.%s is the cluster's record of the ResourceGraphDefinition, not part of it; left out", k)
		}
	}
}

// lastApplied is the annotation kubectl apply keeps its input in.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// dropLastApplied removes kubectl's annotation from out, a copy of src,
// the annotations of what (a ResourceGraphDefinition, a CRD).
func (r *reader) dropLastApplied(out, src *yaml.Node, what string) *yaml.Node {
	for i := 0; i+1 < len(out.Content); i += 2 {
		if out.Content[i].Value == lastApplied {
			for j := 0; j+1 < len(src.Content); j += 2 {
				if src.Content[j].Value == lastApplied {
					r.note(src.Content[j], "annotation %s is kubectl's copy of the %s; left out", lastApplied, what)
				}
			}
			out.Content = slices.Delete(out.Content, i, i+2)
			break
		}
	}
	return out
}

// schemaSection copies spec.schema to the Blueprint's schema (apiVersion,
// group, kind first; group kro.run when there is none, as kro defaults
// it, so that the CRD keeps its name) and its status to emit.status.
func (r *reader) schemaSection(g *rgd, spec *yamlpos.Map) {
	n := spec.Get("schema")
	if n == nil {
		r.Errorf(r.Key(spec.Node), diag.MissingField, "add spec.schema with apiVersion, kind and spec", "spec.schema is required")
		return
	}
	sm := r.Map(n, "spec.schema")
	if sm == nil {
		return
	}
	r.Only(sm, kroSchemaFields...)
	version, _ := r.Required(sm, "apiVersion", "add apiVersion: v1alpha1")
	kind, kindNode := r.Required(sm, "kind", "add the kind of the custom resources, such as kind: WebApp")
	group, _ := r.String(sm, "group", false)
	if kindNode != nil {
		g.kindPos = r.Pos(kindNode)
	}
	g.schema = mapping()
	add := func(k string) {
		if v := sm.Get(k); v != nil {
			g.schema.Content = append(g.schema.Content, r.copyKey(sm.KeyNode(k)), r.copy(v, "spec.schema."+k, false))
		}
	}
	add("apiVersion")
	if group == "" {
		group = DefaultGroup
		key := scalar("group")
		if k := sm.KeyNode("group"); k != nil {
			key = r.copyKey(k)
		}
		g.schema.Content = append(g.schema.Content, key, scalar(DefaultGroup))
	} else {
		add("group")
	}
	add("kind")
	for _, k := range sm.Order {
		switch {
		case k == "apiVersion" || k == "group" || k == "kind":
		case k == "status":
			g.status = r.status(sm.Get(k))
			g.statusComment = keyComments(sm, k)
		case slices.Contains(kroSchemaFields, k):
			add(k)
		}
	}
	if version != "" && kind != "" {
		g.bp.GroupVersionKind = schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
	}
}

// status converts spec.schema.status into emit.status. kro's custom
// conditions (a conditions list of runtime.newCondition) are reported:
// a Blueprint writes its own under emit.conditions, each part apart.
func (r *reader) status(n *yaml.Node) *yaml.Node {
	st := r.Map(n, "spec.schema.status")
	if st == nil || st.Node == nil {
		return nil
	}
	out := mapping()
	for _, k := range st.Order {
		if k == "conditions" {
			r.Errorf(st.KeyNode(k), diag.NotConvertible,
				"write each as an entry of the Blueprint's emit.conditions (type: AppReady, status: ${...}, reason, message); the runtime writes Ready, Progressing and Degraded itself",
				"spec.schema.status.conditions: kro's custom conditions are not converted")
			continue
		}
		out.Content = append(out.Content, r.copyKey(st.KeyNode(k)), r.copy(st.Get(k), "spec.schema.status."+k, true))
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

// resource converts one entry of spec.resources into a child: id, forEach,
// includeWhen, readyWhen, then template or externalRef.
func (r *reader) resource(n *yaml.Node, p string) *child {
	m := r.Map(n, p)
	if m == nil {
		return nil
	}
	r.Only(m, "id", "template", "externalRef", "readyWhen", "includeWhen", "forEach")
	r.Required(m, "id", "add an id that expressions name it by, such as id: deployment")
	c := &child{node: mapping(), kindPos: r.Pos(n), path: p}
	// A comment above the list item is the resource's.
	c.node.HeadComment, c.node.FootComment = n.HeadComment, n.FootComment
	// kro reads a resource into a Go struct, where null is not set: tools
	// that write RGDs from Go structs write template: null beside an
	// externalRef.
	get := func(k string) *yaml.Node {
		v := m.Get(k)
		switch {
		case yamlpos.IsNull(v):
			r.note(m.KeyNode(k), "%s.%s is null, which kro reads as not set; left out", p, k)
			return nil
		case k != "template" && k != "externalRef" && v != nil && yamlpos.Resolve(v).Kind == yaml.SequenceNode && len(yamlpos.Resolve(v).Content) == 0:
			// kro's Go struct reads an empty list as not set too.
			r.note(m.KeyNode(k), "%s.%s is an empty list, which kro reads as not set; left out", p, k)
			return nil
		}
		return v
	}
	body, bodyKey := "template", get("template")
	switch ref := get("externalRef"); {
	case bodyKey != nil && ref != nil:
		r.Errorf(m.KeyNode("externalRef"), diag.InvalidValue, "keep one: a template to create, or an externalRef to read", "%s has both template and externalRef; only the template is converted", p)
	case bodyKey == nil && ref != nil:
		body, bodyKey = "externalRef", ref
	case bodyKey == nil:
		r.Errorf(n, diag.MissingField, "add template: with the object to create, or externalRef: with the object to read", "%s has neither template nor externalRef", p)
	}
	vals := map[string]*yaml.Node{"id": m.Get("id"), body: bodyKey}
	for _, k := range []string{"forEach", "includeWhen", "readyWhen"} {
		vals[k] = get(k)
	}
	for _, k := range []string{"id", "forEach", "includeWhen", "readyWhen", body} {
		v := vals[k]
		if v == nil {
			continue
		}
		if k == "readyWhen" && body == "externalRef" && field(field(bodyKey, "metadata"), "selector") != nil {
			r.Errorf(m.KeyNode(k), diag.NotConvertible,
				"test the objects it reads in the includeWhen or readyWhen of what reads them",
				"%s.readyWhen: an externalRef by selector reads a list, which has no readiness in a Blueprint; not converted", p)
			continue
		}
		val := r.copy(v, p+"."+k, k != "id")
		switch k {
		case "externalRef":
			val = r.externalRef(v, val, p+".externalRef")
		case "template":
			r.ownerReferences(v, val, p+".template")
		}
		c.node.Content = append(c.node.Content, r.copyKey(m.KeyNode(k)), val)
	}
	if bodyKey != nil {
		r.kind(c, bodyKey)
	}
	c.readyByKind = body == "template" && bodyKey != nil && vals["readyWhen"] == nil
	return c
}

// keepReadiness gives c, a template without readyWhen, the readyWhen that
// keeps kro's meaning, ready once it exists, where the runtime would wait
// for more by the rule of its kind (rule, as the comment says it): what
// reads it, and the custom resource's Ready, would otherwise wait longer,
// or for ever on an operator that never writes a Ready condition.
func (c *child) keepReadiness(rule string, notes *[]Note) {
	if !c.readyByKind {
		return
	}
	v := scalar("${true}")
	v.LineComment = "# kro's meaning: ready once it exists; without readyWhen, Inrun waits " + rule
	at := len(c.node.Content)
	for i := 0; i+1 < len(c.node.Content); i += 2 {
		if c.node.Content[i].Value == "template" {
			at = i
		}
	}
	c.node.Content = slices.Insert(c.node.Content, at, scalar("readyWhen"), v)
	*notes = append(*notes, Note{Pos: c.kindPos, Msg: fmt.Sprintf(
		"%s has no readyWhen, which kro reads as ready once it exists; Inrun would wait %s: readyWhen: ${true} keeps kro's meaning (remove it to wait)", c.path, rule)})
}

// externalRef checks the fields of an externalRef, which has the same
// shape in a Blueprint, and returns its copy out without the unknown ones.
func (r *reader) externalRef(n, out *yaml.Node, p string) *yaml.Node {
	m := r.Map(n, p)
	r.Only(m, "apiVersion", "kind", "metadata")
	keep(out, "apiVersion", "kind", "metadata")
	if md := r.Map(m.Get("metadata"), p+".metadata"); md != nil && md.Node != nil {
		r.Only(md, "name", "namespace", "selector")
		keep(field(out, "metadata"), "name", "namespace", "selector")
		if md.Get("selector") != nil && md.Get("namespace") == nil {
			r.note(md.KeyNode("selector"), "%s.metadata has a selector and no namespace, where kro lists every namespace; a Blueprint reads the custom resource's namespace (its only one, for a namespaced custom resource): set metadata.namespace to read another", p)
		}
	}
	return out
}

// ownerReferences leaves out of out, the copy of template n, the owner
// references of its metadata. One to the instance (uid
// ${schema.metadata.uid}) is what the runtime writes itself, as the
// child's controller, where garbage collection allows it (the child in
// the custom resource's namespace, or the custom resource cluster-scoped):
// noted. One to another object is not converted: the runtime replaces a
// template's owner references, and the compiler refuses them.
func (r *reader) ownerReferences(n, out *yaml.Node, p string) {
	md, mdOut := yamlpos.Resolve(field(yamlpos.Resolve(n), "metadata")), field(out, "metadata")
	refs := yamlpos.Resolve(field(md, "ownerReferences"))
	if refs == nil || mdOut == nil {
		return
	}
	at := p + ".metadata.ownerReferences"
	if refs.Kind != yaml.SequenceNode {
		r.Errorf(refs, diag.NotConvertible, "remove it: Inrun makes the custom resource each child's owner", "%s: not converted", at)
	} else {
		for i, item := range refs.Content {
			uid := yamlpos.Resolve(field(yamlpos.Resolve(item), "uid"))
			if uid != nil && strings.ReplaceAll(uid.Value, " ", "") == "${schema.metadata.uid}" {
				r.note(item, "%s[%d] names the instance: Inrun makes the custom resource each child's controller owner itself (in its namespace, or from a cluster-scoped custom resource); left out", at, i)
				continue
			}
			r.Errorf(item, diag.NotConvertible, "remove it: Inrun makes the custom resource each child's owner, and replaces a template's owner references",
				"%s[%d] names an object other than the instance; not converted", at, i)
		}
	}
	for i := 0; i+1 < len(mdOut.Content); i += 2 {
		if mdOut.Content[i].Value == "ownerReferences" {
			mdOut.Content = slices.Delete(mdOut.Content, i, i+2)
			break
		}
	}
}

// field returns the value of key in the mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// keep removes from the mapping n every key but those given.
func keep(n *yaml.Node, keys ...string) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	var kept []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if slices.Contains(keys, n.Content[i].Value) {
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
	}
	n.Content = kept
}

// literalKind is the literal apiVersion and kind of resource m's template
// or externalRef.
func literalKind(m *yaml.Node) (schema.GroupVersionKind, bool) {
	for _, body := range []string{"template", "externalRef"} {
		if gvk, _, ok := gvkOf(field(m, body)); ok {
			return gvk, true
		}
	}
	return schema.GroupVersionKind{}, false
}

// kind reads the literal apiVersion and kind of a template or externalRef.
func (r *reader) kind(c *child, n *yaml.Node) {
	if gvk, kind, ok := gvkOf(n); ok {
		c.gvk, c.kindPos = gvk, r.Pos(kind)
	}
}

// gvkOf returns the apiVersion and kind of object n when both are
// literal, and the kind's node.
func gvkOf(n *yaml.Node) (schema.GroupVersionKind, *yaml.Node, bool) {
	n = yamlpos.Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return schema.GroupVersionKind{}, nil, false
	}
	var av, kind *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "apiVersion":
			av = yamlpos.Resolve(n.Content[i+1])
		case "kind":
			kind = yamlpos.Resolve(n.Content[i+1])
		}
	}
	if av == nil || kind == nil || av.Kind != yaml.ScalarNode || kind.Kind != yaml.ScalarNode ||
		strings.Contains(av.Value, "${") || strings.Contains(kind.Value, "${") {
		return schema.GroupVersionKind{}, nil, false
	}
	gv, err := schema.ParseGroupVersion(av.Value)
	if err != nil {
		return schema.GroupVersionKind{}, nil, false
	}
	return gv.WithKind(kind.Value), kind, true
}

// copy returns a copy of n for the Blueprint: aliases resolved, comments
// kept, a key set twice kept once. With exprs, every string is converted
// as a kro template string.
func (r *reader) copy(n *yaml.Node, p string, exprs bool) *yaml.Node {
	n = yamlpos.Resolve(n)
	if n == nil {
		return scalarTagged("", "!!null")
	}
	out := &yaml.Node{Kind: n.Kind, Style: n.Style, Tag: n.Tag, Value: n.Value,
		HeadComment: n.HeadComment, LineComment: n.LineComment, FootComment: n.FootComment}
	switch n.Kind {
	case yaml.MappingNode:
		at := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := yamlpos.Resolve(n.Content[i]), n.Content[i+1]
			kp := yamlpos.Join(p, k.Value)
			if k.Kind != yaml.ScalarNode || k.Value == "<<" {
				r.Errorf(k, diag.NotConvertible, "write the fields out", "%s: a YAML merge key or complex key; not converted", yamlpos.DisplayPath(p))
				continue
			}
			cv := r.copy(v, kp, exprs)
			if j, dup := at[k.Value]; dup {
				first := n.Content[2*j+1]
				if equal(yamlpos.Resolve(first), yamlpos.Resolve(v)) {
					r.note(k, "%s is set twice, to the same value; written once", kp)
					continue
				}
				r.Errorf(k, diag.InvalidValue, "remove one of them", "%s is set twice, to different values; the last one is kept, as kubectl keeps it", kp)
				out.Content[2*j+1] = cv
				continue
			}
			at[k.Value] = len(out.Content) / 2
			out.Content = append(out.Content, r.copyKey(k), cv)
		}
	case yaml.SequenceNode:
		for i, it := range n.Content {
			out.Content = append(out.Content, r.copy(it, fmt.Sprintf("%s[%d]", p, i), exprs))
		}
	case yaml.ScalarNode:
		if exprs && n.ShortTag() == "!!str" {
			out.Value = r.template(n)
		}
	}
	return out
}

// copyKey copies a mapping key with its comments.
func (r *reader) copyKey(k *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: k.Tag, Style: k.Style, Value: k.Value,
		HeadComment: k.HeadComment, LineComment: k.LineComment, FootComment: k.FootComment}
}

// template converts a kro string: text with ${...} expressions, each
// rewritten for a Blueprint.
func (r *reader) template(n *yaml.Node) string {
	segs, err := scan(n.Value)
	if err != nil {
		r.Errorf(n, diag.ExprSyntax, "write the inner ${ inside a string literal, or take it out", "%s", err)
		return n.Value
	}
	for i, s := range segs {
		if !s.expr {
			continue
		}
		src, probs := rewriteExpr(s.text, r.vars, r.builtins)
		segs[i].text = src
		for _, p := range probs {
			off := s.offset + len(string([]rune(s.text)[:min(p.offset, utf8.RuneCountInString(s.text))]))
			r.Diags.Add(r.posIn(n, off), p.code, p.hint, "%s", p.msg)
		}
	}
	return joinSegments(segs)
}

// posIn returns the position of byte off of n's value: on its line when
// the source reads the value verbatim up to there, else at n.
func (r *reader) posIn(n *yaml.Node, off int) diag.Pos {
	p := r.Pos(n)
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.Line < 1 || n.Line > len(r.lines) {
		return p
	}
	col := n.Column
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		col++
	}
	line := []rune(r.lines[n.Line-1])
	prefix := n.Value[:off]
	if col-1 <= len(line) && strings.HasPrefix(string(line[col-1:]), prefix) {
		p.Col = col + utf8.RuneCountInString(prefix)
	}
	return p
}

// equal reports whether two YAML values are the same.
func equal(a, b *yaml.Node) bool {
	if a == nil || b == nil || a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return a == b
	}
	if a.Kind == yaml.ScalarNode && (a.Value != b.Value || a.ShortTag() != b.ShortTag()) {
		return false
	}
	for i := range a.Content {
		if !equal(yamlpos.Resolve(a.Content[i]), yamlpos.Resolve(b.Content[i])) {
			return false
		}
	}
	return true
}

// keyComments returns the comments on the key of m's field k, which the
// Blueprint puts on the key its value goes under.
func keyComments(m *yamlpos.Map, k string) string {
	if n := m.KeyNode(k); n != nil {
		return joinComments(n.HeadComment, n.LineComment)
	}
	return ""
}

func joinComments(cs ...string) string {
	var out []string
	for _, c := range cs {
		if c != "" {
			out = append(out, c)
		}
	}
	return strings.Join(out, "\n")
}
