package simpleschema

import (
	"strings"

	"github.com/gobuffalo/flect"
)

// Plural is the resource name of kind when a schema names none: lower
// case, English plural (webapps, chainchildren, internetgateways), as
// kro and kubebuilder name a CRD's plural.
func Plural(kind string) string {
	return flect.Pluralize(strings.ToLower(kind))
}
