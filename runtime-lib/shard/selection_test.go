package shard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	apiserversharding "k8s.io/apiserver/pkg/sharding"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

func TestParseSelection(t *testing.T) {
	for in, want := range map[string]Selection{"": SelectAuto, "auto": SelectAuto, "labels": SelectLabels, "server": SelectServer} {
		if got, err := ParseSelection(in); err != nil || got != want {
			t.Errorf("ParseSelection(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseSelection("label"); err == nil {
		t.Error("ParseSelection(label) took a misspelling")
	}
}

// TestSelectingConfig checks that lists and watches of the selected
// resources, in a namespace and cluster-wide, carry the shard selector,
// and that other requests (one object, another resource, a write) do not.
func TestSelectingConfig(t *testing.T) {
	var (
		mu  sync.Mutex
		got = map[string]string{} // method and path → shardSelector
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Method+" "+r.URL.Path] = r.URL.Query().Get("shardSelector")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true" {
			return // an empty watch: the stream ends at once
		}
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"List","metadata":{},"items":[]}`))
	}))
	t.Cleanup(srv.Close)

	sites := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "sites"}
	other := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "sitemaps"}
	sel := Selector([]int{0, 1}, 4)
	cfg := SelectingConfig(&rest.Config{Host: srv.URL}, []schema.GroupVersionResource{sites}, sel)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = dyn.Resource(sites).Namespace("a").List(ctx, metav1.ListOptions{})
	_, _ = dyn.Resource(sites).List(ctx, metav1.ListOptions{})
	if w, err := dyn.Resource(sites).Namespace("b").Watch(ctx, metav1.ListOptions{}); err == nil {
		w.Stop()
	}
	_, _ = dyn.Resource(sites).Namespace("a").Get(ctx, "one", metav1.GetOptions{})
	_, _ = dyn.Resource(other).Namespace("a").List(ctx, metav1.ListOptions{})
	_ = dyn.Resource(sites).Namespace("a").Delete(ctx, "one", metav1.DeleteOptions{})
	_, _ = dyn.Resource(sites).Namespace("c").List(ctx, metav1.ListOptions{ShardSelector: "theirs"})

	want := map[string]string{
		"GET /apis/example.com/v1/namespaces/a/sites":        sel,
		"GET /apis/example.com/v1/sites":                     sel,
		"GET /apis/example.com/v1/namespaces/b/sites":        sel,
		"GET /apis/example.com/v1/namespaces/a/sites/one":    "",
		"GET /apis/example.com/v1/namespaces/a/sitemaps":     "",
		"DELETE /apis/example.com/v1/namespaces/a/sites/one": "",
		"GET /apis/example.com/v1/namespaces/c/sites":        "theirs",
	}
	mu.Lock()
	defer mu.Unlock()
	for req, w := range want {
		g, ok := got[req]
		if !ok {
			t.Errorf("%s was not sent", req)
			continue
		}
		if g != w {
			t.Errorf("%s: shardSelector %q, want %q", req, g, w)
		}
	}
}

// TestSelectorParsesOnTheAPIServer parses the selector of each replica's
// share, as Assign spreads 256 buckets over 2 to 4 replicas (dozens of
// ranges each), with the API server's own parser, and checks that it
// matches exactly the UIDs of that share.
func TestSelectorParsesOnTheAPIServer(t *testing.T) {
	for _, members := range [][]string{{"r0", "r1"}, {"r0", "r1", "r2"}, {"a", "b", "c", "d"}} {
		for m, buckets := range Assign(members, DefaultBuckets) {
			sel, err := apiserversharding.Parse(Selector(buckets, DefaultBuckets))
			if err != nil {
				t.Fatalf("%v, %s's %d buckets: the API server refuses the selector: %v", members, m, len(buckets), err)
			}
			in := map[int]bool{}
			for _, b := range buckets {
				in[b] = true
			}
			for i := 0; i < 2000; i++ {
				uid := types.UID(fmt.Sprintf("%08x-1111-4000-8000-%012x", i, i*40503))
				ok, err := sel.Matches(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: uid}})
				if err != nil {
					t.Fatal(err)
				}
				if ok != in[Bucket(uid, DefaultBuckets)] {
					t.Fatalf("%v, %s: %s (bucket %d) matched %v", members, m, uid, Bucket(uid, DefaultBuckets), ok)
				}
			}
		}
	}
}
