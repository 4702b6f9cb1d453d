package shard

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestWantedAndEpochs steps two members by hand through a join and checks
// what the epochs of the first would cache: nothing before it has read
// the Leases, everything while alone, still everything while a lost
// bucket drains (its Lease holds it), then only its own share; and that
// Epochs.next waits for that and reports a running epoch that stopped.
func TestWantedAndEpochs(t *testing.T) {
	ctx := context.Background()
	c := newLeaseClient()
	a, b := newMember(t, c, "a"), newMember(t, c, "b")
	if _, known := a.Wanted(); known {
		t.Fatal("a knows its buckets before reading the Leases")
	}
	e := &Epochs{Member: a, Settle: 20 * time.Millisecond}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if _, err := e.next(short, nil, false, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the first epoch started before a read the Leases: %v", err)
	}
	cancel()

	changed := a.WantedChanged()
	mustStep(ctx, t, a)
	select {
	case <-changed:
	default:
		t.Fatal("the first read did not report a's wanted buckets")
	}
	all, _ := a.Wanted()
	if len(all) != DefaultBuckets {
		t.Fatalf("alone, a wants %d buckets, want %d", len(all), DefaultBuckets)
	}
	first, err := e.next(ctx, nil, false, nil)
	if err != nil || !slices.Equal(first, all) {
		t.Fatalf("the first epoch caches %d buckets (%v), want all", len(first), err)
	}
	mustStep(ctx, t, a)

	mustStep(ctx, t, b)
	mustStep(ctx, t, b)
	own := Assign([]string{"a", "b"}, DefaultBuckets)["a"]
	// A reconcile in flight in a bucket a loses keeps it held.
	var busy int
	for bk := 0; bk < DefaultBuckets; bk++ {
		if !slices.Contains(own, bk) {
			busy = bk
			break
		}
	}
	a.mu.Lock()
	a.inflight[busy]++
	a.mu.Unlock()
	mustStep(ctx, t, a)
	if w, _ := a.Wanted(); !slices.Contains(w, busy) || len(w) != len(own)+1 {
		t.Fatalf("a wants %d buckets while bucket %d drains, want its %d and that one", len(w), busy, len(own))
	}
	a.mu.Lock()
	a.inflight[busy]--
	a.mu.Unlock()
	mustStep(ctx, t, a)
	if w, _ := a.Wanted(); !slices.Equal(w, own) {
		t.Fatalf("a wants %d buckets once drained, want its %d", len(w), len(own))
	}
	next, err := e.next(ctx, first, true, nil)
	if err != nil || !slices.Equal(next, own) {
		t.Fatalf("the next epoch caches %d buckets (%v), want a's %d", len(next), err, len(own))
	}

	done := make(chan error, 1)
	done <- errors.New("cache failed")
	var ended *epochEnded
	if _, err := e.next(ctx, own, true, done); !errors.As(err, &ended) {
		t.Fatalf("a running epoch that failed was not reported: %v", err)
	}
}
