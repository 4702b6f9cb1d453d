package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func newMember(t *testing.T, c client.Client, id string) *Member {
	t.Helper()
	m, err := New(c, Options{Group: "inrun-app", ID: id, Namespace: "default", LeaseDuration: time.Hour, RenewPeriod: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newLeaseClient is a fake client for the members' Leases.
func newLeaseClient() client.Client {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	return fake.NewClientBuilder().WithScheme(s).Build()
}

// mustStep runs one renew-and-assign step of m, failing the test on an
// error.
func mustStep(ctx context.Context, t *testing.T, m *Member) {
	t.Helper()
	if err := m.step(ctx); err != nil {
		t.Fatal(err)
	}
}

// newPair makes members a and b of one group, and step, which runs one
// step of either and then checks that no bucket is active in both.
func newPair(t *testing.T) (a, b *Member, step func(*Member)) {
	c := newLeaseClient()
	a, b = newMember(t, c, "a"), newMember(t, c, "b")
	return a, b, func(m *Member) {
		t.Helper()
		mustStep(context.Background(), t, m)
		exclusive(t, a, b)
	}
}

// exclusive fails the test if a bucket is active in two members at once.
func exclusive(t *testing.T, ms ...*Member) {
	t.Helper()
	owner := map[int]string{}
	for _, m := range ms {
		for _, b := range m.Active() {
			if other, ok := owner[b]; ok {
				t.Fatalf("bucket %d is active in %s and %s", b, other, m.ID())
			}
			owner[b] = m.ID()
		}
	}
}

// TestDrainHandshake steps two members by hand through a join: a bucket
// with a reconcile in flight stays with its old member until the reconcile
// ends, and only then moves; no bucket is ever active in both.
func TestDrainHandshake(t *testing.T) {
	a, b, step := newPair(t)

	step(a) // a joins: it claims nothing in its first period
	if n := len(a.Active()); n != 0 {
		t.Fatalf("a claimed %d buckets in its first period", n)
	}
	step(a)
	if n := len(a.Active()); n != DefaultBuckets {
		t.Fatalf("alone, a is active in %d buckets, want all %d", n, DefaultBuckets)
	}
	// A custom resource in a bucket that will go to b, mid-reconcile in a.
	toB := map[int]bool{}
	for _, bk := range Assign([]string{"a", "b"}, DefaultBuckets)["b"] {
		toB[bk] = true
	}
	var uid types.UID
	for i := 0; ; i++ {
		uid = types.UID(fmt.Sprintf("uid-%d", i))
		if toB[Bucket(uid, DefaultBuckets)] {
			break
		}
	}
	release, ok := a.Admit(uid)
	if !ok {
		t.Fatal("a does not admit a custom resource of its bucket")
	}
	gained := b.Changed()

	step(b) // b joins: everything is held by a
	step(b)
	if n := len(b.Active()); n != 0 {
		t.Fatalf("b is active in %d buckets a still holds", n)
	}
	step(a) // a sees b, drains what it lost; one bucket has a reconcile in flight
	if _, ok := a.Admit(uid); ok {
		t.Fatal("a admits a new reconcile of a bucket it lost")
	}
	step(b) // b takes the drained buckets, not the busy one
	if b.Owns(uid) {
		t.Fatal("b took a bucket whose reconcile is still in flight in a")
	}
	if n := len(b.Active()); n != len(toB)-1 {
		t.Fatalf("b is active in %d buckets, want %d (all its own but the busy one)", n, len(toB)-1)
	}
	select {
	case <-gained:
	default:
		t.Fatal("b did not report its gain")
	}

	release()
	step(a) // drained now: a lets it go
	step(b)
	if !b.Owns(uid) {
		t.Fatal("b did not take the bucket once a's reconcile ended")
	}
	if n := len(a.Active()) + len(b.Active()); n != DefaultBuckets {
		t.Fatalf("%d buckets active in all, want %d", n, DefaultBuckets)
	}
}

// TestExpiredLeaseHoldsNothing checks that the buckets of a member that
// stopped renewing go to the others once its Lease expires, and not before.
func TestExpiredLeaseHoldsNothing(t *testing.T) {
	ctx := context.Background()
	c := newLeaseClient()
	a, b := newMember(t, c, "a"), newMember(t, c, "b")
	for _, m := range []*Member{a, b, a, b} {
		mustStep(ctx, t, m)
	}
	exclusive(t, a, b)
	if len(a.Active()) == 0 || len(a.Active())+len(b.Active()) != DefaultBuckets {
		t.Fatalf("a has %d, b has %d buckets", len(a.Active()), len(b.Active()))
	}
	// a stops; b keeps stepping. Its view of a's Lease ages past the duration.
	mustStep(ctx, t, b)
	if n := len(b.Active()); n == DefaultBuckets {
		t.Fatal("b took a's buckets while a's Lease was live")
	}
	for name, o := range b.seen {
		o.at = o.at.Add(-b.opts.LeaseDuration)
		b.seen[name] = o
	}
	mustStep(ctx, t, b)
	if n := len(b.Active()); n != DefaultBuckets {
		t.Fatalf("after a's Lease expired b has %d buckets, want %d", n, DefaultBuckets)
	}
}

// TestSameIDWaits gives two processes one ID: the second claims nothing
// while the first one's Lease is live, and takes over once it expires.
func TestSameIDWaits(t *testing.T) {
	ctx := context.Background()
	c := newLeaseClient()
	first, second := newMember(t, c, "a"), newMember(t, c, "a")
	for range 2 {
		if err := first.step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(first.Active()); n != DefaultBuckets {
		t.Fatalf("first has %d buckets, want %d", n, DefaultBuckets)
	}
	for range 2 {
		if err := second.step(ctx); err == nil {
			t.Fatal("second stepped without error on a Lease another process holds")
		}
	}
	if n := len(second.Active()); n != 0 {
		t.Fatalf("second took %d buckets of a live Lease of its ID", n)
	}
	// first stops; once its Lease has aged past the duration, second takes it.
	for name, o := range second.seen {
		o.at = o.at.Add(-second.opts.LeaseDuration)
		second.seen[name] = o
	}
	for range 2 {
		if err := second.step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(second.Active()); n != DefaultBuckets {
		t.Fatalf("after first's Lease expired second has %d buckets, want %d", n, DefaultBuckets)
	}
}

// TestSameIDLeavesTheOtherLease: a second process given the ID of a live
// one, stopped while it waits, keeps the first one's Lease (it deleted it,
// and the first had to make it again while the others took its buckets).
func TestSameIDLeavesTheOtherLease(t *testing.T) {
	ctx := context.Background()
	c := newLeaseClient()
	first, second := newMember(t, c, "a"), newMember(t, c, "a")
	first.opts.ReleaseOnCancel, second.opts.ReleaseOnCancel = true, true
	mustStep(ctx, t, first)
	if err := second.step(ctx); err == nil {
		t.Fatal("second stepped without error on a Lease another process holds")
	}
	if err := second.leave(); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: first.opts.Namespace, Name: first.name}, lease); err != nil {
		t.Fatalf("the first process's Lease after the second left: %v", err)
	}
	if err := first.leave(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: first.opts.Namespace, Name: first.name}, lease); !apierrors.IsNotFound(err) {
		t.Fatalf("the first process left, and its Lease: %v; want it deleted", err)
	}
}

// TestLeaderElectedReplicaHoldsEverything: while the group's
// leader-election Lease is held (a replica run without --shards, in a
// Deployment rolling to --shards), a member claims no bucket; once it is
// released, the member claims them all. Both reconciled every custom
// resource, and applied each child in turn.
func TestLeaderElectedReplicaHoldsEverything(t *testing.T) {
	ctx := context.Background()
	c := newLeaseClient()
	a := newMember(t, c, "a")
	holder, secs := "old-pod", int32(15)
	leader := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: a.opts.Namespace, Name: a.opts.Group}}
	leader.Spec.HolderIdentity, leader.Spec.LeaseDurationSeconds = &holder, &secs
	if err := c.Create(ctx, leader); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustStep(ctx, t, a)
	}
	if n := len(a.Active()); n != 0 {
		t.Fatalf("a holds %d buckets while a leader-elected replica runs, want none", n)
	}
	// The old replica stops: client-go empties the holder as it releases.
	empty := ""
	leader.Spec.HolderIdentity = &empty
	if err := c.Update(ctx, leader); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		mustStep(ctx, t, a)
	}
	if n := len(a.Active()); n != DefaultBuckets {
		t.Fatalf("a holds %d buckets after the leader left, want %d", n, DefaultBuckets)
	}
}

