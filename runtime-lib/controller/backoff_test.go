package controller_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/inrun/inrun/runtime-lib/controller"
)

// TestRateLimiterCap: however long a custom resource has failed, its next
// retry is at most the cap away, and the cap is reached.
func TestRateLimiterCap(t *testing.T) {
	rl := controller.RateLimiter(controller.DefaultMaxBackoff)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cr"}}
	var last time.Duration
	for range 30 { // 5ms doubled 29 times is far past the cap; fewer than the bucket's burst of 100
		last = rl.When(req)
		if last > controller.DefaultMaxBackoff {
			t.Fatalf("a retry %s away; the cap is %s", last, controller.DefaultMaxBackoff)
		}
	}
	if last != controller.DefaultMaxBackoff {
		t.Errorf("after 30 failures the wait is %s, want the cap %s", last, controller.DefaultMaxBackoff)
	}
	rl.Forget(req)
	if d := rl.When(req); d > time.Second {
		t.Errorf("after a success the wait starts again at %s", d)
	}
}
