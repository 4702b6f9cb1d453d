package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

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
	if _, ok := r.series[seriesKey{regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "cm"}, eventType: corev1.EventTypeNormal, reason: "Applied", action: "Apply", note: "first"}]; ok {
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
	if _, ok := r.series[newest]; !ok {
		t.Error("the newest series was forgotten")
	}
	if _, ok := r.series[seriesKey{regarding: newest.regarding, eventType: newest.eventType, reason: newest.reason, action: newest.action, note: "second"}]; ok {
		t.Error("the oldest series is still remembered once maxSeries were")
	}
}
