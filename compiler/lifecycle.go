package compiler

import (
	"github.com/Masterminds/semver/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// lifecycle reads the lifecycle section: lifecycle.deprecation, which the
// pattern registry carries on the pushed pattern (see docs/registry.md).
func (d *decoder) lifecycle(top *yamlpos.Map) {
	n := top.Get("lifecycle")
	if n == nil {
		return
	}
	lc := d.Map(n, "lifecycle")
	d.Only(lc, "deprecation")
	dn := lc.Get("deprecation")
	if lc == nil || dn == nil {
		return
	}
	dm := d.Map(dn, "lifecycle.deprecation")
	if dm == nil {
		return
	}
	d.Only(dm, "message", "replacement", "after", "versions")
	dep := &ir.Deprecation{Pos: d.Pos(d.Key(dn))}
	dep.Message, _ = d.Required(dm, "message", "say in one line why, and what to do instead")
	dep.Replacement, _ = d.String(dm, "replacement", false)
	if an := dm.Get("after"); an != nil && !yamlpos.IsNull(an) {
		dep.After, _ = d.Date(an, "lifecycle.deprecation.after")
	}
	if v, vn := d.String(dm, "versions", false); v != "" {
		if _, err := semver.NewConstraint(v); err != nil {
			d.add(d.Pos(vn), diag.InvalidValue, `write a semver constraint, such as "<2.0.0", ">=1.0.0 <1.4.0" or "*" for every version`, "lifecycle.deprecation.versions %q is not a version constraint: %v", v, err)
		} else {
			dep.Versions = v
		}
	}
	d.bp.Lifecycle = &ir.Lifecycle{Deprecation: dep}
}
