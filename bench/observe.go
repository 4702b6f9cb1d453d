package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

var websiteGVR = schema.GroupVersionResource{Group: websiteGroup, Version: "v1", Resource: "websites"}

// observer watches the Websites of one namespace and counts those that
// report Ready for their current generation.
type observer struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc

	mu sync.Mutex
	// minGeneration is the generation a Website must have reached to
	// count: 1 after creating, 2 after the first edit.
	minGeneration int64
	want          int
	ready         map[string]bool
	generation    map[string]int64
	count         int
	allReadyAt    time.Time
	changed       chan struct{}
	// statusChanges counts updates that changed a Website's status.
	statusChanges int64
}

// observe starts watching the Websites of namespace.
func observe(ctx context.Context, dyn dynamic.Interface, namespace string) (*observer, error) {
	ctx, cancel := context.WithCancel(ctx)
	o := &observer{
		cancel:     cancel,
		ready:      map[string]bool{},
		generation: map[string]int64{},
		changed:    make(chan struct{}),
	}
	o.informer = dynamicinformer.NewFilteredDynamicInformer(dyn, websiteGVR, namespace, 0, cache.Indexers{}, nil).Informer()
	_, err := o.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { o.update(obj) },
		UpdateFunc: func(old, obj any) {
			o.countStatusChange(old, obj)
			o.update(obj)
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				o.set(u.GetName(), 0, false, true)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	go o.informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), o.informer.HasSynced) {
		cancel()
		return nil, fmt.Errorf("watching Websites in %s: %w", namespace, context.Cause(ctx))
	}
	return o, nil
}

func (o *observer) stop() { o.cancel() }

// expect starts counting Websites that are ready at generation gen or
// later, until want of them are.
func (o *observer) expect(want int, gen int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.want, o.minGeneration = want, gen
	o.allReadyAt = time.Time{}
	o.statusChanges = 0
	o.recount()
}

// changes returns how many times a Website's status changed since expect.
func (o *observer) changes() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.statusChanges
}

func (o *observer) countStatusChange(old, obj any) {
	before, ok1 := old.(*unstructured.Unstructured)
	after, ok2 := obj.(*unstructured.Unstructured)
	if !ok1 || !ok2 || before.GetResourceVersion() == after.GetResourceVersion() {
		return
	}
	if !equality.Semantic.DeepEqual(before.Object["status"], after.Object["status"]) {
		o.mu.Lock()
		o.statusChanges++
		o.mu.Unlock()
	}
}

// progress returns how many Websites exist and how many count as ready,
// and when the last of the wanted ones became ready (zero until then).
func (o *observer) progress() (seen, ready int, allReadyAt time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.ready), o.count, o.allReadyAt
}

// wait returns a channel closed at the next change.
func (o *observer) wait() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

func (o *observer) update(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	o.set(u.GetName(), u.GetGeneration(), websiteReady(u), false)
}

func (o *observer) set(name string, gen int64, ready, deleted bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if deleted {
		delete(o.ready, name)
		delete(o.generation, name)
	} else {
		o.ready[name], o.generation[name] = ready, gen
	}
	o.recount()
}

func (o *observer) recount() {
	n := 0
	for name, r := range o.ready {
		if r && o.generation[name] >= o.minGeneration {
			n++
		}
	}
	o.count = n
	if o.want > 0 && n >= o.want && o.allReadyAt.IsZero() {
		o.allReadyAt = time.Now()
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// websiteReady is what every kind must report, the limit included: status
// for the current generation, as many ready replicas as asked for, and a
// Ready condition that is True.
func websiteReady(u *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if gen != u.GetGeneration() {
		return false
	}
	want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	have, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	if have != want {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}
