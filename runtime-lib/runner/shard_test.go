package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/runtime-lib/shard"
	"github.com/inrun/inrun/sdk"
)

// marker is a remote reconciler that takes 50ms a call and records, per
// custom resource, how many calls are in flight at once, who made the last
// call (each replica calls its own path) and with which spec.note.
type marker struct {
	*calls
	noted map[string]map[string]time.Time // under calls.mu
}

func newMarker() *marker {
	return &marker{calls: newCalls(50 * time.Millisecond), noted: map[string]map[string]time.Time{}}
}

func (m *marker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := sdk.DecodeRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cr := &unstructured.Unstructured{Object: req.Object}
	name := cr.GetName()
	note, _, _ := unstructured.NestedString(cr.Object, "spec", "note")
	count, _, _ := unstructured.NestedInt64(cr.Object, "status", "count")
	done := m.call(strings.TrimPrefix(r.URL.Path, "/"), name)
	m.mu.Lock()
	if m.noted[note] == nil {
		m.noted[note] = map[string]time.Time{}
	}
	if _, ok := m.noted[note][name]; !ok {
		m.noted[note][name] = time.Now()
	}
	m.mu.Unlock()
	done()
	// A new count each call keeps every custom resource busy: the next
	// request differs, so it is sent, not answered from the runtime's memo.
	reply := map[string]any{"apiVersion": sdk.APIVersion, "kind": sdk.KindResult,
		"status": map[string]any{"count": count + 1}, "requeueAfter": "1s"}
	if req.Finalizing {
		reply = map[string]any{"apiVersion": sdk.APIVersion, "kind": sdk.KindResult, "done": true}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// waitNoted waits until every name was called with this note, and says
// when the last of them first was.
func (m *marker) waitNoted(t *testing.T, note string, names []string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m.mu.Lock()
		var last time.Time
		missing := 0
		for _, n := range names {
			at, ok := m.noted[note][n]
			if !ok {
				missing++
			} else if at.After(last) {
				last = at
			}
		}
		m.mu.Unlock()
		if missing == 0 {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d custom resources were not reconciled with note %q in %s", missing, len(names), note, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *marker) owners() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for k, v := range m.last {
		out[k] = v
	}
	return out
}

// TestShards runs replicas of one runtime on the same custom resources,
// each reconciled without pause by a 50ms reconciler, through a join and
// the crash of a replica, and checks that no custom resource is ever
// reconciled by two replicas at once, that a replica joining takes only
// the buckets rendezvous hashing moves to it, that a crashed replica's
// custom resources are reconciled by the others within the Lease duration
// and 5 seconds, and that each replica caches only its buckets' custom
// resources: selected by their bucket label, or by the API server's
// shardSelector where they carry none.
func TestShards(t *testing.T) {
	for _, sel := range []shard.Selection{shard.SelectLabels, shard.SelectServer} {
		t.Run(string(sel), func(t *testing.T) { testShards(t, sel) })
	}
}

func testShards(t *testing.T, selection shard.Selection) {
	const (
		crs           = 60
		leaseDuration = 4 * time.Second
	)
	f := newFixture(t)
	m := newMarker()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	bp, err := compiler.CompileFile("testdata/app.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	startReplica := func(id string) *runtime {
		return f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
			o.Blueprints = []*ir.Blueprint{bp.WithRemoteURL(srv.URL + "/" + id)}
			o.Shard = &shard.Options{ID: id, Namespace: f.ns, LeaseDuration: leaseDuration, RenewPeriod: 500 * time.Millisecond, Selection: selection}
		})
	}
	var names []string
	for i := 0; i < crs; i++ {
		name := fmt.Sprintf("app-%03d", i)
		names = append(names, name)
		f.createApp(name, map[string]any{"note": "v1"})
	}
	uids := map[string]types.UID{}
	for _, n := range names {
		app, err := f.get(appGVK, f.ns, n)
		if err != nil {
			t.Fatal(err)
		}
		uids[n] = app.GetUID()
	}
	// ownerBy is who Assign says reconciles each custom resource.
	ownerBy := func(members ...string) map[string]string {
		byBucket := map[int]string{}
		for m, bs := range shard.Assign(members, shard.DefaultBuckets) {
			for _, b := range bs {
				byBucket[b] = m
			}
		}
		out := map[string]string{}
		for _, n := range names {
			out[n] = byBucket[shard.Bucket(uids[n], shard.DefaultBuckets)]
		}
		return out
	}
	// cachedBy is what each replica's cache should hold: the Apps of its
	// buckets.
	cachedBy := func(members ...string) map[string]map[schema.GroupKind]int {
		out := map[string]map[schema.GroupKind]int{}
		for _, m := range members {
			out[m] = map[schema.GroupKind]int{appGVK.GroupKind(): 0}
		}
		for _, m := range ownerBy(members...) {
			out[m][appGVK.GroupKind()]++
		}
		return out
	}
	patchAll := func(note string) {
		for _, n := range names {
			f.patchApp(n, map[string]any{"note": note})
		}
	}

	r0, r1 := startReplica("r0"), startReplica("r1")
	m.waitNoted(t, "v1", names, 2*time.Minute)
	f.eventually(time.Minute, "the two replicas hold their buckets", f.leasesHold("r0", "r1"))
	before := ownerBy("r0", "r1")
	// The Apps were made before any replica ran: each was labelled with
	// its bucket, unless the API server selects them, and each replica
	// caches only its buckets'.
	for _, n := range names {
		app, err := f.get(appGVK, f.ns, n)
		if err != nil {
			t.Fatal(err)
		}
		want := shard.BucketValue(uids[n], shard.DefaultBuckets)
		if selection == shard.SelectServer {
			want = ""
		}
		if got := app.GetLabels()[shard.LabelBucket]; got != want {
			t.Errorf("%s has bucket label %q, want %q", n, got, want)
		}
	}
	f.eventually(time.Minute, "each of two replicas caches only its buckets' Apps", cachesHold(cachedBy("r0", "r1")))

	// A third replica joins while every custom resource is busy.
	startReplica("r2")
	f.eventually(time.Minute, "the three replicas hold their buckets", f.leasesHold("r0", "r1", "r2"))
	f.eventually(time.Minute, "each of three replicas caches only its buckets' Apps", cachesHold(cachedBy("r0", "r1", "r2")))
	patchAll("v2")
	m.waitNoted(t, "v2", names, time.Minute)
	time.Sleep(2 * time.Second) // each custom resource is called again every second
	after, want := m.owners(), ownerBy("r0", "r1", "r2")
	moved := 0
	for _, n := range names {
		if after[n] != want[n] {
			t.Errorf("%s is reconciled by %s, want %s", n, after[n], want[n])
		}
		if want[n] != before[n] {
			moved++
			if want[n] != "r2" {
				t.Errorf("%s moved from %s to %s, not to the replica that joined", n, before[n], want[n])
			}
		}
	}
	t.Logf("2→3 replicas: %d of %d custom resources moved (%.0f%%)", moved, crs, 100*float64(moved)/crs)

	// r1 crashes: its Lease is left to expire.
	r1.cancel()
	<-r1.done
	killed := time.Now()
	orphans := 0
	for _, n := range names {
		if want[n] == "r1" {
			orphans++
		}
	}
	if orphans == 0 {
		t.Fatal("r1 reconciled nothing: the test proves nothing")
	}
	patchAll("v3")
	last := m.waitNoted(t, "v3", names, time.Minute)
	if took := last.Sub(killed); took > leaseDuration+5*time.Second {
		t.Errorf("r1's %d custom resources were reconciled by the others %s after it stopped, more than the Lease duration %s and 5s", orphans, took.Round(time.Millisecond), leaseDuration)
	} else {
		t.Logf("r1's %d custom resources were reconciled by the others %s after it stopped", orphans, took.Round(time.Millisecond))
	}
	f.eventually(time.Minute, "the two left cache only their buckets' Apps", cachesHold(cachedBy("r0", "r2")))
	_ = r0
	m.checkOnceAtATime(t, names)
}

