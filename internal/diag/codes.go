package diag

import "fmt"

// Code identifies a class of diagnostic. Codes are stable: new ones are only
// ever appended, never renumbered or reused, so that tests, docs and users
// can rely on them. The first five are the decoding problems every file
// format shares.
type Code int

const (
	_ Code = iota

	// InvalidYAML: the file is not YAML, or not a single YAML document.
	InvalidYAML
	// UnknownField: a field the format does not define.
	UnknownField
	// WrongType: a field holds the wrong kind of YAML value.
	WrongType
	// MissingField: a required field is absent or empty.
	MissingField
	// InvalidValue: a field has a value outside what is allowed.
	InvalidValue

	// DuplicateID: two children of a Blueprint share an id.
	DuplicateID
	// InvalidID: an id is not a lower-camel-case identifier, or is reserved.
	InvalidID
	// UnknownReference: an expression names a child or variable that does
	// not exist.
	UnknownReference
	// Cycle: children reference each other in a cycle, or Blueprints use
	// each other (uses:) in one.
	Cycle
	// UnknownKind: a kind is neither built in nor one the Blueprint knows
	// (its own, or one it uses).
	UnknownKind
	// MissingCRDFile: crd.file names a file that cannot be read.
	MissingCRDFile
	// InvalidCRD: the CRD manifest is not a usable CustomResourceDefinition.
	InvalidCRD

	// ExprSyntax: an expression does not parse, or ${ is not closed.
	ExprSyntax
	// ExprType: an expression does not type-check.
	ExprType
	// ExprResultType: an expression's type does not fit where it is used.
	ExprResultType

	// TemplateUnknownField: a template sets a field its kind does not have.
	TemplateUnknownField
	// TemplateWrongType: a template literal has the wrong type for its field.
	TemplateWrongType

	// NotImplemented: a section the language reserves that this version of
	// Inrun does not implement yet. No section is reserved at the moment;
	// the code stays for the next one.
	NotImplemented
	// UnreadableFile: a file the input names (a CR, a manifest) cannot be
	// read or parsed.
	UnreadableFile
	// DuplicateName: two entries that must be told apart by name (test
	// cases, say) share one.
	DuplicateName

	// UnknownType: a short schema's field names a type that is neither
	// built in nor declared in its types.
	UnknownType

	// NotConvertible: a construct of another tool's format (a kro
	// ResourceGraphDefinition) that a Blueprint cannot express; an import
	// lists it and converts the rest.
	NotConvertible

	// UnknownComponent: a Blueprint names Go code (reconcile.go) that the
	// inrun checking it does not have compiled in.
	UnknownComponent

	// UnresolvedPattern: a pattern a Stack (or inrun run) names cannot be
	// resolved to a verified version: no such pattern, no version that
	// meets the constraint, or no proof that verifies.
	UnresolvedPattern
	// DeprecatedPattern: the version a Stack resolves to is deprecated, and
	// the Stack does not accept it, or its acceptance has lapsed.
	DeprecatedPattern
)

// String renders the code as it appears in messages: E followed by four
// digits.
func (c Code) String() string { return fmt.Sprintf("E%04d", int(c)) }
