package controller

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
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

	plain, interned := heapWithTransform(t, func(i int) any {
		u := website(t, 100+i)
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		return u
	})
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

// heapWithTransform is heapPerObject of the objects build makes, as they
// are and through the caches' transform.
func heapWithTransform(t testing.TB, build func(i int) any) (plain, transformed uint64) {
	t.Helper()
	plain = heapPerObject(t, build)
	transformed = heapPerObject(t, func(i int) any {
		obj := build(i)
		if _, err := StripManagedFields(obj); err != nil {
			t.Fatal(err)
		}
		return obj
	})
	return plain, transformed
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

// settledDeployment is a child of the website pack as the cache holds it.
const settledDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"site-%04d","namespace":"bench","uid":"5d1e0c2a-1111-2222-3333-%012d","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-12-05T04:10:00Z","labels":{"app":"site-%04d","app.kubernetes.io/managed-by":"inrun","inrun.dev/applied-hash":"h%015d","inrun.dev/blueprint":"website","inrun.dev/child":"deployment","inrun.dev/owner-uid":"0b7c1a2e-1111-2222-3333-%012d"},"annotations":{"inrun.dev/owner":"example.inrun.dev/Website/bench/site-%04d"},"ownerReferences":[{"apiVersion":"example.inrun.dev/v1","kind":"Website","name":"site-%04d","uid":"0b7c1a2e-1111-2222-3333-%012d","controller":true,"blockOwnerDeletion":true}]},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"site-%04d"}},"template":{"metadata":{"labels":{"app":"site-%04d"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}},"status":{"observedGeneration":1,"replicas":2,"readyReplicas":2,"availableReplicas":2,"updatedReplicas":2}}`

func deployment(t testing.TB, i int) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := json.Unmarshal(fmt.Appendf(nil, settledDeployment, i, i, 1000+i, i, i, i, i, i, i, i, i), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestInternMetaShrinksTypedChildren: the transform changes nothing of a
// typed child but its managed fields; two children share their label and
// annotation keys, the inventory's repeating values and their owners'
// kinds, not their own names, UIDs or hashes; and a cached child costs less.
func TestInternMetaShrinksTypedChildren(t *testing.T) {
	a, b := deployment(t, 1), deployment(t, 2)
	want := deployment(t, 1)
	for _, d := range []*appsv1.Deployment{a, b} {
		if _, err := StripManagedFields(d); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Fatalf("the transform changed the object (-want +got):\n%s", diff)
	}
	key := func(m map[string]string, k string) string {
		for key := range m {
			if key == k {
				return key
			}
		}
		t.Fatalf("no key %q", k)
		return ""
	}
	for _, k := range []string{"app", "app.kubernetes.io/managed-by", "inrun.dev/blueprint", "inrun.dev/child", "inrun.dev/owner-uid", "inrun.dev/applied-hash"} {
		if !sameString(key(a.Labels, k), key(b.Labels, k)) {
			t.Errorf("two children do not share the label key %s", k)
		}
	}
	if !sameString(key(a.Annotations, "inrun.dev/owner"), key(b.Annotations, "inrun.dev/owner")) {
		t.Error("two children do not share their annotation key")
	}
	for _, k := range []string{"app.kubernetes.io/managed-by", "inrun.dev/blueprint", "inrun.dev/child"} {
		if !sameString(a.Labels[k], b.Labels[k]) {
			t.Errorf("two children do not share the value of %s", k)
		}
	}
	for _, k := range []string{"app", "inrun.dev/owner-uid", "inrun.dev/applied-hash"} {
		if sameString(a.Labels[k], b.Labels[k]) || a.Labels[k] == b.Labels[k] {
			t.Errorf("two children share the value of %s, their own", k)
		}
	}
	ra, rb := a.OwnerReferences[0], b.OwnerReferences[0]
	if !sameString(ra.APIVersion, rb.APIVersion) || !sameString(ra.Kind, rb.Kind) {
		t.Error("two children do not share their owner's apiVersion and kind")
	}

	plain, interned := heapWithTransform(t, func(i int) any { return deployment(t, 100+i) })
	t.Logf("a cached Deployment: %d bytes, %d interned", plain, interned)
	if interned >= plain {
		t.Errorf("a cached Deployment costs %d bytes interned, %d not", interned, plain)
	}
}
