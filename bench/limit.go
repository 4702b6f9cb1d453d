package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// limitWorkers is how many writes the limit makes at once.
const limitWorkers = 16

// limitBlueprint is the Blueprint name the limit's children are labelled
// with, as Inrun labels the Website pack's.
const limitBlueprint = "website"

// limit is the cheapest correct way to make Websites converge: no
// controller, no cache of Websites. It is handed each Website as the loader
// creates or edits it, applies the Deployment and Service Inrun would apply
// (only the Deployment on an edit: the Service does not change), and
// applies the status once, when a watch on the Deployments says the
// Deployment is ready. Its writes are what Inrun writes, with nothing in
// between.
type limit struct {
	c      client.Client
	writes *writeCounter
	queue  chan func(context.Context) error
	// running counts the jobs being done.
	running atomic.Int64
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// headless gives the Services clusterIP: None (-headless).
	headless bool

	mu    sync.Mutex
	sites map[string]*limitSite
	err   error
}

// limitSite is what the limit knows of one Website.
type limitSite struct {
	namespace, name string
	uid             types.UID
	generation      int64
	replicas        int64
	port            int64
	image           string
	// statusQueued is the generation whose status is queued or written.
	statusQueued int64
}

// startLimit starts the limit's workers and its watch on the Deployments
// of namespace. Each Website needs at most three writes queued at once.
func startLimit(ctx context.Context, cfg *rest.Config, namespace string, n int, headless bool) (*limit, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "inrun-bench-" + kindLimit
	l := &limit{writes: newWriteCounter(), queue: make(chan func(context.Context) error, 3*n+limitWorkers), sites: map[string]*limitSite{}, headless: headless}
	l.writes.instrument(cfg)
	var err error
	if l.c, err = client.New(cfg, client.Options{Scheme: runner.Scheme()}); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, l.cancel = context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{reconciler.LabelBlueprint: limitBlueprint}.String()
		}))
	deployments := factory.Apps().V1().Deployments().Informer()
	if _, err := deployments.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.deploymentChanged(obj) },
		UpdateFunc: func(_, obj any) { l.deploymentChanged(obj) },
	}); err != nil {
		l.cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			l.cancel()
			return nil, fmt.Errorf("watching Deployments: %w", context.Cause(ctx))
		}
	}
	for range limitWorkers {
		l.wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case job := <-l.queue:
					l.running.Add(1)
					l.do(ctx, job)
					l.running.Add(-1)
				}
			}
		})
	}
	return l, nil
}

// do runs a write, retrying briefly: the limit has no queue with backoff.
func (l *limit) do(ctx context.Context, job func(context.Context) error) {
	var err error
	for attempt := range 5 {
		if err = job(ctx); err == nil || ctx.Err() != nil {
			return
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
}

// created takes a Website the loader created.
func (l *limit) created(u *unstructured.Unstructured) {
	site := l.record(u)
	l.queue <- func(ctx context.Context) error {
		if err := l.apply(ctx, l.deployment(site)); err != nil {
			return err
		}
		return l.apply(ctx, l.service(site))
	}
}

// edited takes a Website the loader edited.
func (l *limit) edited(u *unstructured.Unstructured) {
	site := l.record(u)
	l.queue <- func(ctx context.Context) error { return l.apply(ctx, l.deployment(site)) }
}

// record stores what the limit needs of u and returns a copy to render
// from.
func (l *limit) record(u *unstructured.Unstructured) limitSite {
	replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	port, _, _ := unstructured.NestedInt64(u.Object, "spec", "port")
	image, _, _ := unstructured.NestedString(u.Object, "spec", "image")
	l.mu.Lock()
	defer l.mu.Unlock()
	site := l.sites[u.GetName()]
	if site == nil {
		site = &limitSite{namespace: u.GetNamespace(), name: u.GetName()}
		l.sites[u.GetName()] = site
	}
	site.uid, site.generation = u.GetUID(), u.GetGeneration()
	site.replicas, site.port, site.image = replicas, port, image
	return *site
}

// deploymentChanged queues the status of a Website whose Deployment has
// become ready for the replicas the Website asks for, once per generation.
func (l *limit) deploymentChanged(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || !deploymentReady(d) {
		return
	}
	l.mu.Lock()
	site := l.sites[d.Name]
	if site == nil || int64(*d.Spec.Replicas) != site.replicas || site.statusQueued >= site.generation {
		l.mu.Unlock()
		return
	}
	site.statusQueued = site.generation
	s := *site
	l.mu.Unlock()
	ready := int64(d.Status.ReadyReplicas)
	l.queue <- func(ctx context.Context) error { return l.applyStatus(ctx, s, ready) }
}

// deploymentReady is Inrun's rule for a Deployment.
func deploymentReady(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas >= want && d.Status.ReadyReplicas >= want && d.Status.AvailableReplicas >= want
}

func (l *limit) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	return l.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("inrun-bench-limit"), client.ForceOwnership)
}

