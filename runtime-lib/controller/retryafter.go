package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inrun/inrun/runtime-lib/remote"
)

// retryAfter is the work queue's rate limiter, which also keeps the wait a
// remote reconciler asked for (Retry-After on 429 or 503): the retry of a
// custom resource whose reconcile failed that way comes no sooner than
// asked, and no later than the backoff cap.
type retryAfter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	max time.Duration
	now func() time.Time

	mu        sync.Mutex
	notBefore map[reconcile.Request]time.Time
}

func newRetryAfter(inner workqueue.TypedRateLimiter[reconcile.Request], max time.Duration) *retryAfter {
	return &retryAfter{TypedRateLimiter: inner, max: max, now: time.Now, notBefore: map[reconcile.Request]time.Time{}}
}

// When is the backoff, or the wait asked for when that is longer, at most
// the cap.
func (l *retryAfter) When(req reconcile.Request) time.Duration {
	d := l.TypedRateLimiter.When(req)
	l.mu.Lock()
	nb, ok := l.notBefore[req]
	delete(l.notBefore, req)
	l.mu.Unlock()
	if ok {
		d = max(d, min(nb.Sub(l.now()), l.max))
	}
	return d
}

func (l *retryAfter) Forget(req reconcile.Request) {
	l.TypedRateLimiter.Forget(req)
	l.mu.Lock()
	delete(l.notBefore, req)
	l.mu.Unlock()
}

// wrap has the limiter learn the wait each failed reconcile of r was
// asked for.
func (l *retryAfter) wrap(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		var rerr *remote.Error
		if errors.As(err, &rerr) && rerr.RetryAfter > 0 {
			l.mu.Lock()
			l.notBefore[req] = l.now().Add(rerr.RetryAfter)
			l.mu.Unlock()
		}
		return res, err
	})
}
