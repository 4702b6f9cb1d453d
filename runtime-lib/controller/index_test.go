package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// TestOwnerIndex lists children through OwnerIndex as listChildren does,
// from controller-runtime's own cache (its informers fed from a fixed
// list): the index is written with one key per child, and the cache must
// read it under the same name and key.
func TestOwnerIndex(t *testing.T) {
	bp, err := compiler.CompileFile("../../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	child := func(ns, name, owner string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1", Labels: map[string]string{}}}
		if owner != "" {
			d.Labels[reconciler.LabelBlueprint] = bp.Name
			d.Labels[reconciler.LabelOwnerUID] = owner
		}
		return d
	}
	items := []appsv1.Deployment{
		*child("one", "a", "uid-a"),
		*child("two", "a-elsewhere", "uid-a"),
		*child("one", "b", "uid-b"),
		*child("one", "foreign", ""),
	}
	lists := map[string]runtime.Object{
		"Deployment": &appsv1.DeploymentList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: items},
		"Service":    &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}},
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:1"}, cache.Options{
		Scheme: clientgoscheme.Scheme,
		Mapper: mapper,
		NewInformer: func(_ toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			kind := "Service"
			if _, ok := obj.(*appsv1.Deployment); ok {
				kind = "Deployment"
			}
			lw := &toolscache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					return lists[kind].DeepCopyObject(), nil
				},
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					return watch.NewFake(), nil
				},
			}
			return toolscache.NewSharedIndexInformer(listThenWatch{lw}, obj, resync, indexers)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	index, err := indexOwners(c, clientgoscheme.Scheme, bp, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	for owner, want := range map[string][]string{"uid-a": {"a", "a-elsewhere"}, "uid-b": {"b"}, "uid-none": nil} {
		list := &appsv1.DeploymentList{}
		err := c.List(ctx, list, client.MatchingLabels{reconciler.LabelBlueprint: bp.Name, reconciler.LabelOwnerUID: owner}, client.MatchingFields{index: owner})
		if err != nil {
			t.Fatalf("listing the children of %s: %v", owner, err)
		}
		var got []string
		for _, d := range list.Items {
			got = append(got, d.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("children of %s: got %v, want %v", owner, got, want)
		}
	}
	// One key per child: the UID in every namespace, not also in its own.
	informer, err := c.GetInformer(ctx, &appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	keys := informer.(toolscache.SharedIndexInformer).GetIndexer().ListIndexFuncValues(ownerIndexName)
	slices.Sort(keys)
	if want := []string{allNamespacesKey + "uid-a", allNamespacesKey + "uid-b"}; !slices.Equal(keys, want) {
		t.Errorf("index keys: got %v, want %v", keys, want)
	}
}

// listThenWatch is a fixed list and a watch of nothing: the reflector
// lists, where it would otherwise wait for a watch-list stream's end.
type listThenWatch struct{ *toolscache.ListWatch }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }
