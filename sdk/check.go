package sdk

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inrun/inrun/internal/suggest"
)

// checker collects every problem of one document. Reading the JSON (types,
// unknown fields) and checking the typed values (required fields, formats)
// share it, so that DecodeResult and Result.Validate report the same
// problems in the same words.
type checker struct {
	// doc names the document in messages: "request", "Result".
	doc  string
	errs ErrorList
	// wrong are paths whose value had the wrong JSON type: what lies under
	// them is not checked again, so one mistake gives one message.
	wrong []string
}

func newChecker(doc string) *checker { return &checker{doc: doc} }

func (c *checker) add(path, problem, valid string) {
	for _, w := range c.wrong {
		if under(path, w) {
			return
		}
	}
	c.errs = append(c.errs, &FieldError{Path: path, Problem: problem, Valid: valid})
}

// wrongType reports that v is not of the wanted JSON type.
func (c *checker) wrongType(path string, v any, want string) {
	c.add(path, fmt.Sprintf("must be %s, not %s", want, jsonType(v)), "")
	c.wrong = append(c.wrong, path)
}

// under reports whether path is prefix or lies inside it.
func under(path, prefix string) bool {
	if prefix == "" {
		return true
	}
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	return len(path) == len(prefix) || path[len(prefix)] == '.' || path[len(prefix)] == '['
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// field returns the path of key inside the object at path: a.b, or
// a["app.kubernetes.io/name"] when the key is not an identifier.
func field(path, key string) string {
	if !identRE.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// --- reading JSON values ------------------------------------------------

func (c *checker) object(path string, v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.wrongType(path, v, "an object")
	}
	return m, ok
}

func (c *checker) array(path string, v any) ([]any, bool) {
	s, ok := v.([]any)
	if !ok {
		c.wrongType(path, v, "an array")
	}
	return s, ok
}

func (c *checker) str(path string, v any) string {
	s, ok := v.(string)
	if !ok {
		c.wrongType(path, v, "a string")
	}
	return s
}

func (c *checker) boolean(path string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		c.wrongType(path, v, "a boolean (true or false)")
	}
	return b
}

func (c *checker) stringMap(path string, v any) map[string]string {
	m, ok := c.object(path, v)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		if s, ok := m[k].(string); ok {
			out[k] = s
		} else {
			c.wrongType(field(path, k), m[k], "a string")
		}
	}
	return out
}

// known reports the fields of m that are not in fields, with the nearest
// valid field when one is close. what names the object: "a ReconcileResult".
// notes explain fields that are deliberately absent.
func (c *checker) known(path string, m map[string]any, what string, fields []string, notes map[string]string) {
	for _, k := range sortedKeys(m) {
		if contains(fields, k) {
			continue
		}
		valid := notes[k]
		if valid == "" {
			if near, ok := suggest.Closest(k, fields); ok {
				valid = "did you mean " + near + "?"
			} else {
				valid = "the fields are " + list(fields)
			}
		}
		c.add(field(path, k), "is not a field of "+what, valid)
	}
}

// --- checking typed values ----------------------------------------------

