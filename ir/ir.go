package ir

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/diag"
)

// APIVersion is the apiVersion every Blueprint in this IR version declares.
const APIVersion = "inrun.dev/v1alpha1"

// Pos is a position in a Blueprint or a file it names, as file:line:col.
// It is the position every diagnostic carries.
type Pos = diag.Pos

// Blueprint is a compiled Blueprint: the CRD it reconciles and what each of
// its custom resources becomes.
type Blueprint struct {
	// Name is metadata.name of the Blueprint.
	Name string
	// File is the path the Blueprint was read from, as given.
	File string

	// Resource is the custom resource kind the Blueprint reconciles.
	Resource Resource

	// Uses are the kinds the Blueprint builds on (uses:), in the order
	// written: other Blueprints' custom resources and foreign CRDs, which
	// its children may be.
	Uses []*Use `json:",omitempty"`

	// Children are the templates, onCreate and onReconcile alike, in an order
	// where every child comes after the children its expressions reference.
	Children []*Child

	// Status is emit.status: a map Value whose fields are written under the
	// custom resource's .status next to the runtime's own conditions.
	Status *Value

	// Conditions are emit.conditions: the Blueprint's own conditions,
	// written in .status.conditions beside Ready, Progressing and Degraded.
	Conditions []*Condition `json:",omitempty"`
	// ReadyWhen is emit.readyWhen: boolean expressions that must all hold
	// for the custom resource to be Ready, instead of every child being
	// ready. Empty keeps that rule. Errors make it not Ready either way.
	ReadyWhen []*Expr `json:",omitempty"`

	// Reconcile is the remote reconciler and the arguments it is sent; nil
	// when the Blueprint has no reconcile section.
	Reconcile *Reconcile

	// Hooks are the Blueprint's own Go hooks (go: at the top), beside the
	// transforms its children name; nil when it names none.
	Hooks *Hooks `json:",omitempty"`

	// Serve is what callers of the intent gateway send for this kind and
	// read back; nil when the Blueprint serves no intents.
	Serve *Serve `json:",omitempty"`

	// Lifecycle is the pattern's lifecycle: whether it is deprecated and
	// for what. Nil when the Blueprint has no lifecycle section.
	Lifecycle *Lifecycle `json:",omitempty"`

	// Migrate is the kind move the Blueprint declares (inrun migrate); nil
	// when it declares none.
	Migrate *Migrate `json:",omitempty"`

	// Deprecated is set by whoever runs the Blueprint as a pattern version
	// that a deprecation covers and a Stack accepts (inrun run), on its own
	// copy: the runtime then keeps a Deprecated condition on every custom
	// resource and records an Event. It is the value at start: inrun run
	// changes it while running through reconciler.Options.Deprecation,
	// never here. The compiler never sets it.
	Deprecated *Deprecated `json:",omitempty"`
}

// Deprecated says that the pattern version a Blueprint was run as is
// deprecated, and until when it is accepted.
type Deprecated struct {
	// Pattern names the version, such as registry.example/team/website:1.2.0.
	Pattern string
	// Message and Replacement are the deprecation's.
	Message     string
	Replacement string `json:",omitempty"`
	// Until is the last day the acceptance holds.
	Until time.Time
	// Refused, when set, says why the version is no longer accepted (no
	// Stack accepts it, or the acceptance lapsed) while it runs: it keeps
	// running, and inrun run refuses it when it next starts.
	Refused string `json:",omitempty"`
}

// Lifecycle is the lifecycle section of a Blueprint shared as a pattern.
type Lifecycle struct {
	// Deprecation marks the pattern deprecated; nil when it is not.
	Deprecation *Deprecation `json:",omitempty"`
}

// Deprecation is lifecycle.deprecation: the pattern, or some of its
// versions, should no longer be run. The pattern registry carries it on
// the pushed artifact; inrun run refuses a deprecated version that no
// Stack accepts, and the runtime puts a Deprecated condition on the
// custom resources of one that runs.
type Deprecation struct {
	// Message says why, for those who run it.
	Message string
	// Replacement names what to move to (a pattern reference, such as
	// registry.example/team/webapp:2.0.0); empty when there is none.
	Replacement string `json:",omitempty"`
	// After is the last day (UTC) a Stack may accept the deprecation; zero
	// when acceptances never lapse on the publisher's side.
	After time.Time `json:",omitzero"`
	// Versions is the scope: a semver constraint naming the versions of
	// the pattern it deprecates ("*" for the whole pattern, "<2.0.0" for
	// the 1.x line). Empty: the version that carries it.
	Versions string `json:",omitempty"`
	// Pos is where the section is.
	Pos Pos
}

