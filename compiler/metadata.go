package compiler

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// header checks apiVersion and kind.
func (d *decoder) header(top *yamlpos.Map) {
	if v, n := d.String(top, "apiVersion", true); v != "" && v != ir.APIVersion {
		d.add(d.Pos(n), diag.InvalidValue, "use apiVersion: "+ir.APIVersion, "unsupported apiVersion %q", v)
	}
	if v, n := d.String(top, "kind", true); v != "" && v != "Blueprint" {
		d.add(d.Pos(n), diag.InvalidValue, "use kind: Blueprint", "kind must be Blueprint, not %q", v)
	}
}

// metadata reads metadata.name; labels and annotations are allowed and
// kept for the tools that store Blueprints.
func (d *decoder) metadata(top *yamlpos.Map) {
	n := top.Get("metadata")
	if n == nil {
		d.add(d.Pos(top.Node), diag.MissingField, "add metadata.name", "metadata.name is required")
		return
	}
	md := d.Map(n, "metadata")
	d.Only(md, "name", "labels", "annotations")
	name, nn := d.String(md, "name", true)
	if name != "" {
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			d.add(d.Pos(nn), diag.InvalidValue, "use lower-case letters, digits and '-'", "metadata.name %q is not a DNS-1123 label: %s", name, strings.Join(msgs, "; "))
		}
	}
	d.bp.Name = name
}
