package main

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// The micro-benchmarks measure the runtime's work for one Website with
// nothing but memory: no API server, no cache. Run them with
//
//	go test ./bench -run '^$' -bench . -benchmem

func websiteBlueprint(b *testing.B) *ir.Blueprint {
	b.Helper()
	bp, err := compiler.CompileFile("../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return bp
}

func newWebsite(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": websiteGroup + "/v1",
		"kind":       "Website",
		"metadata":   map[string]any{"name": name, "namespace": "default", "uid": "00000000-0000-4000-8000-000000000001", "generation": int64(1)},
		"spec":       map[string]any{"image": "nginx:1.27", "replicas": int64(1), "port": int64(80)},
	}}
}

// BenchmarkRenderChildren renders a Website's Deployment and Service from
// the Blueprint's compiled templates, as every reconcile does.
func BenchmarkRenderChildren(b *testing.B) {
	bp := websiteBlueprint(b)
	progs, err := expr.Compile(bp)
	if err != nil {
		b.Fatal(err)
	}
	cr := newWebsite("hello")
	b.ReportAllocs()
	for b.Loop() {
		vars, err := progs.NewVars(cr, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range bp.Children {
			if _, err := progs.Render(c.Template, vars); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSyncCreate is one reconcile of a new Website against the
// in-memory store: list its children, render them, apply both, compute
// and apply the status.
func BenchmarkSyncCreate(b *testing.B) {
	bp := websiteBlueprint(b)
	progs, err := expr.Compile(bp)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		store := simulate.NewStore(bp)
		rec, err := reconciler.New(bp, reconciler.Options{Client: store, Renderer: reconciler.CELRenderer{Programs: progs}})
		if err != nil {
			b.Fatal(err)
		}
		cr := newWebsite("hello")
		if err := store.CreateCR(ctx, cr); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := rec.Sync(ctx, cr)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Writes != 3 {
			b.Fatalf("Sync made %d writes, want 3 (Deployment, Service, status)", rep.Writes)
		}
	}
}

// BenchmarkSyncConverged is the reconcile that every watch event of a
// converged Website costs: read it, list its children, render them,
// compare them and the status with what is live, and write nothing.
func BenchmarkSyncConverged(b *testing.B) {
	bp := websiteBlueprint(b)
	ctx := context.Background()
	store := simulate.NewStore(bp)
	rec, err := reconciler.New(bp, reconciler.Options{Client: store})
	if err != nil {
		b.Fatal(err)
	}
	cr := newWebsite("hello")
	if err := store.CreateCR(ctx, cr); err != nil {
		b.Fatal(err)
	}
	if _, err := rec.Sync(ctx, cr); err != nil {
		b.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cr)
	b.ReportAllocs()
	for b.Loop() {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(bp.Resource.GroupVersionKind)
		if err := store.Get(ctx, key, live); err != nil {
			b.Fatal(err)
		}
		rep, err := rec.Sync(ctx, live)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Writes != 0 {
			b.Fatalf("a converged Website took %d writes, want none", rep.Writes)
		}
	}
}