var (
	// kindRE is a Kubernetes kind: CamelCase, starting with a capital.
	kindRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	// apiVersionRE is "version" or "group/version": a DNS subdomain and
	// a DNS label.
	apiVersionRE = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[a-z]([-a-z0-9]*[a-z0-9])?$`)
	// reasonRE is the reason of a metav1.Condition.
	reasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
	// labelNameRE is the name part of a qualified name, and a label value.
	// Ids follow it too, so that the runtime can label a child with its id.
	labelNameRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	// dnsSubdomainRE is the prefix part of a qualified name.
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

const (
	idHint        = "use up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	reasonHint    = "use a CamelCase word such as Provisioning"
	maxEventNote  = 1024
	maxCondReason = 1024
	maxCondMsg    = 32768
	// reservedPrefix marks the labels and annotations the runtime keeps.
	reservedPrefix = "inrun.dev/"
)

// MaxStatusBytes bounds a Result's status, encoded as JSON. The custom
// resource is stored whole, status included, and the API server refuses
// a request over 3 MiB and etcd an object over 1.5 MiB: a larger status
// would make every status write fail, the one that says what went wrong
// included.
const MaxStatusBytes = 256 << 10

// MaxEvents bounds the Events one Result records: each is a write to the
// API server, and a reconciler that reports in a loop would flood it.
const MaxEvents = 32

// MaxAnnotationBytes bounds the annotations a Result sets, keys and values
// together: the API server refuses an object whose annotations pass
// 256 KiB, and a refused write would leave the Result half applied.
const MaxAnnotationBytes = 256 << 10

// runtimeConditions are the condition types the runtime maintains itself.
var runtimeConditions = []string{"Ready", "Progressing", "Degraded"}

// header checks apiVersion and kind. It returns false when the version is
// one this package does not speak: that is then the only problem
// reported, since the document's other fields may mean something else
// there.
func (c *checker) header(apiVersion, kind, wantKind string) bool {
	if c.otherVersion(apiVersion) {
		return false
	}
	if apiVersion == "" {
		c.add("apiVersion", "is required", "use "+APIVersion)
	}
	switch kind {
	case wantKind:
	case "":
		c.add("kind", "is required", "use "+wantKind)
	default:
		c.add("kind", fmt.Sprintf("%q is not valid here", kind), "use "+wantKind)
	}
	return true
}

// otherVersion reports, and says whether, apiVersion is set to a version
// this package does not speak.
func (c *checker) otherVersion(apiVersion string) bool {
	if apiVersion == "" || apiVersion == APIVersion {
		return false
	}
	c.add("apiVersion", fmt.Sprintf("%q is not supported", apiVersion), "this runtime speaks "+APIVersion)
	return true
}

// readsAs reports whether the decoded document m is of the version this
// package speaks, or has none (reported later). A document of another
// version gets that one problem and is read no further: reading it as
// this version would report its fields as unknown or of the wrong type.
func (c *checker) readsAs(m map[string]any) bool {
	v, ok := m["apiVersion"].(string)
	return !ok || !c.otherVersion(v)
}

// kubeObject checks that obj has what every Kubernetes object needs.
func (c *checker) kubeObject(path string, obj map[string]any) {
	const need = "every object needs apiVersion, kind and metadata.name"
	switch v, ok := obj["apiVersion"]; {
	case !ok || v == "":
		c.add(field(path, "apiVersion"), "is required", need)
	case !isString(v):
		c.wrongType(field(path, "apiVersion"), v, "a string")
	case !apiVersionRE.MatchString(v.(string)):
		c.add(field(path, "apiVersion"), fmt.Sprintf("%q is not an API version", v), `use "v1" or "group/version", e.g. apps/v1`)
	}
	switch v, ok := obj["kind"]; {
	case !ok || v == "":
		c.add(field(path, "kind"), "is required", need)
	case !isString(v):
		c.wrongType(field(path, "kind"), v, "a string")
	case !kindRE.MatchString(v.(string)):
		c.add(field(path, "kind"), fmt.Sprintf("%q is not a kind", v), "kinds are CamelCase, e.g. Deployment")
	}
	mpath := field(path, "metadata")
	mv, ok := obj["metadata"]
	if !ok {
		c.add(field(mpath, "name"), "is required", need)
		return
	}
	meta, ok := c.object(mpath, mv)
	if !ok {
		return
	}
	switch v, ok := meta["name"]; {
	case !ok || v == "":
		c.add(field(mpath, "name"), "is required", need)
	case !isString(v):
		c.wrongType(field(mpath, "name"), v, "a string")
	}
	if v, ok := meta["namespace"]; ok {
		c.str(field(mpath, "namespace"), v)
	}
	for _, f := range []string{"labels", "annotations"} {
		if v, ok := meta[f]; ok {
			c.stringMap(field(mpath, f), v)
		}
	}
}

// resource checks one child or observed object. What is wrong is reported
// under path, e.g. resources[2].metadata.name.
func (c *checker) resource(path string, r Resource, fromGo bool) {
	if r.ID != "" && (len(r.ID) > 63 || !labelNameRE.MatchString(r.ID)) {
		c.add(field(path, "id"), fmt.Sprintf("%q is not a valid id", r.ID), idHint)
	}
	if r.Object == nil {
		c.add(path, "has no object", "every resource is a full Kubernetes object")
		return
	}
	if _, ok := r.Object[idField]; ok && fromGo {
		c.add(field(path, "id"), `is set in Object["id"]`, "set Resource.ID instead")
	}
	c.kubeObject(path, r.Object)
}

func (c *checker) request(r *Request) {
	if !c.header(r.APIVersion, r.Kind, KindRequest) {
		return
	}
	if r.Object == nil {
		c.add("object", "is required", "the custom resource being reconciled")
	} else {
		c.kubeObject("object", r.Object)
	}
	for i, o := range r.Observed {
		c.resource(index("observed", i), o, false)
	}
	c.checkStep(r.Step)
}

func (c *checker) result(r *Result, finalizing, fromGo bool) {
	if !c.header(r.APIVersion, r.Kind, KindResult) {
		return
	}
	rawStatus, _ := json.Marshal(r.Status)
	rawConditions, _ := json.Marshal(r.Conditions)
	switch {
	case len(rawStatus) > MaxStatusBytes:
		c.add("status", fmt.Sprintf("is %d bytes long as JSON", len(rawStatus)), fmt.Sprintf("at most %d: keep large data elsewhere (a ConfigMap among resources, or your own store) and report a summary", MaxStatusBytes))
	case len(rawStatus)+len(rawConditions) > MaxStatusBytes:
		// Both are written into the custom resource's status at once.
		c.add("conditions", fmt.Sprintf("are %d bytes long as JSON (%d conditions), %d with status", len(rawConditions), len(r.Conditions), len(rawStatus)+len(rawConditions)), fmt.Sprintf("status and conditions together take at most %d: report a few conditions, one per thing a reader checks, and put details elsewhere", MaxStatusBytes))
	}
	for _, k := range sortedKeys(r.Status) {
		switch k {
		case "conditions":
			c.add(field("status", k), "is written by the runtime", "return conditions in the Result's conditions field")
		case "observedGeneration":
			c.add(field("status", k), "is written by the runtime", "leave it out")
		}
	}
	c.metaMap("labels", r.Labels, true)
	c.metaMap("annotations", r.Annotations, false)
	if n := metaBytes(r.Annotations); n > MaxAnnotationBytes {
		c.add("annotations", fmt.Sprintf("are %d bytes long, keys and values", n), fmt.Sprintf("at most %d, the API server's limit: keep large data in a ConfigMap among resources, or in status", MaxAnnotationBytes))
	}

	if finalizing && len(r.Resources) > 0 {
		c.add("resources", "must be empty in reply to a finalizing request", "the custom resource is being deleted; clean up, then answer done: true")
	}
	ids := map[string]int{}
	refs := map[ObjectRef]int{}
	for i, res := range r.Resources {
		path := index("resources", i)
		c.resource(path, res, fromGo)
		if res.ID != "" {
			if j, dup := ids[res.ID]; dup {
				c.add(field(path, "id"), fmt.Sprintf("%q is also the id of resources[%d]", res.ID, j), "give each resource its own id")
			} else {
				ids[res.ID] = i
			}
		}
		if ref := res.Ref(); ref.Kind != "" && ref.Name != "" {
			if j, dup := refs[ref]; dup {
				c.add(path, fmt.Sprintf("is %s again, as resources[%d]", ref, j), "return each object once")
			} else {
				refs[ref] = i
			}
		}
	}

	types := map[string]int{}
	for i, cond := range r.Conditions {
		path := index("conditions", i)
		switch {
		case cond.Type == "":
			c.add(field(path, "type"), "is required", "a CamelCase condition type such as DatabaseReady")
		case contains(runtimeConditions, cond.Type):
			c.add(field(path, "type"), fmt.Sprintf("%q is the runtime's own condition", cond.Type), "use another type; the runtime sets "+list(runtimeConditions))
		case !qualifiedName(cond.Type):
			c.add(field(path, "type"), fmt.Sprintf("%q is not a condition type", cond.Type), "use a CamelCase word such as DatabaseReady, optionally with a DNS prefix and a slash")
		default:
			if j, dup := types[cond.Type]; dup {
				c.add(field(path, "type"), fmt.Sprintf("%q is also the type of conditions[%d]", cond.Type, j), "give each condition its own type")
			}
			types[cond.Type] = i
		}
		switch cond.Status {
		case ConditionTrue, ConditionFalse, ConditionUnknown:
		case "":
			c.add(field(path, "status"), "is required", "use True, False or Unknown")
		default:
			c.add(field(path, "status"), fmt.Sprintf("%q is not valid", cond.Status), "use True, False or Unknown")
		}
		c.reason(field(path, "reason"), cond.Reason, maxCondReason)
		if len(cond.Message) > maxCondMsg {
			c.add(field(path, "message"), fmt.Sprintf("is %d bytes long", len(cond.Message)), fmt.Sprintf("at most %d", maxCondMsg))
		}
	}

	if len(r.Events) > MaxEvents {
		c.add("events", fmt.Sprintf("has %d events", len(r.Events)), fmt.Sprintf("at most %d per Result: record what changed, not every detail", MaxEvents))
	}
	for i, ev := range r.Events {
		path := index("events", i)
		switch ev.Type {
		case EventNormal, EventWarning:
		case "":
			c.add(field(path, "type"), "is required", "use Normal or Warning")
		default:
			c.add(field(path, "type"), fmt.Sprintf("%q is not valid", ev.Type), "use Normal or Warning")
		}
		c.reason(field(path, "reason"), ev.Reason, 128)
		if len(ev.Message) > maxEventNote {
			c.add(field(path, "message"), fmt.Sprintf("is %d bytes long", len(ev.Message)), fmt.Sprintf("at most %d", maxEventNote))
		}
	}

	if r.RequeueAfter < 0 {
		c.add("requeueAfter", fmt.Sprintf("%s is negative", time.Duration(r.RequeueAfter)), durationHint)
	}
	if r.Done && !finalizing {
		c.add("done", "is only valid in reply to a finalizing request", "leave it out, or false")
	}
	c.checkStepResult(r.Step, finalizing)
}

func (c *checker) reason(path, reason string, maxLen int) {
	switch {
	case reason == "":
		c.add(path, "is required", reasonHint)
	case len(reason) > maxLen || !reasonRE.MatchString(reason):
		c.add(path, fmt.Sprintf("%q is not a reason", reason), reasonHint)
	}
}

// metaMap checks the labels or annotations the Result sets on the custom
// resource.
func (c *checker) metaMap(path string, m map[string]string, labels bool) {
	for _, k := range sortedKeys(m) {
		p := field(path, k)
		switch {
		case !qualifiedName(k):
			c.add(p, "is not a valid key", "use a name of up to 63 letters, digits, '-', '_' or '.', optionally prefixed by a DNS subdomain and a slash, e.g. example.com/team")
		case strings.HasPrefix(k, reservedPrefix):
			c.add(p, "is reserved for the runtime", "use a key outside "+reservedPrefix)
		case labels && (len(m[k]) > 63 || (m[k] != "" && !labelNameRE.MatchString(m[k]))):
			c.add(p, fmt.Sprintf("%q is not a valid label value", m[k]), "use up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
		}
	}
}

// metaBytes is the size the API server counts of annotations: keys and
// values.
func metaBytes(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

// qualifiedName is Kubernetes' rule for label keys and condition types.
func qualifiedName(s string) bool {
	prefix, name, found := strings.Cut(s, "/")
	if !found {
		prefix, name = "", s
	} else if prefix == "" || len(prefix) > 253 || !dnsSubdomainRE.MatchString(prefix) {
		return false
	}
	return len(name) <= 63 && labelNameRE.MatchString(name)
}

func isString(v any) bool { _, ok := v.(string); return ok }

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// list renders "a, b and c".
func list(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
