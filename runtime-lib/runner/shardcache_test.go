package runner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/runner"
	"github.com/inrun/inrun/runtime-lib/shard"
)

// cached is the inrun_shard_cached_objects gauge of replica id and kind,
// -1 when the replica has not set it.
func cached(id string, gk schema.GroupKind) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, fam := range families {
		if fam.GetName() != "inrun_shard_cached_objects" {
			continue
		}
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["shard"] == id && labels["kind"] == gk.String() {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// cachesHold is "" once each replica's cache of each kind holds exactly
// want[replica][kind] objects.
func cachesHold(want map[string]map[schema.GroupKind]int) func() string {
	return func() string {
		for id, kinds := range want {
			for gk, n := range kinds {
				if got := cached(id, gk); got != float64(n) {
					return fmt.Sprintf("%s caches %v %s, want %d", id, got, gk, n)
				}
			}
		}
		return ""
	}
}

// bucketOwners maps each custom resource UID to the replica Assign gives
// its bucket.
func bucketOwners(uids map[string]types.UID, members ...string) map[string]string {
	byBucket := map[int]string{}
	for m, bs := range shard.Assign(members, shard.DefaultBuckets) {
		for _, b := range bs {
			byBucket[b] = m
		}
	}
	out := map[string]string{}
	for n, uid := range uids {
		out[n] = byBucket[shard.Bucket(uid, shard.DefaultBuckets)]
	}
	return out
}

// TestShardsCacheTheirBuckets runs two replicas with --shards
// --shard-selection=labels on Sites
// some of which a runtime without shards reconciled before, and checks
// that every Site gets its bucket label and is reconciled, that every
// child gets its owner's bucket label in place (the children made before
// sharding are not made again), that an object of a child's name that
// Inrun did not make is left untouched, and that each replica's caches
// hold only the Sites of its buckets and their Deployments, from which
// both then follow an edit.
func TestShardsCacheTheirBuckets(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A person's Deployment, named as the child of Site "taken" would be.
	labels := map[string]string{"app": "taken"}
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: f.ns},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}},
			},
		},
	}
	if err := f.admin.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	// Sites reconciled before sharding: their children lack the label.
	var names, early []string
	for i := 0; i < 16; i++ {
		names = append(names, fmt.Sprintf("site-%02d", i))
	}
	early = names[:8]
	before := f.start(f.cfg, []string{f.ns}, nil)
	for _, n := range early {
		f.createSite(n, map[string]any{"replicas": int64(1)})
	}
	earlyUIDs := map[string]types.UID{}
	for _, n := range early {
		f.eventually(time.Minute, "the Deployment of "+n, exists(f, deploymentGVK, f.ns, n))
		d, _ := f.get(deploymentGVK, f.ns, n)
		if _, ok := d.GetLabels()[shard.LabelOwnerBucket]; ok {
			t.Fatalf("a runtime without shards labelled %s with its bucket", n)
		}
		earlyUIDs[n] = d.GetUID()
	}
	before.cancel()
	err := <-before.done
	before.done <- err
	// The others are made while no runtime runs: nobody labels them.
	for _, n := range append(names[8:], "taken") {
		f.createSite(n, map[string]any{"replicas": int64(1)})
	}

	for _, id := range []string{"s0", "s1"} {
		f.start(f.cfg, []string{f.ns}, func(o *runner.Options) {
			o.Shard = &shard.Options{ID: id, Namespace: f.ns, LeaseDuration: 4 * time.Second, RenewPeriod: 500 * time.Millisecond, Selection: shard.SelectLabels}
		})
	}
	uids := map[string]types.UID{}
	for _, n := range append(names, "taken") {
		site, err := f.get(siteGVK, f.ns, n)
		if err != nil {
			t.Fatal(err)
		}
		uids[n] = site.GetUID()
	}
	f.eventually(time.Minute, "every Site and its Deployment labelled with its bucket", func() string {
		for _, n := range names {
			want := shard.BucketValue(uids[n], shard.DefaultBuckets)
			site, err := f.get(siteGVK, f.ns, n)
			if err != nil {
				return err.Error()
			}
			if got := site.GetLabels()[shard.LabelBucket]; got != want {
				return fmt.Sprintf("Site %s has bucket label %q, want %q", n, got, want)
			}
			d, err := f.get(deploymentGVK, f.ns, n)
			if err != nil {
				return err.Error()
			}
			if got := d.GetLabels()[shard.LabelOwnerBucket]; got != want {
				return fmt.Sprintf("Deployment %s has owner bucket label %q, want %q", n, got, want)
			}
			if got := d.GetLabels()[reconciler.LabelOwnerUID]; got != string(uids[n]) {
				return fmt.Sprintf("Deployment %s belongs to %q", n, got)
			}
		}
		return ""
	})
	for _, n := range early {
		d, _ := f.get(deploymentGVK, f.ns, n)
		if d.GetUID() != earlyUIDs[n] {
			t.Errorf("the Deployment of %s, made before sharding, was made again", n)
		}
	}
	f.eventually(time.Minute, "the conflict over the person's Deployment reported", f.condition("taken", "Degraded", "True"))
	got := &appsv1.Deployment{}
	if err := f.admin.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatal(err)
	}
	// Its status is the Deployment controller's; nothing else may change.
	if got.Generation != foreign.Generation || len(got.Labels) > 0 || len(got.OwnerReferences) > 0 {
		t.Errorf("the person's Deployment was changed: generation %d (was %d), labels %v, owners %v", got.Generation, foreign.Generation, got.Labels, got.OwnerReferences)
	}
	for _, mf := range got.ManagedFields {
		if mf.Manager == reconciler.ManagedBy || mf.Manager == shard.FieldOwner {
			t.Errorf("the person's Deployment was written by %s", mf.Manager)
		}
	}

	// Each replica caches the Sites of its buckets and their Deployments.
	owners := bucketOwners(uids, "s0", "s1")
	site, deployment := siteGVK.GroupKind(), deploymentGVK.GroupKind()
	want := map[string]map[schema.GroupKind]int{"s0": {site: 0, deployment: 0}, "s1": {site: 0, deployment: 0}}
	for n, owner := range owners {
		want[owner][site]++
		if n != "taken" {
			want[owner][deployment]++
		}
	}
	if want["s0"][site] == 0 || want["s1"][site] == 0 {
		t.Fatalf("one replica owns no Site (%v): the test proves nothing", want)
	}
	f.eventually(time.Minute, "each replica caches only its buckets'", cachesHold(want))
	t.Logf("cached by replica: %v", want)

	// Both replicas, each on its own caches since its last rebuild, follow
	// an edit of every Site.
	for _, n := range names {
		f.patchSite(n, map[string]any{"replicas": int64(2)})
	}
	f.eventually(time.Minute, "every Deployment scaled", func() string {
		for _, n := range names {
			d, err := f.get(deploymentGVK, f.ns, n)
			if err != nil {
				return err.Error()
			}
			if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
				return fmt.Sprintf("Deployment %s has %d replicas, want 2", n, r)
			}
		}
		return ""
	})
}
