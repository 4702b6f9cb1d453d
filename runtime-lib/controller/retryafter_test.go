package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inrun/inrun/runtime-lib/remote"
)

// TestRetryAfterIsHonoured: a reconcile that failed because the reconciler
// asked to be called again later is retried no sooner than it asked, and
// no later than the cap; other failures keep the usual backoff.
func TestRetryAfterIsHonoured(t *testing.T) {
	const ceiling = 10 * time.Second
	now := time.Unix(1000, 0)
	l := newRetryAfter(RateLimiter(ceiling), ceiling)
	l.now = func() time.Time { return now }
	var fail error
	rec := l.wrap(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, fail }))
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cr"}}

	for _, tc := range []struct {
		err      error
		min, max time.Duration
	}{
		{err: fmt.Errorf("remote reconciler: %w", &remote.Error{Kind: remote.HTTPStatus, Status: 429, RetryAfter: 3 * time.Second}), min: 3 * time.Second, max: 3 * time.Second},
		{err: &remote.Error{Kind: remote.HTTPStatus, Status: 503, RetryAfter: time.Hour}, min: ceiling, max: ceiling},
		{err: &remote.Error{Kind: remote.HTTPStatus, Status: 500}, max: time.Second},
	} {
		l.Forget(req)
		fail = tc.err
		if _, err := rec.Reconcile(context.Background(), req); err != tc.err {
			t.Fatalf("the wrapped reconciler returned %v, want %v", err, tc.err)
		}
		if d := l.When(req); d < tc.min || d > tc.max {
			t.Errorf("%v: retried after %s, want %s to %s", tc.err, d, tc.min, tc.max)
		}
		// The wait asked for holds for the next retry only.
		if d := l.When(req); d > time.Second {
			t.Errorf("%v: the retry after that waits %s", tc.err, d)
		}
	}
}
