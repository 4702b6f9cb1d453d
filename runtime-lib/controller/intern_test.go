package controller

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// settledWebsite is a Website as the benchmark's cache holds it once Ready.
const settledWebsite = `{"apiVersion":"example.inrun.dev/v1","kind":"Website","metadata":{"creationTimestamp":"2026-12-05T04:10:00Z","finalizers":["inrun.dev/cleanup"],"generation":1,"managedFields":[{"manager":"inrun","operation":"Apply"}],"name":"site-%04d","namespace":"bench","resourceVersion":"%d","uid":"0b7c1a2e-1111-2222-3333-%012d"},"spec":{"image":"nginx:1.27","port":80,"replicas":2},"status":{"conditions":[{"lastTransitionTime":"2026-12-05T04:10:01Z","message":"","observedGeneration":1,"reason":"AsExpected","status":"False","type":"Degraded"},{"lastTransitionTime":"2026-12-05T04:10:03Z","message":"every child is applied","observedGeneration":1,"reason":"Converged","status":"False","type":"Progressing"},{"lastTransitionTime":"2026-12-05T04:10:03Z","message":"every child is ready","observedGeneration":1,"reason":"ChildrenReady","status":"True","type":"Ready"}],"observedGeneration":1,"readyReplicas":2,"url":"http://site-%04d.bench.svc:80"}}`

func website(t testing.TB, i int) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(fmt.Appendf(nil, settledWebsite, i, 1000+i, i, i)); err != nil {
		t.Fatal(err)
	}
	return u
}

// sameString reports whether a and b are one copy in memory.
func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// keyOf returns m's own copy of key k.
func keyOf(m map[string]any, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}

// TestInternShrinksCachedObjects: the transform changes no value but the
// managed fields, two objects share their keys and repeating values but
// not their own names, and a cached Website costs less.
func TestInternShrinksCachedObjects(t *testing.T) {
	a, b := website(t, 1), website(t, 2)
	want := website(t, 1)
	unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
	for _, u := range []*unstructured.Unstructured{a, b} {
		if _, err := StripManagedFields(u); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want.Object, a.Object); diff != "" {
		t.Fatalf("the transform changed the object (-want +got):\n%s", diff)
	}
	cond := func(u *unstructured.Unstructured, i int) map[string]any {
		return u.Object["status"].(map[string]any)["conditions"].([]any)[i].(map[string]any)
	}
	if !sameString(keyOf(a.Object, "metadata"), keyOf(b.Object, "metadata")) ||
		!sameString(keyOf(cond(a, 2), "lastTransitionTime"), keyOf(cond(b, 0), "lastTransitionTime")) {
		t.Error("two objects do not share their keys")
	}
	for _, k := range []string{"type", "status", "reason", "message"} {
		if !sameString(cond(a, 2)[k].(string), cond(b, 2)[k].(string)) {
			t.Errorf("two objects do not share their conditions' %s", k)
		}
	}
	if !sameString(a.GetAPIVersion(), b.GetAPIVersion()) || !sameString(a.GetNamespace(), b.GetNamespace()) {
		t.Error("two objects do not share their apiVersion and namespace")
	}
	if sameString(a.GetName(), b.GetName()) || a.GetName() == b.GetName() {
		t.Error("two objects share their names")
	}

	perObject := func(transform bool) uint64 {
		return heapPerObject(t, func(i int) any {
			u := website(t, 100+i)
			if transform {
				_, _ = StripManagedFields(u)
			} else {
				unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
			}
			return u
		})
	}
	plain, interned := perObject(false), perObject(true)
	t.Logf("a cached Website: %d bytes, %d interned", plain, interned)
	if interned >= plain {
		t.Errorf("a cached Website costs %d bytes interned, %d not", interned, plain)
	}
}

// TestInternBounded: a table full of one kind's own keys adds no more, and
// strings it holds are still shared.
func TestInternBounded(t *testing.T) {
	table := &internTable[string]{m: map[string]string{}}
	get := func(s string) string { return table.get(s, s) }
	first := get(string([]byte("shared")))
	for i := range 2 * maxInterned {
		get(fmt.Sprintf("label-%d", i))
	}
	if len(table.m) != maxInterned {
		t.Errorf("the table holds %d strings, want %d", len(table.m), maxInterned)
	}
	if !sameString(get(string([]byte("shared"))), first) {
		t.Error("a string the table holds is no longer shared once it is full")
	}
	if s := string([]byte("new")); !sameString(get(s), s) {
		t.Error("a string a full table does not hold is not given back as it is")
	}
}

// heapPerObject is the heap each of 1000 objects made by build holds.
func heapPerObject(t testing.TB, build func(i int) any) uint64 {
	t.Helper()
	keep := make([]any, 1000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = build(i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return (after.HeapAlloc - before.HeapAlloc) / uint64(len(keep))
}
