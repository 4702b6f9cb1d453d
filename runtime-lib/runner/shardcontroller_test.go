package runner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components/componentstest"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/runtime-lib/shard"
)

// calls counts, per custom resource, the calls in flight across replicas,
// the most ever at once, and which replica made the last one. Each call
// takes the time took.
type calls struct {
	took        time.Duration
	mu          sync.Mutex
	inflight    map[string]int
	maxInflight map[string]int
	last        map[string]string
}

func newCalls(took time.Duration) *calls {
	return &calls{took: took, inflight: map[string]int{}, maxInflight: map[string]int{}, last: map[string]string{}}
}

// call counts a call of replica for name, waits took, and returns what
// ends it.
func (c *calls) call(replica, name string) (done func()) {
	c.mu.Lock()
	c.inflight[name]++
	c.maxInflight[name] = max(c.maxInflight[name], c.inflight[name])
	c.mu.Unlock()
	time.Sleep(c.took)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.inflight[name]--
		c.last[name] = replica
	}
}

// of is replica's componentstest.GuestbookOptions.Calling.
func (c *calls) of(replica string) func(name string) func() {
	return func(name string) func() { return c.call(replica, name) }
}

// checkOnceAtATime fails the test for each of names that had two calls in
// flight at once.
func (c *calls) checkOnceAtATime(t *testing.T, names []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		if c.maxInflight[n] != 1 {
			t.Errorf("%s had %d reconciles in flight at once", n, c.maxInflight[n])
		}
	}
}

// TestShardedController runs replicas of a runtime whose Blueprint's
// reconciler is a controller-runtime reconciler of its own (reconcile.go,
// the Guestbook controller), through a join while every Guestbook is
// being edited and the crash of a replica. Such a reconciler reconciles
// whatever its cache holds, so each replica caches only the buckets it
// reconciles now and keeps them until its cache has stopped
// (shard.Epochs.ActiveOnly). It checks that no Guestbook is ever
// reconciled by two replicas at once, that each is reconciled by the
// replica its bucket goes to, that each replica caches only its buckets'
// Guestbooks, and that the crashed replica's Guestbooks are reconciled by
// the others within the Lease duration and 5 seconds.
func TestShardedController(t *testing.T) {
	const (
		books         = 40
		leaseDuration = 4 * time.Second
	)
	f := newFixture(t)
	c := newCalls(100 * time.Millisecond)
	bp, err := compiler.CompileFile("testdata/guestbook.yaml", compiler.Options{Components: componentstest.GuestbookRegistry(componentstest.GuestbookOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	gvk := componentstest.GuestbookGV.WithKind("Guestbook")
	startReplica := func(id string) *runtime {
		// With a worker for every Guestbook, each reconciled again 10ms
		// after each call, every Guestbook is in flight nine tenths of the
		// time in the replica that reconciles it: one let into two
		// replicas for more than a moment is in flight in both.
		reg := componentstest.GuestbookRegistry(componentstest.GuestbookOptions{Calling: c.of(id), RequeueAfter: 10 * time.Millisecond, Workers: books})
		return f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
			o.Blueprints = []*ir.Blueprint{bp}
			o.Components = reg
			o.Shard = &shard.Options{ID: id, Namespace: f.ns, LeaseDuration: leaseDuration, RenewPeriod: 500 * time.Millisecond}
		})
	}
	var names []string
	uids := map[string]types.UID{}
	for i := 0; i < books; i++ {
		name := fmt.Sprintf("book-%02d", i)
		names = append(names, name)
		gb := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": componentstest.GuestbookGV.String(), "kind": "Guestbook",
			"metadata": map[string]any{"name": name, "namespace": f.ns},
			"spec":     map[string]any{"size": int64(1)},
		}}
		if err := f.admin.Create(context.Background(), gb); err != nil {
			t.Fatal(err)
		}
		uids[name] = gb.GetUID()
	}
	resize := func(size int) {
		t.Helper()
		for _, n := range names {
			gb := &unstructured.Unstructured{}
			gb.SetGroupVersionKind(gvk)
			gb.SetNamespace(f.ns)
			gb.SetName(n)
			patch := fmt.Appendf(nil, `{"spec":{"size":%d}}`, size)
			if err := f.admin.Patch(context.Background(), gb, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
	}
	allSized := func(size int) func() string {
		return func() string {
			for _, n := range names {
				if msg := configSize(f, n+"-config", fmt.Sprint(size))(); msg != "" {
					return n + ": " + msg
				}
			}
			return ""
		}
	}
	cachedBy := func(members ...string) map[string]map[schema.GroupKind]int {
		out := map[string]map[schema.GroupKind]int{}
		for _, m := range members {
			out[m] = map[schema.GroupKind]int{gvk.GroupKind(): 0}
		}
		for _, m := range bucketOwners(uids, members...) {
			out[m][gvk.GroupKind()]++
		}
		return out
	}
	// lastBy is "" once the last call of each Guestbook was made by the
	// replica its bucket goes to.
	lastBy := func(members ...string) func() string {
		return func() string {
			want := bucketOwners(uids, members...)
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, n := range names {
				if got := c.last[n]; got != want[n] {
					return fmt.Sprintf("%s was last reconciled by %q, want %s", n, got, want[n])
				}
			}
			return ""
		}
	}

	r0, r1 := startReplica("r0"), startReplica("r1")
	f.eventually(time.Minute, "every Guestbook's ConfigMap", allSized(1))
	f.eventually(time.Minute, "the two replicas hold their buckets", f.leasesHold("r0", "r1"))
	f.eventually(time.Minute, "each of two replicas caches only its buckets' Guestbooks", cachesHold(cachedBy("r0", "r1")))
	f.eventually(10*time.Second, "each Guestbook reconciled by its replica of two", lastBy("r0", "r1"))

	// A third replica joins while every Guestbook is edited again and again.
	startReplica("r2")
	for size := 2; size <= 6; size++ {
		resize(size)
		time.Sleep(time.Second)
	}
	f.eventually(time.Minute, "the three replicas hold their buckets", f.leasesHold("r0", "r1", "r2"))
	f.eventually(time.Minute, "each of three replicas caches only its buckets' Guestbooks", cachesHold(cachedBy("r0", "r1", "r2")))
	resize(7)
	f.eventually(time.Minute, "every ConfigMap resized after the join", allSized(7))
	f.eventually(10*time.Second, "each Guestbook reconciled by its replica of three", lastBy("r0", "r1", "r2"))

	// r1 crashes: its Lease is left to expire.
	r1.cancel()
	<-r1.done
	killed := time.Now()
	resize(8)
	f.eventually(time.Minute, "every ConfigMap resized after r1 stopped", allSized(8))
	if took := time.Since(killed); took > leaseDuration+5*time.Second {
		t.Errorf("r1's Guestbooks were reconciled by the others %s after it stopped, more than the Lease duration %s and 5s", took.Round(time.Millisecond), leaseDuration)
	} else {
		t.Logf("r1's Guestbooks were reconciled by the others %s after it stopped", took.Round(time.Millisecond))
	}
	f.eventually(time.Minute, "the two left cache only their buckets' Guestbooks", cachesHold(cachedBy("r0", "r2")))
	f.eventually(10*time.Second, "each Guestbook reconciled by its replica of the two left", lastBy("r0", "r2"))
	_ = r0
	c.checkOnceAtATime(t, names)
}
