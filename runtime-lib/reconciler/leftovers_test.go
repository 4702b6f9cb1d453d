package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// TestPruneUndeclared removes the website Blueprint's only Service
// template: the next runtime no longer declares Services, yet deletes the
// Service it made, and leaves alone one someone made with its labels.
func TestPruneUndeclared(t *testing.T) {
	f := newFixture(t, spec())
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	if f.object(serviceGVK, "shop", "web") == nil {
		t.Fatal("no Service to remove")
	}
	ctx := context.Background()
	impostor := &unstructured.Unstructured{}
	impostor.SetGroupVersionKind(serviceGVK)
	impostor.SetNamespace("shop")
	impostor.SetName("theirs")
	impostor.SetLabels(f.object(serviceGVK, "shop", "web").GetLabels())
	impostor.SetAnnotations(f.object(serviceGVK, "shop", "web").GetAnnotations())
	if err := unstructured.SetNestedSlice(impostor.Object, []any{map[string]any{"port": int64(80)}}, "spec", "ports"); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Create(ctx, impostor, client.FieldOwner("kubectl-create")); err != nil {
		t.Fatal(err)
	}

	src, err := os.ReadFile("testdata/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd, _ := filepath.Abs("testdata/crd.yaml")
	text := strings.Replace(string(src), "file: crd.yaml", "file: "+crd, 1)
	start, end := strings.Index(text, "  - id: service"), strings.Index(text, "  - id: copy")
	path := filepath.Join(t.TempDir(), "blueprint.yaml")
	if err := os.WriteFile(path, []byte(text[:start]+text[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(path, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := reconciler.New(bp, reconciler.Options{Client: f.store, Recorder: f.store})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []schema.GroupVersionKind{deploymentGVK, serviceGVK, configMapGVK, {Group: "example.inrun.dev", Version: "v1", Kind: "Website"}}
	if rep := rec.PruneUndeclared(ctx, nil, kinds, []string{"elsewhere"}); len(rep.Pruned)+len(rep.LeftAlone) != 0 {
		t.Fatalf("a runtime of another namespace pruned %v, left alone %v; want nothing done", rep.Pruned, rep.LeftAlone)
	}
	rep := rec.PruneUndeclared(ctx, nil, kinds, nil)
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rep.Pruned); got != "[Service shop/web]" {
		t.Errorf("pruned %s, want the Service Inrun made", got)
	}
	if f.object(serviceGVK, "shop", "web") != nil {
		t.Error("the Service of the removed template is still there")
	}
	if f.object(serviceGVK, "shop", "theirs") == nil || fmt.Sprint(rep.LeftAlone) != "[Service shop/theirs]" {
		t.Errorf("left alone %v; want the Service Inrun never wrote, kept", rep.LeftAlone)
	}
	if f.object(deploymentGVK, "shop", "web") == nil || f.object(configMapGVK, "elsewhere", "web-copy") == nil {
		t.Error("a child of a kind still declared was deleted")
	}
	events := fmt.Sprint(f.store.Events(f.bp.Resource.GroupVersionKind, client.ObjectKeyFromObject(f.cr), 0))
	if !strings.Contains(events, "no longer declares the kind Service") {
		t.Errorf("no Event says why the Service went: %s", events)
	}

	// A kind the runtime may not list is skipped, and said.
	rep = rec.PruneUndeclared(ctx, forbiddenLister{Reader: f.store, kind: "ServiceList"}, kinds, nil)
	if err := rep.Err(); err != nil || fmt.Sprint(rep.Unlisted) != "[v1 Service]" {
		t.Errorf("with Services forbidden: unlisted %v, errors %v; want v1 Service unlisted, no error", rep.Unlisted, err)
	}
}

// forbiddenLister refuses to list kind, as RBAC would.
type forbiddenLister struct {
	client.Reader
	kind string
}

func (l forbiddenLister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if list.GetObjectKind().GroupVersionKind().Kind == l.kind {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "", errors.New("RBAC"))
	}
	return l.Reader.List(ctx, list, opts...)
}
