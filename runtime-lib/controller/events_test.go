package controller

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// remembers reports whether r remembers the series of k.
func (r *Recorder) remembers(k seriesKey) bool {
	id, check := k.hash()
	e, ok := r.series[id]
	return ok && e.check == check
}

// TestForgetOld checks that the Recorder forgets series that ended once a
// sweep is due, and the oldest once it remembers maxSeries.
func TestForgetOld(t *testing.T) {
	r := NewClientRecorder(fake.NewClientBuilder().Build(), scheme.Scheme, "test", logr.Discard())
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(at time.Time, note string) {
		r.record(context.Background(), &eventsv1.Event{
			EventTime: metav1.NewMicroTime(at),
			Regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "cm"},
			Type:      corev1.EventTypeNormal, Reason: "Applied", Action: "Apply", Note: note,
		})
	}
	record(start, "first")
	record(start.Add(seriesWindow+time.Second), "second") // a sweep is due: first has ended
	if r.remembers(seriesKey{regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "cm"}, eventType: corev1.EventTypeNormal, reason: "Applied", action: "Apply", note: "first"}) {
		t.Error("a series that ended before the sweep is still remembered")
	}
	if len(r.series) != 1 {
		t.Errorf("%d series remembered, want 1", len(r.series))
	}
	at := start.Add(seriesWindow + 2*time.Second)
	for i := 0; i < maxSeries+10; i++ {
		record(at.Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("note %d", i))
		if len(r.series) > maxSeries {
			t.Fatalf("%d series remembered, more than %d", len(r.series), maxSeries)
		}
	}
	newest := seriesKey{regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "cm"}, eventType: corev1.EventTypeNormal, reason: "Applied", action: "Apply", note: fmt.Sprintf("note %d", maxSeries+9)}
	if !r.remembers(newest) {
		t.Error("the newest series was forgotten")
	}
	if r.remembers(seriesKey{regarding: newest.regarding, eventType: newest.eventType, reason: newest.reason, action: newest.action, note: "second"}) {
		t.Error("the oldest series is still remembered once maxSeries were")
	}
}

// TestSeries checks a repeated Event: created once, its count written on
// the first repeat and then at most once a seriesPatchEvery, and created
// again, as the series' first Event with its count, once it has expired.
func TestSeries(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	r := NewClientRecorder(c, scheme.Scheme, "test", logr.Discard())
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	regarding := corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "cm", UID: "u1"}
	related := corev1.ObjectReference{Kind: "Secret", Namespace: "default", Name: "s"}
	record := func(at time.Duration, note string) {
		r.record(ctx, &eventsv1.Event{
			EventTime:           metav1.NewMicroTime(start.Add(at)),
			ReportingController: r.controller,
			ReportingInstance:   r.instance,
			Regarding:           regarding,
			Related:             &related,
			Type:                corev1.EventTypeWarning, Reason: "Failed", Action: "Reconcile", Note: note,
		})
	}
	events := func() []eventsv1.Event {
		t.Helper()
		list := &eventsv1.EventList{}
		if err := c.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	count := func(ev eventsv1.Event) int32 {
		if ev.Series == nil {
			return 1
		}
		return ev.Series.Count
	}

	record(0, "boom")
	evs := events()
	if len(evs) != 1 || count(evs[0]) != 1 {
		t.Fatalf("after one Event: %+v", evs)
	}
	first := evs[0]
	if first.Note != "boom" || first.Regarding != regarding || first.Related == nil || *first.Related != related ||
		first.ReportingController != "test" || first.Type != corev1.EventTypeWarning || first.Reason != "Failed" || first.Action != "Reconcile" {
		t.Errorf("created Event: %+v", first)
	}
	// The next reconcile sees the objects at other resourceVersions: the
	// same Event all the same.
	regarding.ResourceVersion, related.ResourceVersion = "2", "7"
	record(time.Second, "boom")
	regarding.ResourceVersion, related.ResourceVersion = "", ""
	if evs := events(); len(evs) != 1 || count(evs[0]) != 2 {
		t.Fatalf("after the first repeat: want one Event of count 2, got %+v", evs)
	}
	record(2*time.Second, "boom")
	if evs := events(); len(evs) != 1 || count(evs[0]) != 2 {
		t.Errorf("a repeat within %s was written: %+v", seriesPatchEvery, evs)
	}
	if err := c.Delete(ctx, &first); err != nil {
		t.Fatal(err)
	}
	record(70*time.Second, "boom")
	evs = events()
	if len(evs) != 1 {
		t.Fatalf("after the Event expired: %d Events, want it created again", len(evs))
	}
	again := evs[0]
	if again.Name != first.Name || count(again) != 4 || again.Note != "boom" || again.Regarding != regarding ||
		again.Related == nil || *again.Related != related || !again.EventTime.Equal(&first.EventTime) ||
		!again.Series.LastObservedTime.Time.Equal(start.Add(70*time.Second)) {
		t.Errorf("Event created again: %+v (series %+v), want %s with count 4", again, again.Series, first.Name)
	}
	record(71*time.Second, "another note")
	if evs := events(); len(evs) != 2 {
		t.Errorf("another note made %d Events, want a new one beside the series", len(evs))
	}
}

// TestSeriesAreSmall: a remembered series costs its hash and times, not
// its Event's strings (about 540 bytes a series when its key was kept).
func TestSeriesAreSmall(t *testing.T) {
	discard := interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return nil }}
	r := NewClientRecorder(fake.NewClientBuilder().WithInterceptorFuncs(discard).Build(), scheme.Scheme, "test", logr.Discard())
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 2000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		r.record(context.Background(), &eventsv1.Event{
			EventTime: metav1.NewMicroTime(start.Add(time.Duration(i) * time.Millisecond)),
			Regarding: corev1.ObjectReference{Kind: "Website", Namespace: "bench", Name: fmt.Sprintf("site-%04d", i), UID: types.UID(fmt.Sprintf("0b7c1a2e-1111-2222-3333-%012d", i)), APIVersion: "example.inrun.dev/v1"},
			Type:      corev1.EventTypeNormal, Reason: "Applied", Action: "Apply", Note: fmt.Sprintf("applied Deployment bench/site-%04d, Service bench/site-%04d", i, i),
		})
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(r)
	if len(r.series) != n {
		t.Fatalf("%d series remembered, want %d", len(r.series), n)
	}
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("a remembered series: %d bytes", per)
	if per > 200 {
		t.Errorf("a remembered series costs %d bytes, want at most 200", per)
	}
}
