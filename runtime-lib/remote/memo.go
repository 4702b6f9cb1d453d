package remote

import (
	"crypto/sha256"
	"sync"

	"github.com/inrun/inrun/sdk"
)

// memo keeps, per custom resource, the last successful Result and the
// sha256 of the canonical JSON of the request it answered: an equal
// request gets it back without calling the reconciler. Every Caller that
// speaks the contract (Client over HTTP, Go in the binary) uses it, so
// that "nothing changed, nothing sent" means the same for all of them.
type memo struct {
	mu sync.Mutex
	m  map[sdk.ObjectRef]memoEntry
}

type memoEntry struct {
	sum    [sha256.Size]byte
	result *sdk.Result
}

// memoKey is one request as the memo sees it.
type memoKey struct {
	ref sdk.ObjectRef
	sum [sha256.Size]byte
	// use is false for a request whose Result is never reused: a
	// finalizing one, or any when caching is off.
	use bool
}

// key returns the memo's key of req, whose canonical JSON is body.
func (m *memo) key(req *sdk.Request, body []byte, disabled bool) memoKey {
	return memoKey{ref: sdk.Resource{Object: req.Object}.Ref(), sum: sha256.Sum256(body), use: !disabled && !req.Finalizing}
}

// get returns a copy of the Result kept for k, marked Cached, or nil.
func (m *memo) get(k memoKey) *Result {
	if !k.use {
		return nil
	}
	m.mu.Lock()
	e, ok := m.m[k.ref]
	m.mu.Unlock()
	if !ok || e.sum != k.sum {
		return nil
	}
	return &Result{Result: *e.result.DeepCopy(), Cached: true}
}

// put keeps res for k. A failure, a Result that asks for a requeue or a
// finalizing request drops what was kept instead: the next request must
// reach the reconciler whatever it holds.
func (m *memo) put(k memoKey, res *sdk.Result, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil || !k.use || res.RequeueAfter != 0 {
		delete(m.m, k.ref)
		return
	}
	if m.m == nil {
		m.m = map[sdk.ObjectRef]memoEntry{}
	}
	m.m[k.ref] = memoEntry{sum: k.sum, result: res.DeepCopy()}
}

// forget drops what is kept for ref.
func (m *memo) forget(ref sdk.ObjectRef) {
	m.mu.Lock()
	delete(m.m, ref)
	m.mu.Unlock()
}
