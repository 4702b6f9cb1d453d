package main

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// loader is the client that creates and edits the Websites, apart from the
// operator under test. Its writes are counted, so that they can be taken
// out of the API server's figures.
type loader struct {
	dyn     dynamic.Interface
	workers int
	writes  *writeCounter
}

// siteName is the name of the i-th Website.
func siteName(i int) string { return fmt.Sprintf("site-%05d", i) }

// create creates n Websites with one replica each, handing each created
// object to done (which may be nil).
func (l *loader) create(ctx context.Context, namespace string, n int, done func(*unstructured.Unstructured)) error {
	return l.each(ctx, n, func(ctx context.Context, i int) error {
		site := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": websiteGroup + "/v1",
			"kind":       "Website",
			"metadata":   map[string]any{"name": siteName(i), "namespace": namespace},
			// image and port take the CRD's defaults.
			"spec": map[string]any{"replicas": int64(1)},
		}}
		out, err := l.dyn.Resource(websiteGVR).Namespace(namespace).Create(ctx, site, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Website %s: %w", siteName(i), err)
		}
		if done != nil {
			done(out)
		}
		return nil
	})
}

// edit sets spec.replicas of n Websites to replicas, handing each edited
// object to done (which may be nil).
func (l *loader) edit(ctx context.Context, namespace string, n int, replicas int64, done func(*unstructured.Unstructured)) error {
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	return l.each(ctx, n, func(ctx context.Context, i int) error {
		out, err := l.dyn.Resource(websiteGVR).Namespace(namespace).Patch(ctx, siteName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("editing Website %s: %w", siteName(i), err)
		}
		if done != nil {
			done(out)
		}
		return nil
	})
}

// each runs f for 0..n-1 on the loader's workers and returns the first
// error.
func (l *loader) each(ctx context.Context, n int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range l.workers {
		wg.Go(func() {
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
