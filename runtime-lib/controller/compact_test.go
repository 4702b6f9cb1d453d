package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
)

// TestCompactReadsBackTheObject: what the cache hands out of a compacted
// custom resource is the object as it came, but its managed fields, with
// its integers still int64; the metadata the cache itself reads is the
// object's.
func TestCompactReadsBackTheObject(t *testing.T) {
	in := website(t, 7)
	in.SetLabels(map[string]string{"team": "web"})
	in.SetAnnotations(map[string]string{"note": "<&>"})
	now := metav1.Now()
	in.SetDeletionTimestamp(&now)
	in.Object["spec"].(map[string]any)["ratio"] = 1.5
	want := in.DeepCopy()
	unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")

	out, err := compact(in)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*compactObject)
	if !ok {
		t.Fatalf("compact gave %T, want a *compactObject", out)
	}
	got, ok := c.DeepCopyObject().(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("a compact object's copy is %T, want *unstructured.Unstructured", c.DeepCopyObject())
	}
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	if got.Object["spec"].(map[string]any)["port"] != int64(80) {
		t.Errorf("spec.port read back as %T", got.Object["spec"].(map[string]any)["port"])
	}
	if c.GetName() != want.GetName() || c.GetNamespace() != want.GetNamespace() || c.GetUID() != want.GetUID() ||
		c.GetResourceVersion() != want.GetResourceVersion() || c.GetGeneration() != want.GetGeneration() ||
		!cmp.Equal(c.GetLabels(), want.GetLabels()) || !cmp.Equal(c.GetAnnotations(), want.GetAnnotations()) ||
		!cmp.Equal(c.GetFinalizers(), want.GetFinalizers()) || c.GetDeletionTimestamp() == nil ||
		c.GroupVersionKind() != want.GroupVersionKind() {
		t.Errorf("the compact object's metadata is not the object's: %+v", c.ObjectMeta)
	}
	if c.GetManagedFields() != nil {
		t.Error("the compact object keeps managed fields")
	}
	// Two copies are two objects: a reader may change its own.
	a, b := c.DeepCopyObject().(*unstructured.Unstructured), c.DeepCopyObject().(*unstructured.Unstructured)
	a.Object["spec"].(map[string]any)["port"] = int64(81)
	if b.Object["spec"].(map[string]any)["port"] != int64(80) {
		t.Error("two copies share their maps")
	}

	// Typed objects are only stripped.
	typedIn := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	if out, err := compact(typedIn); err != nil || out != typedIn || typedIn.ManagedFields != nil {
		t.Errorf("compact of a typed object: %v, %v; managed fields %v", out, err, typedIn.ManagedFields)
	}
}

// TestCompactIsSmaller: a settled Website costs the cache much less
// compact than as interned maps (about 1.4 KB against 2.8 KB).
func TestCompactIsSmaller(t *testing.T) {
	perObject := func(transform func(any) (any, error)) uint64 {
		return heapPerObject(t, func(i int) any {
			obj, err := transform(website(t, 100+i))
			if err != nil {
				t.Fatal(err)
			}
			return obj
		})
	}
	maps, compacted := perObject(StripManagedFields), perObject(compact)
	t.Logf("a cached Website: %d bytes as interned maps, %d compact", maps, compacted)
	if compacted*10 > maps*6 {
		t.Errorf("a cached Website costs %d bytes compact, %d as maps; want less than 60%%", compacted, maps)
	}
}

// TestManagerOptionsCompactCustomResources: the manager caches a
// Blueprint's custom resources compact, but a kind that is also another
// Blueprint's child, which the children's machinery reads.
func TestManagerOptionsCompactCustomResources(t *testing.T) {
	stack, err := compiler.CompileFile("../runner/testdata/composition/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bps := ir.WithUsed([]*ir.Blueprint{stack})
	for _, shards := range [][]int{nil, {3}} {
		opts, err := managerOptions(bps, shards, false)
		if err != nil {
			t.Fatal(err)
		}
		compacted := map[string]bool{}
		for obj, by := range opts.Cache.ByObject {
			if by.Transform != nil {
				if _, ok := must(by.Transform(website(t, 1))).(*compactObject); ok {
					compacted[obj.GetObjectKind().GroupVersionKind().Kind] = true
				}
			}
		}
		if !compacted[stack.Resource.Kind] {
			t.Errorf("shards %v: the Stacks are not cached compact: %v", shards, compacted)
		}
		for _, bp := range bps {
			if isChildKind(bps, bp.Resource.GroupVersionKind) && compacted[bp.Resource.Kind] {
				t.Errorf("shards %v: %s, a child kind too, is cached compact", shards, bp.Resource.Kind)
			}
		}
		if len(compacted) != 1 {
			t.Errorf("shards %v: cached compact: %v, want the Stacks only", shards, compacted)
		}
	}
}

func must(v any, err error) any {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkCachedRead compares what a reconcile's read of a settled
// Website from the cache costs: a deep copy of its maps, as the cache
// held it (the baseline), and the decoding of its JSON, as now.
func BenchmarkCachedRead(b *testing.B) {
	maps := website(b, 1)
	if _, err := StripManagedFields(maps); err != nil {
		b.Fatal(err)
	}
	c, err := compact(website(b, 1))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("maps", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = maps.DeepCopyObject()
		}
	})
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.(*compactObject).DeepCopyObject()
		}
	})
}

// BenchmarkCacheTransform compares what keeping a Website's watch event
// in the cache costs: stripping and interning its maps (the baseline), and
// compacting it, as now.
func BenchmarkCacheTransform(b *testing.B) {
	for _, bc := range []struct {
		name      string
		transform func(any) (any, error)
	}{{"maps", StripManagedFields}, {"compact", compact}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				u := website(b, 1)
				b.StartTimer()
				if _, err := bc.transform(u); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
