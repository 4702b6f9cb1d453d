package reconciler_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/runtime-lib/reconciler"
)

func newPoolFixture(t *testing.T, workers ...any) *fixture {
	t.Helper()
	return fixtureOf(t, "testdata/pool.yaml", reconciler.Options{}, map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Pool",
		"metadata": map[string]any{"name": "pool", "namespace": "shop"},
		"spec":     map[string]any{"workers": workers},
	})
}

// TestCollection: one object per item, read as a list by the rest of the
// Blueprint, ready when every item is, an item that goes away pruned, and
// a converged collection written no more.
func TestCollection(t *testing.T) {
	f := newPoolFixture(t, "alice", "bob")
	rep := f.sync()
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"alice", "bob"} {
		if f.object(configMapGVK, "shop", "pool-"+w) == nil {
			t.Errorf("no ConfigMap for %s", w)
		}
	}
	// The summary reads the collection: it waits for every item to be ready.
	if got := rep.Pending["summary"]; got != "waiting for workers to be ready" {
		t.Errorf("summary pending %q", got)
	}
	if s, msg := conditionOf(f.get(), "Ready"); s != "False" || msg != "waiting for summary (waiting for workers to be ready), workers: 2 of 2 items (not ready)" {
		t.Errorf("Ready = %s %q", s, msg)
	}
	for _, w := range []string{"alice", "bob"} {
		cm := f.object(configMapGVK, "shop", "pool-"+w)
		cm.Object["data"].(map[string]any)["ready"] = "yes"
		if err := f.store.Update(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	summary := f.object(configMapGVK, "shop", "pool-summary")
	if summary == nil || summary.Object["data"].(map[string]any)["workers"] != "alice,bob" {
		t.Fatalf("summary = %v", summary)
	}
	if got, _, _ := unstructured.NestedInt64(f.get().Object, "status", "workers"); got != 2 {
		t.Errorf("status.workers = %d", got)
	}

	// bob leaves: his ConfigMap is pruned, alice's kept as it is.
	f.patchSpec("workers", []any{"alice"})
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if f.object(configMapGVK, "shop", "pool-bob") != nil {
		t.Error("the item that went away was not pruned")
	}
	if f.object(configMapGVK, "shop", "pool-alice") == nil {
		t.Error("alice's item was pruned")
	}
	before := f.store.Writes()
	f.sync()
	if n := f.store.Writes() - before; n != 0 {
		t.Errorf("a converged collection was written %d times", n)
	}
}

// TestCollectionNamesCollide: items that render the same object are an
// error, and nothing is pruned for it.
func TestCollectionNamesCollide(t *testing.T) {
	f := newPoolFixture(t, "alice", "alice")
	err := f.sync().Err()
	if err == nil || !strings.Contains(err.Error(), "two items of collection \"workers\" render ConfigMap shop/pool-alice") {
		t.Errorf("errors = %v", err)
	}
}