// Child returns the child with the given id, or nil.
func (b *Blueprint) Child(id string) *Child {
	for _, c := range b.Children {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// ControllerRef returns the controller-runtime reconciler b names in
// reconcile.go.controller, or nil. Such a Blueprint's reconciler does its own
// writes, children and status included: the reconcile pass stands aside.
func (b *Blueprint) ControllerRef() *GoRef {
	if b.Reconcile == nil || b.Reconcile.Remote == nil {
		return nil
	}
	return b.Reconcile.Remote.Controller
}

// WithRemoteURL returns a copy of b that calls its remote reconciler at url
// instead of where the Blueprint says; b itself is unchanged. For an API
// mapped by reconcile.api, url replaces the scheme and host of every URL
// the mapping calls, and a path in url is put before theirs: the API runs
// elsewhere, with the same paths. A Blueprint without a remote reconciler
// is returned as it is. A Go reconciler (reconcile.go) is replaced by the
// reconciler at url: a recorded reply in simulate stands in for it.
func (b *Blueprint) WithRemoteURL(url string) *Blueprint {
	if b.Reconcile == nil || b.Reconcile.Remote == nil {
		return b
	}
	out, rec, remote := *b, *b.Reconcile, *b.Reconcile.Remote
	if remote.API == nil {
		remote.URL, remote.Service, remote.Go = url, nil, nil
	} else {
		api := *remote.API
		api.URL = rebase(api.URL, url)
		if api.Create != nil {
			create := *api.Create
			create.URL = rebase(create.URL, url)
			api.Create = &create
		}
		if api.Adopt != nil && api.Adopt.URL != nil {
			adopt := *api.Adopt
			adopt.URL = rebase(adopt.URL, url)
			api.Adopt = &adopt
		}
		remote.API = &api
	}
	rec.Remote = &remote
	out.Reconcile = &rec
	return &out
}

// rebase replaces the scheme and host a URL Value starts with (the
// compiler requires them written out) with base's, base's path first.
func rebase(v *Value, base string) *Value {
	if v == nil {
		return nil
	}
	base = strings.TrimSuffix(base, "/")
	swap := func(text string) string {
		_, rest, ok := strings.Cut(text, "://")
		if !ok {
			return text
		}
		path := ""
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			path = rest[i:]
		}
		return base + path
	}
	out := *v
	switch v.Kind {
	case Literal:
		if s, ok := v.Literal.(string); ok {
			out.Literal = swap(s)
		}
	case Interpolation:
		out.Parts = append([]Part(nil), v.Parts...)
		if len(out.Parts) > 0 && out.Parts[0].Expr == nil {
			out.Parts[0].Text = swap(out.Parts[0].Text)
		}
	}
	return &out
}

// Use is a kind a Blueprint builds on: the custom resource of another
// Blueprint (kro's RGD chaining), or of a CRD nothing here reconciles
// (cert-manager's Certificate, say). Children of its kind are typed by its
// CRD's schema, as the Blueprint's own custom resource is.
type Use struct {
	Pos Pos
	schema.GroupVersionKind
	Plural     string
	Namespaced bool
	// File is the path uses names (blueprint: or crd:), relative to the
	// Blueprint's directory.
	File string
	// Source is where it was read from, as diagnostics name it: the used
	// Blueprint's File, or the CRD manifest's path.
	Source string
	// Blueprint is the used Blueprint's metadata.name; empty for a CRD.
	Blueprint string
	// CRD is the parsed manifest; nil when a used Blueprint names its CRD
	// by group, version and kind only.
	CRD *apiextensionsv1.CustomResourceDefinition
	// Schema is the OpenAPI schema of the version; nil when unknown:
	// children of the kind are then read dynamically.
	Schema *apiextensionsv1.JSONSchemaProps
	// ReadyCondition says a child of the kind is ready (unless its
	// readyWhen says otherwise) when its status has the condition
	// Ready=True for its current generation; false, once it exists. True
	// for every used Blueprint, whose runtime writes that condition, and
	// for a CRD whose status schema has conditions.
	ReadyCondition bool

	// Compiled is the used Blueprint, compiled with this one, for the
	// programs that run it too (inrun run, simulate, e2e). Nil for a CRD,
	// and in an IR read back by Unmarshal: a generated operator runs its
	// own Blueprint only; the used one needs its own operator.
	Compiled *Blueprint `json:"-"`
}

// Use returns what b uses of kind gvk, or nil.
func (b *Blueprint) Use(gvk schema.GroupVersionKind) *Use {
	for _, u := range b.Uses {
		if u.GroupVersionKind == gvk {
			return u
		}
	}
	return nil
}

// OneBlueprintPerKind refuses Blueprints, and those they use, of which
// two reconcile one kind: both controllers would write every custom
// resource of it, each taking the other's children for a stranger's.
func OneBlueprintPerKind(bps []*Blueprint) error {
	by := map[schema.GroupVersionKind]*Blueprint{}
	for _, bp := range WithUsed(bps) {
		gvk := bp.Resource.GroupVersionKind
		if other, ok := by[gvk]; ok && other.Name != bp.Name {
			return fmt.Errorf("Blueprints %q (%s) and %q (%s) both reconcile %s: one kind has one Blueprint; run them in separate clusters, or give one another kind", other.Name, other.File, bp.Name, bp.File, FormatKind(gvk))
		}
		by[gvk] = bp
	}
	return nil
}

// OneBlueprintPerTarget refuses Blueprints of which two serve one gateway
// target (serve.target): a caller's intent would have two meanings.
func OneBlueprintPerTarget(bps []*Blueprint) error {
	by := map[string]*Blueprint{}
	for _, bp := range bps {
		if bp.Serve == nil {
			continue
		}
		if other, ok := by[bp.Serve.Target]; ok && other.Name != bp.Name {
			return fmt.Errorf("Blueprints %q (%s) and %q (%s) both serve target %s: one target has one Blueprint; give one another serve.target", other.Name, other.File, bp.Name, bp.File, bp.Serve.Target)
		}
		by[bp.Serve.Target] = bp
	}
	return nil
}

// WithUsed returns bps and every Blueprint they use, directly or through
// others, each once: a used Blueprint before the first that uses it. Two
// compilations of one file are one Blueprint. It is what a program that
// runs bps runs, so that the custom resources their children are get
// reconciled too.
func WithUsed(bps []*Blueprint) []*Blueprint {
	var out []*Blueprint
	seen := map[string]bool{}
	var add func(bp *Blueprint)
	add = func(bp *Blueprint) {
		key := path.Clean(filepath.ToSlash(bp.File))
		if bp.File == "" {
			key = fmt.Sprintf("%p", bp)
		}
		if seen[key] {
			return
		}
		seen[key] = true
		for _, u := range bp.Uses {
			if u.Compiled != nil {
				add(u.Compiled)
			}
		}
		out = append(out, bp)
	}
	for _, bp := range bps {
		add(bp)
	}
	return out
}

// Resource describes the custom resource kind a Blueprint reconciles.
type Resource struct {
	schema.GroupVersionKind
	// Pos is where the Blueprint's crd (or schema) section is.
	Pos Pos
	// Plural is the resource name used in URLs and RBAC, e.g. "websites".
	Plural string
	// Namespaced is false for cluster-scoped custom resources.
	Namespaced bool
	// StatusSubresource reports whether the CRD version enables /status.
	StatusSubresource bool

	// CRDFile is the path of the CRD manifest relative to the Blueprint's
	// directory; empty when the CRD is referenced by group/version/kind
	// only, or generated from the Blueprint's schema section.
	CRDFile string
	// CRD is the parsed manifest when CRDFile is set, or the CRD generated
	// from the schema section; nil for a CRD named by group/version/kind.
	CRD *apiextensionsv1.CustomResourceDefinition
	// Schema is the OpenAPI schema of the reconciled version. Nil when the
	// CRD is only referenced by group/version/kind: expressions on self are
	// then checked dynamically.
	Schema *apiextensionsv1.JSONSchemaProps
}

// GroupVersionResource returns the resource's GVR.
func (r Resource) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Plural}
}

