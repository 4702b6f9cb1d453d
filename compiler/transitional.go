package compiler

import (
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// The transitional CRD. While a served field moves (migrate.from), the CRD
// generated from the schema section serves both paths, so that old writers
// (sending the old path) and new ones (the gateway, sending the new path)
// both keep working:
//
//   - the old path stays as the schema section declares it (it is the old
//     schema: the compiler checks every migrate.from against it, so a typo
//     is an error rather than a new, empty path, while the API server
//     prunes the values at the real one), and its description is marked
//     deprecated;
//   - the new path is not required, since an old writer does not send it
//     (the served field's required still holds for the gateway's callers);
//   - no CEL rule ties the two paths together: both shapes are admitted.
//
// inrun clean removes the old paths from the installed CRD once every
// object is moved; the author then removes them, and migrate.from, from the
// Blueprint. A crd.file is the author's: it is checked, never changed.

// DeprecatedPrefix starts the description of an old path in a transitional
// CRD.
const DeprecatedPrefix = "Deprecated: "

// transitional marks old path p of field f deprecated in the schema
// section's CRD and lifts the requirement on f.Path. A path the section
// does not declare is left for migrateFrom to report.
func (d *decoder) transitional(p string, f *ir.ServeField) {
	s := d.short
	if s == nil || s.root == nil {
		return
	}
	spec, ok := s.root.Properties["spec"]
	if !ok {
		return
	}
	note := DeprecatedPrefix + "moved to " + f.Path + "; inrun clean removes it once inrun migrate has moved every value."
	if !deprecate(&spec, strings.Split(p, ".")[1:], note) {
		return
	}
	unrequire(&spec, strings.Split(f.Path, ".")[1:])
	s.root.Properties["spec"] = spec
	if st, err := expr.ResourceSchema(s.root); err == nil {
		d.self = st
	}
}

// deprecate prefixes note to the description of the path segs under s,
// unless it already says it is deprecated. It returns false when s has no
// such path.
func deprecate(s *apiextensionsv1.JSONSchemaProps, segs []string, note string) bool {
	next, ok := s.Properties[segs[0]]
	switch {
	case !ok:
		return false
	case len(segs) > 1:
		if !deprecate(&next, segs[1:], note) {
			return false
		}
	case !strings.HasPrefix(strings.ToLower(next.Description), "deprecated"):
		next.Description = strings.TrimSpace(note + " " + next.Description)
	}
	s.Properties[segs[0]] = next
	return true
}

// unrequire removes the path segs, and the objects above it, from the
// required lists on the way: an old writer sends none of them.
func unrequire(s *apiextensionsv1.JSONSchemaProps, segs []string) {
	s.Required = slices.DeleteFunc(slices.Clone(s.Required), func(r string) bool { return r == segs[0] })
	if len(s.Required) == 0 {
		s.Required = nil
	}
	next, ok := s.Properties[segs[0]]
	if !ok || len(segs) == 1 {
		return
	}
	unrequire(&next, segs[1:])
	s.Properties[segs[0]] = next
}
