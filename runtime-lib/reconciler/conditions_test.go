package reconciler

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestConditionJSONIsTheConverters checks conditionJSON against
// runtime.DefaultUnstructuredConverter.ToUnstructured over conditions with
// and without a generation, a time, a reason and a message.
func TestConditionJSONIsTheConverters(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 500; i++ {
		c := randomCondition(rnd)
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got := conditionJSON(&c); !reflect.DeepEqual(got, want) {
			t.Fatalf("condition %d %+v:\n got  %#v\n want %#v", i, c, got, want)
		}
	}
}

// TestConditionOfIsTheConverters checks conditionOf against
// runtime.DefaultUnstructuredConverter.FromUnstructured over conditions as
// the converter writes them, and over maps with missing keys, values of
// other types, bad times and keys a condition does not have: the same
// condition, or the same failure.
func TestConditionOfIsTheConverters(t *testing.T) {
	rnd := rand.New(rand.NewSource(2))
	odd := []any{nil, true, int64(3), float64(2), 2.5, "", "x", "2026-12-05T10:00:00Z", "2026-12-05T10:00:00+02:00", "yesterday", []any{"a"}, map[string]any{"a": "b"}}
	keys := []string{"type", "status", "observedGeneration", "lastTransitionTime", "reason", "message", "extra"}
	direct := 0
	for i := 0; i < 3000; i++ {
		c := randomCondition(rnd)
		m := conditionJSON(&c)
		if i%3 != 0 {
			for _, k := range keys {
				switch rnd.Intn(6) {
				case 0:
					delete(m, k)
				case 1:
					m[k] = odd[rnd.Intn(len(odd))]
				}
			}
		}
		var want metav1.Condition
		wantOK := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &want) == nil
		got, ok := conditionOf(m)
		if ok != wantOK {
			t.Fatalf("map %d %#v: read %v, the converter %v", i, m, ok, wantOK)
		}
		if ok && !reflect.DeepEqual(got, want) { // the time's location too
			t.Fatalf("map %d %#v:\n%s", i, m, cmp.Diff(want, got))
		}
		if ok && reflect.DeepEqual(conditionJSON(&got), m) {
			direct++
		}
	}
	if direct < 1000 {
		t.Errorf("only %d of 3000 maps were conditions as written; the test covers too little", direct)
	}
}

func randomCondition(rnd *rand.Rand) metav1.Condition {
	words := []string{"", "Ready", "True", "False", "Unknown", "a \"quoted\" message\n", "ünïcode"}
	c := metav1.Condition{
		Type:    words[rnd.Intn(len(words))],
		Status:  metav1.ConditionStatus(words[rnd.Intn(len(words))]),
		Reason:  words[rnd.Intn(len(words))],
		Message: words[rnd.Intn(len(words))],
	}
	if rnd.Intn(2) == 0 {
		c.ObservedGeneration = rnd.Int63n(100)
	}
	if rnd.Intn(4) != 0 {
		c.LastTransitionTime = metav1.Unix(rnd.Int63n(1<<32), 0)
	}
	return c
}

// BenchmarkConditionRoundTrip reads a condition of a live status and writes
// it back, as every pass does with each condition of its custom resource:
// through the converter, and directly.
func BenchmarkConditionRoundTrip(b *testing.B) {
	c := metav1.Condition{Type: "Ready", Status: "True", ObservedGeneration: 3, LastTransitionTime: metav1.Unix(1<<31, 0), Reason: "ChildrenReady", Message: "every child is ready"}
	m := conditionJSON(&c)
	b.Run("converter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var got metav1.Condition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &got); err != nil {
				b.Fatal(err)
			}
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, ok := conditionOf(m)
			if !ok {
				b.Fatal("not read")
			}
			conditionJSON(&got)
		}
	})
}
