package controller

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Recorder records events.k8s.io Events, like client-go's recorder, with one
// difference: an Event repeated with another note is a new Event, not one
// more in the first one's series. client-go counts Events of the same
// object, reason and action as one series and keeps the first note only, so
// "reconciler failed: 500" then "reconciler failed: timeout" showed the 500
// twice. Repeats of the same note within seriesWindow are one series.
type Recorder struct {
	c          client.Client
	scheme     *runtime.Scheme
	controller string
	instance   string
	log        logr.Logger
	now        func() time.Time

	queue chan *eventsv1.Event

	mu     sync.Mutex
	series map[uint64]seriesEntry
	// swept is when forgetOld last dropped the series that had ended.
	swept time.Time
}

var _ events.EventRecorder = &Recorder{}

// seriesWindow is how long after its last occurrence an Event is continued
// by a repeat, as in client-go.
const seriesWindow = 6 * time.Minute

// seriesPatchEvery bounds how often a series' count is written: a
// repeating Event costs at most one write a minute.
const seriesPatchEvery = time.Minute

// maxSeries bounds the series remembered; older ones are forgotten first.
const maxSeries = 4096

// sweepEvery is how often the series that have ended are dropped.
const sweepEvery = time.Minute

type seriesKey struct {
	regarding, related        corev1.ObjectReference
	eventType, reason, action string
	note                      string
}

// seriesSeeds hash a seriesKey twice: series are remembered by the first
// hash, and the second tells a series from another of the same first hash
// (one in 2^64 for a pair), so a repeat never counts in another's series.
var seriesSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// hash returns k's two hashes.
func (k *seriesKey) hash() (id, check uint64) {
	return maphash.Comparable(seriesSeeds[0], *k), maphash.Comparable(seriesSeeds[1], *k)
}

// seriesEntry is what a series needs beside the Event that repeats it:
// the created Event is rebuilt from the repeat, which has the same key,
// and from the time it was created (seriesEntry.event). A remembered
// series holds no pointer for the collector to follow and costs about
// 110 bytes, the map's own included (TestSeriesAreSmall): at 1,000 custom
// resources the series held 1.2 MB with the Event kept, 0.5 MB with its
// key kept, and 0.1 MB so.
type seriesEntry struct {
	check                  uint64
	first, last, lastWrite int64 // Unix nanoseconds
	count                  int32
}

// eventName names the Event that starts a series at first, of an object
// named regarding.
func eventName(regarding string, first int64) string {
	return fmt.Sprintf("%s.%x", regarding, first)
}

// eventNamespace is the namespace of an Event on an object of namespace
// ns: a cluster-scoped object's Events go to default.
func eventNamespace(ns string) string {
	if ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}

// event is the Event that started the series e, as created, rebuilt from
// repeat, an Event of the same key.
func (e *seriesEntry) event(repeat *eventsv1.Event) *eventsv1.Event {
	ev := repeat.DeepCopy()
	ev.Name = eventName(repeat.Regarding.Name, e.first)
	ev.Namespace = eventNamespace(repeat.Regarding.Namespace)
	ev.EventTime = metav1.NewMicroTime(time.Unix(0, e.first))
	return ev
}

// NewRecorder returns a Recorder that writes through mgr's client as
// controller (reportingController), and adds it to mgr, which runs it:
// Events recorded before the manager starts wait in its queue.
func NewRecorder(mgr manager.Manager, controller string) (*Recorder, error) {
	r := NewClientRecorder(mgr.GetClient(), mgr.GetScheme(), controller, mgr.GetLogger())
	return r, mgr.Add(r)
}

// NewClientRecorder returns a Recorder that writes through c, for a
// program without a manager. Run its Start.
func NewClientRecorder(c client.Client, scheme *runtime.Scheme, controller string, log logr.Logger) *Recorder {
	host, _ := os.Hostname()
	return &Recorder{
		c:          c,
		scheme:     scheme,
		controller: controller,
		instance:   controller + "-" + host,
		log:        log.WithName("events"),
		now:        time.Now,
		queue:      make(chan *eventsv1.Event, 1000),
		series:     map[uint64]seriesEntry{},
	}
}