// TestUnrenewedLeaseShowsInTheGauge: a member that cannot renew its Lease
// for two thirds of its duration stops admitting reconciles, and its
// active-buckets gauge says 0 at once (it stayed at 256 through an API
// server outage).
func TestUnrenewedLeaseShowsInTheGauge(t *testing.T) {
	ctx := context.Background()
	a := newMember(t, newLeaseClient(), "gauge")
	for range 2 {
		mustStep(ctx, t, a)
	}
	active := bucketsMetric.WithLabelValues("gauge", "active")
	if got := testutil.ToFloat64(active); got != DefaultBuckets {
		t.Fatalf("active gauge %v, want %d", got, DefaultBuckets)
	}
	a.mu.Lock()
	a.renewed = time.Now().Add(-a.opts.LeaseDuration)
	a.mu.Unlock()
	a.checkDeadline()
	if n := len(a.Active()); n != 0 {
		t.Fatalf("%d buckets active after the Lease went unrenewed", n)
	}
	if got := testutil.ToFloat64(active); got != 0 {
		t.Errorf("active gauge %v after the Lease went unrenewed, want 0", got)
	}
}

// TestPinnedEpoch steps two members by hand through a join with a's
// buckets pinned, as Epochs pins those of an ActiveOnly epoch: a's lost
// buckets stop being active at once (which an ActiveOnly Epochs sees, so
// that it stops the epoch), but none moves to b until the pin is dropped;
// then b takes its share.
func TestPinnedEpoch(t *testing.T) {
	ctx := context.Background()
	a, b, step := newPair(t)
	step(a)
	step(a)
	pinned, known, unpin := a.PinActive()
	if !known || len(pinned) != DefaultBuckets {
		t.Fatalf("a pinned %d buckets (known %v), want all %d", len(pinned), known, DefaultBuckets)
	}
	lost := a.ActiveChanged()
	step(b)
	step(b)
	step(a) // a sees b and loses b's share, pinned
	select {
	case <-lost:
	default:
		t.Fatal("a did not report the buckets it lost")
	}
	share := len(Assign([]string{"a", "b"}, DefaultBuckets)["b"])
	if n := len(a.Active()); n != DefaultBuckets-share {
		t.Fatalf("a is active in %d buckets, want %d", n, DefaultBuckets-share)
	}
	e := &Epochs{Member: a, Settle: 10 * time.Millisecond, ActiveOnly: true}
	if next, err := e.next(ctx, pinned, true, nil); err != nil || !slices.Equal(next, a.Active()) {
		t.Fatalf("the next ActiveOnly epoch of a caches %d buckets (%v), want its %d active ones", len(next), err, DefaultBuckets-share)
	}
	step(b)
	if n := len(b.Active()); n != 0 {
		t.Fatalf("b took %d buckets whose epoch still runs in a", n)
	}
	if a.idle() {
		t.Fatal("a is idle with its epoch's buckets pinned: it would leave under a running epoch")
	}

	gained := b.ActiveChanged()
	unpin()
	unpin() // a second call changes nothing
	step(a)
	step(b)
	if n := len(b.Active()); n != share {
		t.Fatalf("b is active in %d buckets once a's epoch stopped, want %d", n, share)
	}
	select {
	case <-gained:
	default:
		t.Fatal("b did not report the buckets it gained")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for bk, n := range a.pinned {
		if n != 0 {
			t.Fatalf("bucket %d is still pinned %d times after unpin", bk, n)
		}
	}
}

// TestQuiesce: while quiesced, a member turns every reconcile away, and
// Quiesce returns once the reconcile admitted before has ended (or its
// context is done); after resume, reconciles are admitted again.
func TestQuiesce(t *testing.T) {
	a, _, step := newPair(t)
	step(a)
	step(a)
	release, ok := a.Admit("uid-1")
	if !ok {
		t.Fatal("a alone does not admit a reconcile")
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if resume := a.Quiesce(short); short.Err() == nil {
		t.Fatal("Quiesce returned while a reconcile was in flight, before its context was done")
	} else {
		resume()
	}

	quiesced := make(chan func())
	go func() { quiesced <- a.Quiesce(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	if _, ok := a.Admit("uid-2"); ok {
		t.Fatal("a admits a reconcile while quiescing")
	}
	select {
	case <-quiesced:
		t.Fatal("Quiesce returned while a reconcile was in flight")
	default:
	}
	release()
	var resume func()
	select {
	case resume = <-quiesced:
	case <-time.After(5 * time.Second):
		t.Fatal("Quiesce did not return once the reconcile in flight ended")
	}
	if _, ok := a.Admit("uid-3"); ok {
		t.Fatal("a admits a reconcile before resume")
	}
	resume()
	resume() // a second call changes nothing
	done, ok := a.Admit("uid-4")
	if !ok {
		t.Fatal("a does not admit reconciles after resume")
	}
	done()
	if a.quiesced != 0 {
		t.Fatalf("quiesced = %d after every resume", a.quiesced)
	}
}