// leasesHold is "" once the Leases of members hold exactly the buckets
// Assign gives each.
func (f *fixture) leasesHold(members ...string) func() string {
	return func() string {
		leases := &coordinationv1.LeaseList{}
		if err := f.admin.List(context.Background(), leases, client.InNamespace(f.ns), client.HasLabels{shard.LabelGroup}); err != nil {
			return err.Error()
		}
		held := map[string]string{}
		for _, l := range leases.Items {
			if l.Spec.HolderIdentity != nil {
				held[*l.Spec.HolderIdentity] = l.Annotations[shard.AnnotationHeld]
			}
		}
		for m, bs := range shard.Assign(members, shard.DefaultBuckets) {
			if got, w := held[m], formatRanges(bs); got != w {
				return fmt.Sprintf("%s holds %q, want %q", m, got, w)
			}
		}
		return ""
	}
}

// formatRanges writes sorted buckets as the Lease annotation does.
func formatRanges(bs []int) string {
	set := make([]bool, shard.DefaultBuckets)
	for _, b := range bs {
		set[b] = true
	}
	var parts []string
	for b := 0; b < len(set); b++ {
		if !set[b] {
			continue
		}
		e := b
		for e+1 < len(set) && set[e+1] {
			e++
		}
		if e > b {
			parts = append(parts, fmt.Sprintf("%d-%d", b, e))
		} else {
			parts = append(parts, fmt.Sprint(b))
		}
		b = e
	}
	return strings.Join(parts, ",")
}

// TestShardRebalanceKeepsControllerNames: a replica run as inrun run and
// the generated operator run it, without SkipNameValidation, sets up its
// controllers again for each new set of buckets, under their old names;
// it must go on when another replica joins (it exited: "controller with
// name ... already exists").
func TestShardRebalanceKeepsControllerNames(t *testing.T) {
	f := newFixture(t)
	src := uniquelyNamed(t, "testdata/app.yaml", "app")
	bp, err := compiler.Compile(load.Bytes("testdata/app.yaml", []byte(src)), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMarker())
	t.Cleanup(srv.Close)
	start := func(id string, skip bool) *runtime {
		return f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
			o.Blueprints = []*ir.Blueprint{bp.WithRemoteURL(srv.URL + "/" + id)}
			o.Shard = &shard.Options{ID: id, Namespace: f.ns, LeaseDuration: 4 * time.Second, RenewPeriod: 500 * time.Millisecond}
			o.SkipNameValidation = skip
		})
	}
	r0 := start("r0", false)
	f.eventually(time.Minute, "r0 holds every bucket", f.leasesHold("r0"))
	// r1 shares the process, and so the names r0 registered.
	start("r1", true)
	f.eventually(time.Minute, "the two replicas hold their buckets", f.leasesHold("r0", "r1"))
	select {
	case err := <-r0.done:
		t.Fatalf("r0 stopped when r1 joined: %v", err)
	case <-time.After(3 * time.Second):
	}
}
