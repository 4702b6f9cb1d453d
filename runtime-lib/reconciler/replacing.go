package reconciler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A remote reconciler must answer the same request with the same children.
// One that names a child anew on every call (a timestamp or a random
// suffix in the name) never settles: each call creates a child and prunes
// the one the call before created, and the events of both wake the custom
// resource again, so it is called as fast as the cluster answers. The
// runtime notices the pattern and calls such a reconciler with a growing
// delay instead, saying why in Degraded.
const (
	// replacingAfter is how many calls in a row must prune a child the
	// call before created before the calls are spaced out: a blue/green
	// switch replaces a child once, not on every call.
	replacingAfter = 3
	// replacingFirstDelay and replacingMaxDelay bound the wait between
	// calls, doubled on every pass that replaces a child again.
	replacingFirstDelay = time.Second
	replacingMaxDelay   = 5 * time.Minute
)

// replacing is what the passes of one custom resource learnt of the
// children its reconciler replaces. Kept only while there is something to
// remember: a reconciler that settled has none.
type replacing struct {
	// generation is the custom resource's when fresh was recorded: an
	// edit of the spec may rename children, and restarts the count.
	generation int64
	// fresh lists the children the last call returned that did not exist
	// before it.
	fresh []string
	// times counts the calls in a row that pruned a child the call before
	// had just introduced. A rolling replacement prunes children older
	// than that; a reconciler that names its child anew on every call
	// prunes the one of the call before, every time.
	times int
	// until is when the reconciler may be called again.
	until time.Time
}

// replacingHeld reports whether this pass must not call the reconciler
// yet, as it replaced its children on every call of late. The children
// stay, and Degraded keeps saying why.
func (p *pass) replacingHeld() bool {
	if p.wf != nil {
		return false // a workflow's steps replace children by design, and end
	}
	v, ok := p.replaced.Load(echoKey(p.cr))
	if !ok {
		return false
	}
	s := v.(*replacing)
	left := s.until.Sub(p.opts.Clock())
	if s.generation != p.cr.GetGeneration() || left <= 0 {
		return false
	}
	if p.rep.RequeueAfter == 0 || left < p.rep.RequeueAfter {
		p.rep.RequeueAfter = left
	}
	p.rep.Errors = append(p.rep.Errors, s.err())
	return true
}

// noteReplaced records, after a pass that called the reconciler, which
// children the call introduced, and whether the pass pruned children the
// call before introduced: past replacingAfter such calls in a row, the
// next call waits.
func (p *pass) noteReplaced() {
	if p.wf != nil || !p.remoteState.called {
		return
	}
	key := echoKey(p.cr)
	s := &replacing{generation: p.cr.GetGeneration()}
	for label, k := range p.wanted {
		if strings.HasPrefix(label, remotePrefix) && !slices.ContainsFunc(p.observed[label], func(o *unstructured.Unstructured) bool { return keyOf(o) == k }) {
			s.fresh = append(s.fresh, k.String())
		}
	}
	if v, ok := p.replaced.Load(key); ok {
		last := v.(*replacing)
		if last.generation == s.generation && slices.ContainsFunc(p.rep.Pruned, func(k string) bool { return slices.Contains(last.fresh, k) }) {
			s.times = last.times + 1
		}
	}
	if s.times == 0 && len(s.fresh) == 0 {
		p.replaced.Delete(key)
		return
	}
	if s.times >= replacingAfter {
		delay := min(replacingFirstDelay<<min(s.times-replacingAfter, 16), replacingMaxDelay)
		s.until = p.opts.Clock().Add(delay)
		if p.rep.RequeueAfter == 0 || delay < p.rep.RequeueAfter {
			p.rep.RequeueAfter = delay
		}
		err := s.err()
		p.rep.Errors = append(p.rep.Errors, err)
		p.opts.Recorder.Eventf(p.cr, nil, corev1.EventTypeWarning, "ChildrenReplaced", "Reconcile", "%v (this call pruned %s)",
			err, strings.Join(p.rep.Pruned, ", "))
	}
	p.replaced.Store(key, s)
}

// err says what the reconciler does wrong, and when it is called again:
// the same words on every pass until then, so that Degraded is written
// once.
func (s *replacing) err() error {
	return fmt.Errorf("the reconciler replaced the child the call before created on %d calls in a row while the custom resource did not change: "+
		"a reconciler must answer the same request with the same children (a stable metadata.name, or an id); it is called again at %s",
		s.times, s.until.UTC().Format(time.RFC3339))
}
