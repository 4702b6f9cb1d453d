package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/shard"
)

// selectors is the label selector of each kind a cache is narrowed to,
// by kind.
func selectors(byObject map[client.Object]cache.ByObject) map[string]labels.Selector {
	out := map[string]labels.Selector{}
	for obj, bo := range byObject {
		if bo.Label != nil { // else only its transform is its own (compact.go)
			out[obj.GetObjectKind().GroupVersionKind().Kind] = bo.Label
		}
	}
	return out
}

// TestShardManagerOptions checks the caches of a replica holding buckets 3
// and 7: custom resources by their bucket label, children by their owner's
// (and managed-by), and a kind that is both one Blueprint's custom
// resource and another's child cached whole.
func TestShardManagerOptions(t *testing.T) {
	stack, err := compiler.CompileFile("../runner/testdata/composition/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bps := ir.WithUsed([]*ir.Blueprint{stack})
	whole, err := ManagerOptions(bps)
	if err != nil {
		t.Fatal(err)
	}
	sharded, err := ShardManagerOptions(bps, []int{3, 7})
	if err != nil {
		t.Fatal(err)
	}
	before, after := selectors(whole.Cache.ByObject), selectors(sharded.Cache.ByObject)

	mine := func(l labels.Set) labels.Set {
		out := labels.Set{reconciler.LabelManagedBy: reconciler.ManagedBy}
		for k, v := range l {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		kind    string
		set     labels.Set
		matches bool
	}{
		{stack.Resource.Kind, labels.Set{shard.LabelBucket: "7"}, true},
		{stack.Resource.Kind, labels.Set{shard.LabelBucket: "4"}, false},
		{stack.Resource.Kind, labels.Set{}, false}, // unlabelled: the labeller's
		{"ConfigMap", mine(labels.Set{shard.LabelOwnerBucket: "3"}), true},
		{"ConfigMap", mine(labels.Set{shard.LabelOwnerBucket: "30"}), false},
		{"ConfigMap", mine(nil), false},                               // made before sharding
		{"ConfigMap", labels.Set{shard.LabelOwnerBucket: "3"}, false}, // not Inrun's
	} {
		sel, ok := after[tc.kind]
		if !ok {
			t.Errorf("%s is cached whole; want it narrowed to the buckets", tc.kind)
			continue
		}
		if got := sel.Matches(tc.set); got != tc.matches {
			t.Errorf("%s selector %q matches %v = %v, want %v", tc.kind, sel, tc.set, got, tc.matches)
		}
	}
	if _, ok := before[stack.Resource.Kind]; ok {
		t.Errorf("without shards, custom resources are narrowed: %v", before)
	}
	// The Store is the Stack's child and its own Blueprint's custom resource.
	if sel, ok := after["Store"]; ok {
		t.Errorf("Store, a custom resource and a child, is narrowed to %q; want it cached whole", sel)
	}
	none, err := ShardManagerOptions(bps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel := selectors(none.Cache.ByObject)[stack.Resource.Kind]; sel == nil || sel.Matches(labels.Set{shard.LabelBucket: "0"}) {
		t.Errorf("a replica with no buckets caches %q of the custom resources; want none", sel)
	}
}

// TestServerSelectedManagerOptions checks the caches of a replica whose
// API server selects the custom resources by shardSelector: no label
// selector on them, unless it holds no bucket, and the resources the
// selector goes to leave out the kind that is also a child.
func TestServerSelectedManagerOptions(t *testing.T) {
	stack, err := compiler.CompileFile("../runner/testdata/composition/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bps := ir.WithUsed([]*ir.Blueprint{stack})
	server, err := managerOptions(bps, []int{3, 7}, true)
	if err != nil {
		t.Fatal(err)
	}
	sel := selectors(server.Cache.ByObject)
	if s, ok := sel[stack.Resource.Kind]; ok {
		t.Errorf("the API server selects %s, yet the cache adds label selector %q", stack.Resource.Kind, s)
	}
	if s, ok := sel["ConfigMap"]; !ok || !s.Matches(labels.Set{reconciler.LabelManagedBy: reconciler.ManagedBy, shard.LabelOwnerBucket: "3"}) {
		t.Errorf("children are still selected by their owner's bucket label; got %q", s)
	}
	none, err := managerOptions(bps, []int{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if s := selectors(none.Cache.ByObject)[stack.Resource.Kind]; s == nil || s.Matches(labels.Set{}) {
		t.Errorf("a replica with no buckets caches %q of the custom resources; want none", s)
	}
	var got []string
	for _, gvr := range shardedResources(bps) {
		got = append(got, gvr.Resource)
	}
	if len(got) != 1 || got[0] != stack.Resource.Plural {
		t.Errorf("shardSelector goes to %v; want only %s (Store is also a child, cached whole)", got, stack.Resource.Plural)
	}
}