// Phase says when a child is applied.
type Phase string

const (
	// OnCreate children are created once, when the custom resource first
	// appears, and never overwritten afterwards (a generated Secret, say).
	OnCreate Phase = "onCreate"
	// OnReconcile children are applied on every reconcile.
	OnReconcile Phase = "onReconcile"
)

// Child is one template of a Blueprint: an object the custom resource owns.
type Child struct {
	// ID names the child; other expressions refer to its live object by it.
	ID    string
	Phase Phase
	Pos   Pos

	// GVK of the template, and how its API is addressed.
	schema.GroupVersionKind
	Plural     string
	Namespaced bool
	// BuiltIn is true for kinds served by every Kubernetes API server; false
	// for the Blueprint's own CRD.
	BuiltIn bool

	// IncludeWhen, when set, is a boolean expression: false means the child
	// is not wanted, and an existing one is pruned.
	IncludeWhen *Expr
	// ReadyWhen, when set, is a boolean expression over the live child that
	// overrides the runtime's built-in readiness rule for its kind.
	ReadyWhen *Expr

	// Template is the object to apply, a map Value. For an External child
	// it holds only apiVersion, kind and metadata: name and namespace, or
	// selector and namespace.
	Template *Value
	// External is true for an externalRef: an existing object the custom
	// resource reads but never writes, owns or prunes.
	External bool
	// Selector is true for an externalRef by label selector: it reads
	// every object of its kind that metadata.selector matches, and other
	// expressions read it as a list of them, sorted by namespace and name.
	Selector bool `json:",omitempty"`

	// DependsOn lists, sorted, the ids of the children this one's
	// expressions reference. The child is rendered only once they exist.
	DependsOn []string

	// Transform, when set, names a Go hook (go: {transform: NAME}),
	// registered in package components, that changes the rendered object
	// before it is applied.
	Transform *GoRef `json:",omitempty"`

	// ForEach, when set, makes the child a collection: one object for each
	// combination of its iterators' items, rendered with each iterator's
	// name bound to its item. Other expressions read the collection as a
	// list of its live objects; its readyWhen reads one as each.
	ForEach []*Iterator `json:",omitempty"`
}

// Condition is one of emit.conditions: a condition the runtime writes on
// every custom resource, as it writes its own.
type Condition struct {
	Pos Pos
	// Type is the condition's type, an UpperCamelCase literal.
	Type string
	// Status is a bool expression ("True" or "False"), or a string one
	// that gives "True", "False" or "Unknown". Data it reads that is not
	// there yet makes the condition Unknown.
	Status *Expr
	// Reason is a string Value, literal or expression; nil means the
	// runtime's default.
	Reason *Value `json:",omitempty"`
	// Message is a string Value, which may interpolate; nil means the
	// runtime's default, which says what Status evaluated.
	Message *Value `json:",omitempty"`
}

// Exprs returns the expressions of c: status, reason, then message.
func (c *Condition) Exprs() []*Expr {
	out := []*Expr{c.Status}
	out = append(out, c.Reason.Exprs()...)
	return append(out, c.Message.Exprs()...)
}

// Iterator is one dimension of a collection: a name and the list (or map,
// whose keys are its items) it takes its items from.
type Iterator struct {
	Pos   Pos
	Name  string
	Items *Expr
}

// Each names a collection item's live object in the collection's
// readyWhen, as kro names it.
const Each = "each"

// Reconcile is the reconcile section: a reconciler and its arguments.
type Reconcile struct {
	Pos Pos
	// Args is reconcile.args: a map Value evaluated per reconcile and sent to
	// the reconciler.
	Args *Value
	// Remote is the reconciler to call; nil when none is configured.
	Remote *Remote
	// Workflow drives the custom resource through named steps, one call
	// of Remote per step, with the progress kept in .status.workflow;
	// nil when the Blueprint declares none.
	Workflow *Workflow `json:",omitempty"`
}

// Workflow is reconcile.workflow: the custom resource as a durable state
// machine. With a reconciler, the runtime calls it once per step (more on
// failures), with the step and an idempotency key in the request; without
// one, each step creates the Blueprint's resources it names and is done
// once they are ready. Either way the runtime records each step's runs,
// attempts and outcome in .status.workflow until the workflow ends,
// Succeeded or Failed.
type Workflow struct {
	Pos Pos
	// Steps are the states, in the order they run unless a step's
	// Result names the next (sdk.StepResult.Next). At least one.
	Steps []*WorkflowStep
	// BackoffLimit is how many failed attempts a step may have before the
	// workflow fails, for steps that set none.
	BackoffLimit int64
	// BackoffSeconds is how long after a failed attempt the step is tried
	// again, doubled for every further failure up to MaxWorkflowBackoff,
	// for steps that set none: a Job's 10 s, 20 s, 40 s. Zero retries with
	// the controller's backoff alone, which starts at milliseconds.
	BackoffSeconds int64 `json:",omitempty"`
	// TTLSecondsAfterFinished, when set, deletes the custom resource (and
	// so its children) that long after the workflow finished, as a Job's
	// field of that name does. Nil keeps it.
	TTLSecondsAfterFinished *int64 `json:",omitempty"`
	// HistoryLimit is how many step runs .status.workflow.steps keeps;
	// older ones are summed up in .status.workflow.summary.
	HistoryLimit int64
}

// WorkflowStep is one step of a workflow.
type WorkflowStep struct {
	Pos  Pos
	Name string
	// BackoffLimit is how many failed attempts this step may have; nil
	// takes the workflow's.
	BackoffLimit *int64 `json:",omitempty"`
	// BackoffSeconds is this step's first delay after a failed attempt;
	// nil takes the workflow's.
	BackoffSeconds *int64 `json:",omitempty"`
	// TimeoutSeconds, when set, fails the workflow when the step has run
	// that long without succeeding, as a Job's activeDeadlineSeconds.
	TimeoutSeconds *int64 `json:",omitempty"`
	// Resources are the ids of the children this step creates, in a
	// workflow without a reconciler: they are created once the step has
	// started, and the step succeeds once each exists and is ready.
	Resources []string `json:",omitempty"`
	// FailedWhen are boolean expressions over the custom resource and the
	// children; any that holds while the step runs fails the workflow.
	FailedWhen []*Expr `json:",omitempty"`
}

// Defaults of reconcile.workflow, as a Job has them where it has the field.
const (
	DefaultWorkflowBackoffLimit   = 6
	DefaultWorkflowBackoffSeconds = 10
	// MaxWorkflowBackoff bounds the delay before a failed step is tried
	// again, as the Job controller's six minutes.
	MaxWorkflowBackoff          = 6 * time.Minute
	DefaultWorkflowHistoryLimit = 10
	MaxWorkflowHistoryLimit     = 100
)

// Step returns the step of that name, or nil.
func (w *Workflow) Step(name string) *WorkflowStep {
	for _, s := range w.Steps {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// StepIndex returns the index of the step of that name, or -1.
func (w *Workflow) StepIndex(name string) int {
	for i, s := range w.Steps {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// StepOf returns the index of the step whose resources name the child id,
// or -1 when no step does: the child is then no part of the workflow.
func (w *Workflow) StepOf(id string) int {
	for i, s := range w.Steps {
		for _, r := range s.Resources {
			if r == id {
				return i
			}
		}
	}
	return -1
}

// RetryDelay is how long after its failures-th failed attempt step s is
// tried again: its backoffSeconds (or the workflow's), doubled for each
// failure before, at most MaxWorkflowBackoff.
func (w *Workflow) RetryDelay(s *WorkflowStep, failures int64) time.Duration {
	base := w.BackoffSeconds
	if s != nil && s.BackoffSeconds != nil {
		base = *s.BackoffSeconds
	}
	if base <= 0 || failures <= 0 {
		return 0
	}
	d := time.Duration(base) * time.Second
	for i := int64(1); i < failures && d < MaxWorkflowBackoff; i++ {
		d *= 2
	}
	return min(d, MaxWorkflowBackoff)
}

// StepBackoffLimit is s's backoff limit, or the workflow's.
func (w *Workflow) StepBackoffLimit(s *WorkflowStep) int64 {
	if s != nil && s.BackoffLimit != nil {
		return *s.BackoffLimit
	}
	return w.BackoffLimit
}

// Remote is the reconciler the runtime calls: an HTTP service that speaks
// the contract (URL or Service), an existing HTTP API (API), or Go compiled
// into the binary (Go). All of them take the same request and answer the
// same Result, which the runtime applies the same way.
type Remote struct {
	Pos Pos
	// URL is an absolute http(s) URL, or empty when Service, API or Go
	// is set.
	URL string
	// Service is an in-cluster Service reference, or nil when URL is set.
	Service *ServiceRef
	// Timeout bounds one call; zero means the runtime's default.
	Timeout time.Duration
	// Resources are the kinds the reconciler may return. A Result holding
	// any other kind is refused: RBAC and watches derive from this list.
	Resources []ResourceKind
	// TokenSecret, when set, holds the bearer token sent with each call.
	TokenSecret *SecretKeyRef
	// CABundle is PEM that verifies an https reconciler; empty means the
	// system's roots.
	CABundle string
	// API maps the request onto an existing HTTP API that knows nothing
	// about Inrun, instead of sending the contract's request to URL.
	API *APIMapping
	// Go names a reconciler registered in package components, compiled
	// into the binary that runs the Blueprint (reconcile.go: {name: NAME}).
	Go *GoRef `json:",omitempty"`
	// Controller names a controller-runtime reconciler registered in
	// package components (reconcile.go: {controller: NAME}). It owns the
	// custom resource: the runtime runs it in its manager, with its
	// leader election, metrics and access review, and runs no pass of its
	// own for the Blueprint. Timeout bounds each of its Reconcile calls;
	// Resources are the kinds it reads and writes.
	Controller *GoRef `json:",omitempty"`
}

// Hooks are the Go hooks of a Blueprint (go: {args: NAME, status: NAME}),
// registered in package components, that run at fixed points of the pass
// while the templates stay declarative.
type Hooks struct {
	Pos Pos
	// Args computes extra arguments for the reconciler, merged into what
	// reconcile.args evaluates to before each call.
	Args *GoRef `json:",omitempty"`
	// Status computes status fields after the children are applied,
	// beside the ones emit.status declares.
	Status *GoRef `json:",omitempty"`
}

// GoRef names Go code registered in package components.
type GoRef struct {
	Pos  Pos
	Name string
}

// APIMapping builds an HTTP call from the request and a Result from the
// response, with expressions over self, args, finalizing, id and (in
// Result, ID.From and Adopt.From) response: {status, headers, body}.
type APIMapping struct {
	Pos Pos
	// Method is a string Value: the HTTP method, e.g.
	// ${finalizing ? "DELETE" : "PUT"}; nil means POST.
	Method *Value
	// URL is a string Value: literal or interpolated.
	URL *Value
	// Headers is a map Value of strings; nil for none.
	Headers *Value
	// Body is sent as JSON; nil sends no body.
	Body *Value
	// Result is a map Value in the shape of a ReconcileResult.
	Result *Value

	// ID, when set, says the API assigns each record its id on create:
	// while the custom resource has none, Create is called instead of
	// Method and URL, and the id is kept in its status.
	ID *APIID
	// Create is the call that creates the record while no id is known.
	// Set when ID is.
	Create *APICall
	// Adopt finds the id of a record that already exists, after a reply
	// whose status Statuses maps to APIAdopt. Nil: ID.From reads it from
	// that reply.
	Adopt *APIAdopt
	// IdempotencyKey names the header that carries the idempotency key of
	// every POST and PATCH call, <uid>/<generation>/<method>: the same for
	// retries of one call, so that an API that honours it never creates
	// twice. Empty sends none.
	IdempotencyKey string
	// Statuses say what replies mean, by status code ("404") or class
	// ("4xx"). 5xx and 429 are always failures, retried with backoff.
	Statuses map[string]APIStatusAction
}

// APIID says where the id an API assigns is kept and read from.
type APIID struct {
	Pos Pos
	// Field is the status field that holds the id: .status.<Field>.
	Field string
	// From reads the id from a create's (or an adoption's) response.
	From *Value
}

// APICall is an HTTP method and URL.
type APICall struct {
	Pos Pos
	// Method is a string Value; nil means the call's default.
	Method *Value
	// URL is a string Value.
	URL *Value
}

// APIAdopt is the call that finds an existing record's id, and where its
// reply has it.
type APIAdopt struct {
	APICall
	// From reads the id from the reply; nil means ID.From.
	From *Value
}

// APIStatusAction is what a reply's status means.
type APIStatusAction string

const (
	// StatusResult: reconcile.api.result reads the reply.
	StatusResult APIStatusAction = "result"
	// StatusFail: the call failed; the custom resource is Degraded and the
	// call retried with backoff.
	StatusFail APIStatusAction = "fail"
	// StatusRecreate: the record is gone; it is created again (or, deleting,
	// counts as deleted).
	StatusRecreate APIStatusAction = "recreate"
	// StatusAdopt: the record already exists; its id is found (Adopt) and
	// kept, and it is updated as any other.
	StatusAdopt APIStatusAction = "adopt"
)

// ResourceKind is a kind a remote reconciler may return.
type ResourceKind struct {
	Pos Pos
	schema.GroupVersionKind
	Plural     string
	Namespaced bool
}

// SecretKeyRef names one key of a Secret.
type SecretKeyRef struct {
	Namespace string
	Name      string
	Key       string
}

// ServiceRef names a Service that serves a remote reconciler.
type ServiceRef struct {
	Namespace string
	Name      string
	Port      int32
	Path      string
}

// RenderExprs returns the expressions a Renderer evaluates, in Blueprint
// order: each child's forEach, includeWhen, readyWhen and template, then
// emit.status, emit.conditions and emit.readyWhen, then reconcile.args and
// the failedWhen of reconcile.workflow's steps.
func (b *Blueprint) RenderExprs() []*Expr {
	var out []*Expr
	for _, c := range b.Children {
		for _, it := range c.ForEach {
			out = append(out, it.Items)
		}
		if c.IncludeWhen != nil {
			out = append(out, c.IncludeWhen)
		}
		if c.ReadyWhen != nil {
			out = append(out, c.ReadyWhen)
		}
		out = append(out, c.Template.Exprs()...)
	}
	out = append(out, b.Status.Exprs()...)
	for _, c := range b.Conditions {
		out = append(out, c.Exprs()...)
	}
	out = append(out, b.ReadyWhen...)
	if b.Reconcile != nil {
		out = append(out, b.Reconcile.Args.Exprs()...)
		if wf := b.Reconcile.Workflow; wf != nil {
			for _, s := range wf.Steps {
				out = append(out, s.FailedWhen...)
			}
		}
	}
	return out
}

// APIExprs returns the expressions of reconcile.api, which see args,
// finalizing and response besides self and the children.
func (b *Blueprint) APIExprs() []*Expr {
	if b.Reconcile == nil || b.Reconcile.Remote == nil || b.Reconcile.Remote.API == nil {
		return nil
	}
	api := b.Reconcile.Remote.API
	values := []*Value{api.Method, api.URL, api.Headers, api.Body, api.Result}
	if api.ID != nil {
		values = append(values, api.ID.From)
	}
	if api.Create != nil {
		values = append(values, api.Create.Method, api.Create.URL)
	}
	if api.Adopt != nil {
		values = append(values, api.Adopt.Method, api.Adopt.URL, api.Adopt.From)
	}
	var out []*Expr
	for _, v := range values {
		out = append(out, v.Exprs()...)
	}
	return out
}

// Exprs returns every expression of b: RenderExprs, then APIExprs.
func (b *Blueprint) Exprs() []*Expr {
	return append(b.RenderExprs(), b.APIExprs()...)
}

// FormatKind names a kind as manifests write it, apiVersion then kind:
// "apps/v1 Deployment", and "v1 Service" for the core group (where
// GroupVersionKind.String gives "/v1, Kind=Service").
func FormatKind(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}
