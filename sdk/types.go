package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// APIVersion is the version of the wire format this package speaks. Every
// request and every Result carries it; a Result of another version is
// refused rather than guessed at.
const APIVersion = "inrun.dev/reconciler/v1alpha1"

// The kinds of the two documents of the contract.
const (
	KindRequest = "ReconcileRequest"
	KindResult  = "ReconcileResult"
)

// Request is what the runtime sends a reconciler, once per reconcile of one
// custom resource.
type Request struct {
	// APIVersion is always APIVersion.
	APIVersion string `json:"apiVersion"`
	// Kind is always KindRequest.
	Kind string `json:"kind"`
	// Object is the custom resource as the API server stores it, status
	// included, without metadata.managedFields.
	Object map[string]any `json:"object"`
	// Args is the Blueprint's reconcile.args, evaluated against Object. It
	// is an empty object when the Blueprint has none.
	Args map[string]any `json:"args"`
	// Observed are the live children the runtime tracks for this custom
	// resource: the objects earlier Results asked for, as they are now. A
	// child keeps the ID its Resource was given.
	Observed []Resource `json:"observed"`
	// Finalizing is true when the custom resource is being deleted. The
	// reply may then clean up outside the cluster and says Done when it
	// has finished; it returns no resources.
	Finalizing bool `json:"finalizing"`
	// Step is the workflow step this call is for, with its idempotency
	// key; nil unless the Blueprint declares reconcile.workflow. Never
	// set on a finalizing request.
	Step *Step `json:"step,omitempty"`
}

// MarshalJSON writes the request with args and observed present even when
// empty, so that reconcilers in any language can read them without a check.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	p := plain(r)
	if p.Args == nil {
		p.Args = map[string]any{}
	}
	if p.Observed == nil {
		p.Observed = []Resource{}
	}
	return json.Marshal(p)
}

// ObservedByID returns the observed child with the given id, or nil.
func (r *Request) ObservedByID(id string) map[string]any {
	for _, o := range r.Observed {
		if o.ID == id {
			return o.Object
		}
	}
	return nil
}

// Result is what a reconciler answers: what should exist and what to
// report. Every field is optional.
type Result struct {
	// APIVersion is APIVersion. Handler fills it in when empty.
	APIVersion string `json:"apiVersion"`
	// Kind is KindResult. Handler fills it in when empty.
	Kind string `json:"kind"`

	// Status is merged into the custom resource's .status. The runtime
	// owns status.conditions and status.observedGeneration.
	Status map[string]any `json:"status,omitempty"`
	// Labels and Annotations are set on the custom resource.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Resources are the children that should exist, as full objects. They
	// are applied with server-side apply; a child an earlier Result returned
	// and this one does not is deleted. Nil (resources left out) keeps the
	// children as they are; an empty slice deletes them all.
	Resources []Resource `json:"resources,omitzero"`
	// Conditions are added to status.conditions next to the runtime's own
	// Ready, Progressing and Degraded.
	Conditions []Condition `json:"conditions,omitempty"`
	// Events are recorded on the custom resource.
	Events []Event `json:"events,omitempty"`
	// RequeueAfter asks to be called again after this long even if nothing
	// changed. Zero means: call again only when the request changes.
	RequeueAfter Duration `json:"requeueAfter,omitzero"`
	// Done answers a finalizing request: cleanup has finished and the
	// runtime may let the custom resource go. It is an error on a request
	// that is not finalizing.
	Done bool `json:"done,omitempty"`
	// Step says how the workflow step the request named went; nil means
	// it succeeded. Only for a request with a Step.
	Step *StepResult `json:"step,omitempty"`
}

// Resource is one Kubernetes object: a child in a Result, or an observed
// child in a Request. On the wire it is the object itself, with the
// optional id as one more top-level field beside apiVersion and kind.
type Resource struct {
	// ID names the child across reconciles, so that it may change name or
	// namespace and still be the same child. Optional: without it, the
	// child is identified by its group, kind, namespace and name.
	ID string
	// Object is the full object, with apiVersion, kind and metadata.name.
	// A namespaced object without metadata.namespace goes in the custom
	// resource's namespace.
	Object map[string]any
}

// idField is the top-level key that carries Resource.ID on the wire. No
// Kubernetes kind has a top-level field of that name.
const idField = "id"

// MarshalJSON writes the object with the id beside its own fields.
func (r Resource) MarshalJSON() ([]byte, error) {
	if r.ID == "" {
		if r.Object == nil {
			return []byte("{}"), nil
		}
		return json.Marshal(r.Object)
	}
	m := make(map[string]any, len(r.Object)+1)
	for k, v := range r.Object {
		m[k] = v
	}
	m[idField] = r.ID
	return json.Marshal(m)
}

