package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/inrun/inrun/gateway"
)

// TestSweep: a record whose answer has expired goes; one still fresh, and
// one whose request is in flight, stay, as does a Lease that is no record.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	c := fake.NewClientBuilder().Build()
	records := func(at time.Time, holder string, lease time.Duration) *gateway.Records {
		return &gateway.Records{Client: c, Namespace: "inrun-system", Holder: holder, TTL: time.Hour, Lease: lease, Now: func() time.Time { return at }}
	}
	begin := func(at time.Time, holder, key string, finish bool, lease time.Duration) {
		t.Helper()
		rec, _, p := records(at, holder, lease).Begin(ctx, "caller", key, "fp-"+key, "app-"+key)
		if p != nil {
			t.Fatalf("Begin(%s): %v", key, p)
		}
		if finish {
			rec.Finish(ctx, http.StatusCreated, []byte(`{}`))
		}
	}
	begin(now.Add(-3*time.Hour), "a", "old-answered", true, 0)
	begin(now.Add(-10*time.Minute), "a", "fresh", true, 0)
	begin(now.Add(-2*time.Hour), "a", "old-abandoned", false, 0) // its holder stopped
	// A request still running, under a lease longer than the TTL.
	begin(now.Add(-2*time.Hour), "a", "old-held", false, 3*time.Hour)
	other := &coordinationv1.Lease{}
	other.Name, other.Namespace = "leader", "inrun-system"
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	n, err := records(now, "sweeper", 0).Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var list coordinationv1.LeaseList
	if err := c.List(ctx, &list, client.InNamespace("inrun-system")); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range list.Items {
		if k := l.Annotations["gateway.inrun.dev/name"]; k != "" {
			left = append(left, k)
		} else {
			left = append(left, l.Name)
		}
	}
	want := map[string]bool{"app-fresh": true, "app-old-held": true, "leader": true}
	if n != 2 || len(left) != len(want) {
		t.Fatalf("Sweep deleted %d, left %v; want 2 deleted (old-answered, old-abandoned), left %v", n, left, want)
	}
	for _, k := range left {
		if !want[k] {
			t.Errorf("left %s, which had expired", k)
		}
	}
}

// TestHeldRecordIsRenewed: a request that runs longer than its lease
// keeps its key (another replica's retry is told it is in flight, not
// handed it), and once it finishes the retry gets its answer.
func TestHeldRecordIsRenewed(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	replica := func(holder string) *gateway.Records {
		return &gateway.Records{Client: c, Namespace: "inrun-system", Holder: holder, Lease: 3 * time.Second}
	}
	a, b := replica("a"), replica("b")
	rec, _, p := a.Begin(ctx, "caller", "key", "fp", "app")
	if p != nil {
		t.Fatal(p)
	}
	time.Sleep(4 * time.Second) // longer than the lease
	if _, _, p := b.Begin(ctx, "caller", "key", "fp", "app"); p == nil || p.Status != http.StatusConflict {
		t.Fatalf("a retry at another replica while the request runs past its lease: %v, want 409 in flight", p)
	}
	rec.Finish(ctx, http.StatusCreated, []byte(`{"name":"app"}`))
	_, replay, p := b.Begin(ctx, "caller", "key", "fp", "app")
	if p != nil || replay == nil || replay.Status != http.StatusCreated {
		t.Fatalf("a retry after the answer: replay %v, problem %v; want the 201", replay, p)
	}
}
