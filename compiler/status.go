package compiler

import (
	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
)

// status reads emit.status: the fields written under the custom resource's
// .status beside the runtime's conditions.
func (d *decoder) status(top *yamlpos.Map) {
	n := top.Get("emit")
	if n == nil {
		return
	}
	o := d.Map(n, "emit")
	d.Only(o, "status")
	if s := o.Get("status"); s != nil {
		if s.Kind != yaml.MappingNode {
			d.add(d.Pos(s), diag.WrongType, "", "emit.status must be a map, not %s", describe(s))
			return
		}
		d.bp.Status = d.value(s)
		for _, f := range d.bp.Status.Fields {
			if f.Key == "conditions" || f.Key == "observedGeneration" {
				d.add(f.KeyPos, diag.InvalidValue, "choose another name", "emit.status.%s is written by the runtime", f.Key)
			}
		}
	}
}