// UnmarshalJSON reads an object and takes its id out of it. It checks
// nothing else: DecodeRequest and DecodeResult are the strict readers.
func (r *Resource) UnmarshalJSON(data []byte) error {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	r.ID = ""
	if id, ok := m[idField]; ok {
		s, ok := id.(string)
		if !ok {
			return fmt.Errorf("id must be a string, not %s", jsonType(id))
		}
		r.ID = s
		delete(m, idField)
	}
	r.Object = m
	return nil
}

// APIVersion returns the object's apiVersion, or "".
func (r Resource) APIVersion() string { s, _ := r.Object["apiVersion"].(string); return s }

// Kind returns the object's kind, or "".
func (r Resource) Kind() string { s, _ := r.Object["kind"].(string); return s }

// Name returns the object's metadata.name, or "".
func (r Resource) Name() string { return r.meta("name") }

// Namespace returns the object's metadata.namespace, or "".
func (r Resource) Namespace() string { return r.meta("namespace") }

func (r Resource) meta(field string) string {
	m, _ := r.Object["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

// Ref returns the object's identity without its ID.
func (r Resource) Ref() ObjectRef {
	group, _, found := strings.Cut(r.APIVersion(), "/")
	if !found {
		group = "" // the core group: "v1"
	}
	return ObjectRef{Group: group, Kind: r.Kind(), Namespace: r.Namespace(), Name: r.Name()}
}

// ObjectRef identifies an object across API versions.
type ObjectRef struct {
	Group, Kind, Namespace, Name string
}

// String renders the reference as "Kind namespace/name", with the group
// after the kind when there is one: "Deployment.apps default/web".
func (o ObjectRef) String() string {
	kind := o.Kind
	if o.Group != "" {
		kind += "." + o.Group
	}
	if o.Namespace == "" {
		return kind + " " + o.Name
	}
	return kind + " " + o.Namespace + "/" + o.Name
}

// NewResource turns obj, a typed Kubernetes object such as
// *appsv1.Deployment or an unstructured map, into a Resource with the given
// id (which may be empty). obj must have its apiVersion and kind set.
func NewResource(id string, obj any) (Resource, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return Resource{}, fmt.Errorf("sdk.NewResource: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return Resource{}, fmt.Errorf("sdk.NewResource: %T is not a JSON object", obj)
	}
	res := Resource{ID: id, Object: m}
	normalizeNumbers(m)
	c := newChecker("resource")
	c.resource("", res, false)
	if err := c.errs.Err(); err != nil {
		return Resource{}, fmt.Errorf("sdk.NewResource: %w", err)
	}
	return res, nil
}

// Condition is a condition to add to the custom resource's
// status.conditions, like metav1.Condition without the fields the runtime
// keeps (lastTransitionTime, observedGeneration).
type Condition struct {
	// Type is CamelCase and unique in the Result, e.g. DatabaseReady.
	Type string `json:"type"`
	// Status is True, False or Unknown.
	Status string `json:"status"`
	// Reason is a CamelCase word for machines, e.g. Provisioning.
	Reason string `json:"reason"`
	// Message is for people.
	Message string `json:"message,omitempty"`
}

// The values of Condition.Status.
const (
	ConditionTrue    = "True"
	ConditionFalse   = "False"
	ConditionUnknown = "Unknown"
)

// Event is an Event to record on the custom resource.
type Event struct {
	// Type is Normal or Warning.
	Type string `json:"type"`
	// Reason is a CamelCase word, e.g. BackupTaken.
	Reason string `json:"reason"`
	// Message is for people, at most 1024 bytes.
	Message string `json:"message,omitempty"`
}

// The values of Event.Type.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Duration is a time.Duration that travels as a Go duration string ("30s",
// "1m30s") and is also read from a number of seconds (30, 0.5).
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	got, problem := parseDuration(v)
	if problem != "" {
		return fmt.Errorf("duration %s (%s)", problem, durationHint)
	}
	*d = Duration(got)
	return nil
}

const durationHint = `use a Go duration such as "30s" or "1m30s", or a number of seconds`

// parseDuration reads a duration string or a non-negative number of
// seconds. problem is empty on success.
func parseDuration(v any) (d time.Duration, problem string) {
	switch v := v.(type) {
	case string:
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Sprintf("%q is not a duration", v)
		}
		if d < 0 {
			return 0, fmt.Sprintf("%q is negative", v)
		}
		return d, ""
	case json.Number, int64, float64:
		var f float64
		switch v := v.(type) {
		case json.Number:
			f, _ = strconv.ParseFloat(string(v), 64)
		case int64:
			f = float64(v)
		case float64:
			f = v
		}
		if f < 0 {
			return 0, fmt.Sprintf("%v is negative", v)
		}
		if f > float64(1<<62)/float64(time.Second) {
			return 0, fmt.Sprintf("%v seconds is too long", v)
		}
		return time.Duration(f * float64(time.Second)), ""
	}
	return 0, fmt.Sprintf("must be a string or a number, not %s", jsonType(v))
}

// String renders the duration as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }
