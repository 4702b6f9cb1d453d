package ir

import "sort"

// Serve is a Blueprint's serve section: what callers of the intent gateway
// (inrun serve) may send for its kind, where the custom resource it becomes
// goes, who may send it, and the view they read back. Callers never see
// apiVersion, kind, metadata or spec: the section maps between their words
// and the custom resource.
type Serve struct {
	Pos Pos
	// Target is the name callers use: /v1/targets/<Target>/intents.
	Target string
	// Description says what the target makes, for the OpenAPI document.
	Description string `json:",omitempty"`
	// Fields are the intent's fields, in the order the Blueprint lists them.
	// An intent with any other field is refused.
	Fields []*ServeField
	// Name says how a custom resource's name is made.
	Name ServeName
	// Namespace says which namespace a custom resource goes in; zero for a
	// cluster-scoped kind.
	Namespace ServeNamespace
	// View is a map Value of what callers read back, with expressions over
	// self (the custom resource, status included) and intent (its fields);
	// nil for none.
	View *Value `json:",omitempty"`
	// Tokens say which token scopes may do what with this target.
	Tokens []*ServeGrant
	// Reads maps each child id, and RemoteReads for the remote reconciler,
	// to the intent fields whose paths its expressions read, sorted: the
	// gateway names them when that child fails. Ids that read none are
	// absent.
	Reads map[string][]string `json:",omitempty"`
}

// RemoteReads is the key of Serve.Reads for what reconcile.args (and
// reconcile.api) read: the remote reconciler's children and its failures.
const RemoteReads = "remote"

// Field returns the field with the given name, or nil.
func (s *Serve) Field(name string) *ServeField {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// FieldAt returns the field whose Path is path, or nil.
func (s *Serve) FieldAt(path string) *ServeField {
	for _, f := range s.Fields {
		if f.Path != "" && f.Path == path {
			return f
		}
	}
	return nil
}

// Environments returns the values of the namespace field, sorted; nil when
// the namespace is fixed.
func (s *Serve) Environments() []string {
	if s.Namespace.From == "" {
		return nil
	}
	out := make([]string, 0, len(s.Namespace.Map))
	for k := range s.Namespace.Map {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ViewExprs returns the expressions of the view, in Blueprint order.
func (s *Serve) ViewExprs() []*Expr {
	if s == nil {
		return nil
	}
	return s.View.Exprs()
}

// FieldType is the JSON type of an intent field.
type FieldType string

// The types an intent field may have.
const (
	FieldString  FieldType = "string"
	FieldInteger FieldType = "integer"
	FieldNumber  FieldType = "number"
	FieldBoolean FieldType = "boolean"
)

// FieldTypes lists the field types, in the order docs list them.
var FieldTypes = []FieldType{FieldString, FieldInteger, FieldNumber, FieldBoolean}

// ServeField is one field of an intent.
type ServeField struct {
	Pos  Pos
	Name string
	// Path is where the value goes in the custom resource, dotted from its
	// root: "spec.repository". Empty for a field that only names the
	// custom resource or picks its namespace.
	Path string `json:",omitempty"`
	Type FieldType
	// Required fields must be sent; the others take Default, or are left
	// out of the custom resource.
	Required bool `json:",omitempty"`
	// Default is a Literal Value of Type; nil for none.
	Default *Value `json:",omitempty"`
	// Enum lists the values allowed, Literal Values of Type; nil allows any.
	Enum []*Value `json:",omitempty"`
	// Pattern is an RE2 regular expression a string must match; "" for
	// none. It is matched against the whole value, as an OpenAPI pattern
	// is: write ^ and $ to anchor it.
	Pattern string `json:",omitempty"`
	// Description is shown to callers; from the CRD when the Blueprint
	// gives none.
	Description string `json:",omitempty"`
	// Migrate moves values stored at the field's old paths to Path (inrun
	// migrate); nil when the field has always been at Path.
	Migrate *FieldMigration `json:",omitempty"`
}

// FieldMigration is a served field's migrate section: the paths its value
// was stored at before. One declaration serves both writers: the gateway
// writes Path for callers who still send the field, and inrun migrate
// moves the values custom resources hold at From to Path.
type FieldMigration struct {
	Pos Pos
	// From are the old paths, dotted from the root like Path, in the order
	// the Blueprint lists them: when a custom resource holds a value at
	// more than one, the first wins.
	From []string
	// AcceptLoss acknowledges that a move may drop a value: a custom
	// resource that holds different values at two old paths, or already
	// holds another value at Path. Without it inrun migrate apply refuses
	// to start while its plan finds such a resource.
	AcceptLoss bool `json:",omitempty"`
}

// Migrations returns the fields that have a migrate section, in Blueprint
// order; nil when none has.
func (s *Serve) Migrations() []*ServeField {
	if s == nil {
		return nil
	}
	var out []*ServeField
	for _, f := range s.Fields {
		if f.Migrate != nil {
			out = append(out, f)
		}
	}
	return out
}

// ServeName says how the custom resource's name is made: from a field
// (its value made a valid name) or generated by the gateway.
type ServeName struct {
	// From names the field whose value, lower-cased, with every run of
	// characters other than letters and digits made one "-", names the
	// custom resource: myorg/payments-api becomes myorg-payments-api.
	From string `json:",omitempty"`
	// Generate is the prefix of a generated name, when From is empty.
	Generate string `json:",omitempty"`
}

// ServeNamespace says which namespace the custom resource goes in: a fixed
// one, or one a field's value picks through a fixed mapping.
type ServeNamespace struct {
	// Name is the fixed namespace; empty when From is set.
	Name string `json:",omitempty"`
	// From names the field whose value picks the namespace through Map.
	From string `json:",omitempty"`
	// Map maps each value of From to its namespace. No two values map to
	// one namespace, so a custom resource's namespace gives its value back.
	Map map[string]string `json:",omitempty"`
}

// Verb is what a token may do with a target's intents.
type Verb string

// The verbs of the gateway.
const (
	VerbCreate Verb = "create" // create and update
	VerbGet    Verb = "get"    // read one intent's view, and watch it
	VerbList   Verb = "list"   // list intents
	VerbDelete Verb = "delete"
)

// Verbs lists every verb, in the order docs list them.
var Verbs = []Verb{VerbCreate, VerbGet, VerbList, VerbDelete}

// ServeGrant lets tokens that carry Scope use Verbs on the target, in
// Environments (values of the namespace field) or, with a fixed namespace,
// anywhere the target puts custom resources.
type ServeGrant struct {
	Pos   Pos
	Scope string
	Verbs []Verb
	// Environments limits the grant to these values of the namespace
	// field; nil means every value.
	Environments []string `json:",omitempty"`
}

// Allows reports whether the grant lets verb be used in env ("" when the
// target has a fixed namespace).
func (g *ServeGrant) Allows(verb Verb, env string) bool {
	ok := false
	for _, v := range g.Verbs {
		if v == verb {
			ok = true
		}
	}
	if !ok {
		return false
	}
	if len(g.Environments) == 0 || env == "" {
		return true
	}
	for _, e := range g.Environments {
		if e == env {
			return true
		}
	}
	return false
}
