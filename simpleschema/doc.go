// Package simpleschema reads kro's SimpleSchema, the short form of an
// OpenAPI schema, into apiextensions/v1 JSONSchemaProps: the schema a
// CustomResourceDefinition's version holds.
//
// A field is a YAML key whose value is either a map of fields (an object)
// or a string: a type, then optionally "|" and markers,
//
//	image: string | default="nginx:1.27" description="The image to serve"
//	replicas: integer | default=2 minimum=0
//	ports: "[]integer"
//	labels: "map[string]string"
//
// The types are string, integer, boolean, float (kro's name; number is the
// OpenAPI one and means the same), object (anything, kept as written), []T,
// map[string]T, and the names a types: section declares. The markers are
// kro's: required, default, description, enum, minimum, maximum, pattern,
// minLength, maxLength, minItems, maxItems, uniqueItems, listType,
// listMapKey, validation and immutable.
//
// ParseField reads one field string and reports problems at byte offsets in
// it. A Parser reads whole YAML maps through internal/yamlpos: it reports
// every problem at once as an internal/diag diagnostic at the line and
// column it concerns (the marker in the string, not just the field), and
// remembers where each field and marker is written, so that a later check
// of the generated schema (the API server's own, say) can point back at the
// source.
//
// The package reads schemas only: building a CustomResourceDefinition
// around them is the caller's (the compiler's, for a Blueprint's schema:
// section).
package simpleschema
