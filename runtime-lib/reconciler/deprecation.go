package reconciler

import (
	"reflect"
	"sync"

	"github.com/inrun/inrun/ir"
)

// DeprecationHolder holds whether the pattern version a Blueprint runs as
// is deprecated, and lets whoever watches the registry change it while
// the Blueprint runs (inrun run --pattern-poll). The reconciler reads it
// on every pass, so a change needs no restart; the controller reconciles
// every custom resource again when it changes. Safe for concurrent use.
type DeprecationHolder struct {
	mu sync.Mutex
	d  *ir.Deprecated
	// changed is closed, and replaced, when d changes.
	changed chan struct{}
}

// NewDeprecationHolder returns a holder of d; nil: not deprecated.
func NewDeprecationHolder(d *ir.Deprecated) *DeprecationHolder {
	return &DeprecationHolder{d: d, changed: make(chan struct{})}
}

// Deprecated returns the deprecation now, nil when there is none. The
// caller must not change it.
func (h *DeprecationHolder) Deprecated() *ir.Deprecated {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.d
}

// Changed returns a channel closed when the deprecation next changes.
func (h *DeprecationHolder) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// Set replaces the deprecation and reports whether it changed. The holder
// keeps d: the caller must not change it afterwards.
func (h *DeprecationHolder) Set(d *ir.Deprecated) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reflect.DeepEqual(h.d, d) {
		return false
	}
	h.d = d
	close(h.changed)
	h.changed = make(chan struct{})
	return true
}