// Eventf implements events.EventRecorder. It never blocks: when the queue
// is full, the Event is dropped and logged.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.log.Error(err, "cannot record an Event on this object", "reason", reason)
		return
	}
	ev := &eventsv1.Event{
		EventTime:           metav1.NewMicroTime(r.now()),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Note:                truncateNote(fmt.Sprintf(note, args...)),
		Type:                eventtype,
	}
	if related != nil {
		if rel, err := reference.GetReference(r.scheme, related); err == nil {
			ev.Related = rel
		}
	}
	select {
	case r.queue <- ev:
	default:
		r.log.Info("dropped an Event: the queue is full", "reason", reason, "note", ev.Note)
	}
}

// truncateNote keeps a note within the 1 KiB the API server accepts.
func truncateNote(s string) string {
	const max = 1024
	if len(s) <= max {
		return s
	}
	return s[:max-3] + "..."
}

// Start writes queued Events until ctx ends. It runs on every replica, not
// only the leader: Events are what each replica saw.
func (r *Recorder) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-r.queue:
			r.record(ctx, ev)
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (r *Recorder) NeedLeaderElection() bool { return false }

// record creates ev, or continues its series.
func (r *Recorder) record(ctx context.Context, ev *eventsv1.Event) {
	// The objects' resourceVersions are left out of the key: every status
	// write moves the custom resource's, and every apply the child's, so
	// the same Event on the next reconcile would start a series of its own.
	key := seriesKey{regarding: ev.Regarding, eventType: ev.Type, reason: ev.Reason, action: ev.Action, note: ev.Note}
	key.regarding.ResourceVersion = ""
	if ev.Related != nil {
		key.related = *ev.Related
		key.related.ResourceVersion = ""
	}
	id, check := key.hash()
	now := ev.EventTime.Time
	at := now.UnixNano()
	r.mu.Lock()
	entry, ok := r.series[id]
	if ok && entry.check == check && now.Sub(time.Unix(0, entry.last)) <= seriesWindow {
		entry.count++
		entry.last = at
		write := now.Sub(time.Unix(0, entry.lastWrite)) >= seriesPatchEvery || entry.count == 2
		if write {
			entry.lastWrite = at
		}
		r.series[id] = entry
		r.mu.Unlock()
		if write {
			r.patchSeries(ctx, entry.event(ev), entry.count, now)
		}
		return
	}
	r.forgetOld(now)
	ev.Name = eventName(ev.Regarding.Name, at)
	ev.Namespace = eventNamespace(ev.Regarding.Namespace)
	r.series[id] = seriesEntry{check: check, first: at, last: at, lastWrite: at, count: 1}
	r.mu.Unlock()
	if err := r.c.Create(ctx, ev); err != nil && !apierrors.IsAlreadyExists(err) {
		r.log.Error(err, "cannot record an Event", "reason", ev.Reason, "note", ev.Note)
	}
}

// patchSeries writes a series' count and last time onto the Event that
// started it.
func (r *Recorder) patchSeries(ctx context.Context, ev *eventsv1.Event, count int32, last time.Time) {
	patch := fmt.Appendf(nil, `{"series":{"count":%d,"lastObservedTime":%q}}`, count, metav1.NewMicroTime(last).Format(metav1.RFC3339Micro))
	obj := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: ev.Name, Namespace: ev.Namespace}}
	err := r.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		// The Event has expired: record it again.
		again := ev
		again.Series = &eventsv1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(last)}
		err = r.c.Create(ctx, again)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		r.log.Error(err, "cannot update an Event's series", "reason", ev.Reason, "note", ev.Note)
	}
}

// forgetOld drops series that have ended, at most once a sweepEvery, and
// the oldest quarter once maxSeries are remembered: one Event recorded
// costs a map write, not a walk of every series remembered. r.mu is held.
func (r *Recorder) forgetOld(now time.Time) {
	if now.Sub(r.swept) >= sweepEvery || len(r.series) >= maxSeries {
		r.swept = now
		for id, e := range r.series {
			if now.Sub(time.Unix(0, e.last)) > seriesWindow {
				delete(r.series, id)
			}
		}
	}
	if len(r.series) < maxSeries {
		return
	}
	ids := make([]uint64, 0, len(r.series))
	for id := range r.series {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return r.series[ids[i]].last < r.series[ids[j]].last })
	for _, id := range ids[:len(ids)/4] {
		delete(r.series, id)
	}
}
