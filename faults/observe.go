package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

var (
	widgetGVR    = schema.GroupVersionResource{Group: "faults.inrun.dev", Version: "v1", Resource: "widgets"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// tracker watches every Widget, ConfigMap and Secret of the matrix's
// namespaces and keeps each object's history, by UID: when it was added,
// changed (a new resourceVersion) and deleted. That is how the matrix
// tells a child kept from one deleted and created again, and an object
// left alone from one written.
type tracker struct {
	cancel context.CancelFunc

	mu   sync.Mutex
	objs map[types.UID]*history
}

// history is what happened to one object.
type history struct {
	resource string
	key      string // namespace/name
	added    time.Time
	changes  []time.Time // each new resourceVersion after the first
	deleted  time.Time
	rv       string
}

// startTracker starts the informers and waits until they are in sync.
func startTracker(ctx context.Context, dyn dynamic.Interface) (*tracker, error) {
	ctx, cancel := context.WithCancel(ctx)
	t := &tracker{cancel: cancel, objs: map[types.UID]*history{}}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	var synced []cache.InformerSynced
	for _, gvr := range []schema.GroupVersionResource{widgetGVR, configMapGVR, secretGVR} {
		inf := factory.ForResource(gvr).Informer()
		resource := gvr.Resource
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { t.saw(resource, obj, false) },
			UpdateFunc: func(_, obj any) { t.saw(resource, obj, false) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				t.saw(resource, obj, true)
			},
		})
		if err != nil {
			cancel()
			return nil, err
		}
		synced = append(synced, inf.HasSynced)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		cancel()
		return nil, fmt.Errorf("watching the matrix's objects: %w", context.Cause(ctx))
	}
	return t, nil
}

func (t *tracker) stop() { t.cancel() }

func (t *tracker) saw(resource string, obj any, deleted bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || !strings.HasPrefix(u.GetNamespace(), namespacePrefix) {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.objs[u.GetUID()]
	if h == nil {
		h = &history{resource: resource, key: u.GetNamespace() + "/" + u.GetName(), added: now, rv: u.GetResourceVersion()}
		t.objs[u.GetUID()] = h
	} else if u.GetResourceVersion() != h.rv && !deleted {
		h.changes = append(h.changes, now)
		h.rv = u.GetResourceVersion()
	}
	if deleted {
		h.deleted = now
	}
}

// deletedIn lists the children of Inrun deleted in namespace since from.
func (t *tracker) deletedIn(namespace string, from time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, h := range t.objs {
		if !h.deleted.IsZero() && !h.deleted.Before(from) && strings.HasPrefix(h.key, namespace+"/") && h.resource != widgetGVR.Resource {
			out = append(out, h.resource+" "+h.key)
		}
	}
	sort.Strings(out)
	return out
}

// changedSince counts the changes to the objects uids since from.
func (t *tracker) changedSince(uids []types.UID, from time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, uid := range uids {
		if h := t.objs[uid]; h != nil {
			for _, c := range h.changes {
				if !c.Before(from) {
					n++
				}
			}
		}
	}
	return n
}

// recreated lists the names in namespace that more than one object of a
// kind has had: a child deleted and created again, or created twice.
func (t *tracker) recreated(namespace string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[string]int{}
	for _, h := range t.objs {
		if strings.HasPrefix(h.key, namespace+"/") {
			seen[h.resource+" "+h.key]++
		}
	}
	var out []string
	for k, n := range seen {
		if n > 1 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// rewrites counts, by resource, the changes the objects of namespace had
// after their creation, in all and at most for one object.
func (t *tracker) rewrites(namespace string) (total, most map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	total, most = map[string]int{}, map[string]int{}
	for _, h := range t.objs {
		if !strings.HasPrefix(h.key, namespace+"/") {
			continue
		}
		total[h.resource] += len(h.changes)
		most[h.resource] = max(most[h.resource], len(h.changes))
	}
	return total, most
}

// changesOf counts the changes, after their creation, of the objects of
// resource in namespace since from: the writes that changed something.
func (t *tracker) changesOf(namespace, resource string, from time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, h := range t.objs {
		if h.resource != resource || !strings.HasPrefix(h.key, namespace+"/") {
			continue
		}
		for _, c := range h.changes {
			if !c.Before(from) {
				n++
			}
		}
	}
	return n
}
