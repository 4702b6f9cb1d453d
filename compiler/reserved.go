package compiler

import (
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
)

// reservedSections are sections the language names for subsystems this
// version does not implement, with what each will do. Until one is
// implemented (and typed in the IR), using it is an error: a Blueprint
// that sets it would otherwise run without what it asks for.
// None is reserved at the moment.
var reservedSections = []struct{ key, what string }{}

// reserved reports every reserved section that is set.
func (d *decoder) reserved(top *yamlpos.Map) {
	for _, s := range reservedSections {
		if k := top.KeyNode(s.key); k != nil {
			d.add(d.Pos(k), diag.NotImplemented, "remove it: this version of Inrun would ignore it", "%s is not implemented yet: it is reserved for %s", s.key, s.what)
		}
	}
}