func (l *limit) applyStatus(ctx context.Context, s limitSite, ready int64) error {
	now := metav1.Now().UTC().Format(time.RFC3339)
	cond := func(typ, status, reason, msg string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
			"observedGeneration": s.generation, "lastTransitionTime": now}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": websiteGroup + "/v1",
		"kind":       "Website",
		"metadata":   map[string]any{"name": s.name, "namespace": s.namespace},
		"status": map[string]any{
			"readyReplicas":      ready,
			"url":                fmt.Sprintf("http://%s.%s.svc:%d", s.name, s.namespace, s.port),
			"observedGeneration": s.generation,
			"conditions": []any{
				cond("Degraded", "False", "AsExpected", ""),
				cond("Progressing", "False", "Converged", "every child is applied"),
				cond("Ready", "True", "ChildrenReady", "every child is ready"),
			},
		},
	}}
	return l.c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("inrun-bench-limit"), client.ForceOwnership)
}

// inventory dresses a child as Inrun does: its labels, the owner
// annotation, the owner reference and a hash of what is applied (a label).
func inventory(s limitSite, child string, obj map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(s.namespace)
	u.SetLabels(map[string]string{
		"app":                     s.name,
		reconciler.LabelManagedBy: reconciler.ManagedBy,
		reconciler.LabelBlueprint: limitBlueprint,
		reconciler.LabelOwnerUID:  string(s.uid),
		reconciler.LabelChild:     child,
	})
	t := true
	u.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: websiteGroup + "/v1", Kind: "Website", Name: s.name, UID: s.uid,
		Controller: &t, BlockOwnerDeletion: &t,
	}})
	annotations := map[string]string{reconciler.AnnotationOwner: websiteGroup + "/Website/" + s.namespace + "/" + s.name}
	u.SetAnnotations(annotations)
	raw, _ := json.Marshal(u.Object)
	sum := sha256.Sum256(raw)
	labels := u.GetLabels()
	labels[reconciler.LabelAppliedHash] = hex.EncodeToString(sum[:8])
	u.SetLabels(labels)
	return u
}

func (l *limit) deployment(s limitSite) *unstructured.Unstructured {
	match := map[string]any{"app": s.name}
	return inventory(s, "deployment", map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": s.name},
		"spec": map[string]any{
			"replicas": s.replicas,
			"selector": map[string]any{"matchLabels": match},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": s.name}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name":  "web",
					"image": s.image,
					"ports": []any{map[string]any{"name": "http", "containerPort": s.port}},
				}}},
			},
		},
	})
}

func (l *limit) service(s limitSite) *unstructured.Unstructured {
	spec := map[string]any{
		"selector": map[string]any{"app": s.name},
		"ports":    []any{map[string]any{"name": "http", "port": s.port, "targetPort": "http"}},
	}
	if l.headless {
		spec["clusterIP"] = "None"
	}
	return inventory(s, "service", map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": s.name},
		"spec":       spec,
	})
}

// stats reports the limit's writes; it has no reconciles.
func (l *limit) stats(context.Context) (opStats, error) {
	l.mu.Lock()
	err := l.err
	l.mu.Unlock()
	if err != nil {
		return opStats{}, fmt.Errorf("the limit gave up on a write: %w", err)
	}
	c, last := l.writes.snapshot()
	return opStats{Writes: c, LastWrite: last, Reconciles: -1, Backlog: int64(len(l.queue)) + l.running.Load()}, nil
}

// pid is the limit's process: the benchmark's own.
func (l *limit) pid() int { return os.Getpid() }

func (l *limit) inProcess() bool { return true }

func (l *limit) stop() error {
	l.cancel()
	l.wg.Wait()
	return nil
}
