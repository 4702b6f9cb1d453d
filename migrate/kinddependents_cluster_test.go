package migrate_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/migrate"
)

// TestClusterKindMoveKeepsOthersDependents, on the real local control
// plane with garbage collection on: a Site carrying another controller's
// finalizer is named by the plan and makes the apply refuse, writing
// nothing; once its finalizer is removed, the move deletes each Site
// orphaning its dependents, so that a Secret made by hand and another
// controller's ConfigMap that name a Site in an owner reference are
// kept, listed by the plan, and lose only that reference; Inrun's
// children keep their UIDs, owned by the WebApps.
func TestClusterKindMoveKeepsOthersDependents(t *testing.T) {
	ctx := t.Context()
	f := newKindFixture(t, "")
	c, ns, k := f.c, f.ns, f.k
	web := map[string]string{"tier": "web"}
	a := f.createSite(t, "a", web, map[string]any{"image": "nginx:a", "replicas": int64(1)})
	f.createSite(t, "held", web, map[string]any{"image": "nginx:h", "replicas": int64(1)})
	before := siteChildren(t, c, ns, f.siteKind, "site", 2)
	h, err := f.get(ctx, f.siteKind, "held")
	if err != nil {
		t.Fatal(err)
	}
	h.SetFinalizers(append(h.GetFinalizers(), "example.com/protect"))
	if err := c.Update(ctx, h); err != nil {
		t.Fatal(err)
	}
	ref := func(controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: a.GetAPIVersion(), Kind: "Site", Name: "a", UID: a.GetUID(), Controller: &controller}}
	}
	handmade := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "handmade", Namespace: ns, OwnerReferences: ref(false)}}
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: ns, OwnerReferences: ref(true)}}
	for _, o := range []client.Object{handmade, theirs} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	d, err := discovery.NewDiscoveryClientForConfig(f.cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	opts := migrate.Options{Client: c, Namespace: f.snapNS, Discovery: d}

	p, err := k.Plan(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantDeps := []string{
		ns + "/a: ConfigMap " + ns + "/theirs: kept, its owner reference to the Site removed by the move",
		ns + "/a: Secret " + ns + "/handmade: kept, its owner reference to the Site removed by the move",
	}
	if strings.Join(p.Dependents, "\n") != strings.Join(wantDeps, "\n") {
		t.Errorf("dependents:\n%s\nwant:\n%s", strings.Join(p.Dependents, "\n"), strings.Join(wantDeps, "\n"))
	}
	if len(p.Finalized) != 1 || p.Finalized[0].String() != ns+"/held: finalizer example.com/protect, not Inrun's" || !p.Refused() {
		t.Errorf("plan: finalized %+v, refused %v", p.Finalized, p.Refused())
	}
	if _, _, err := k.Apply(ctx, opts); err == nil || !strings.Contains(err.Error(), ns+"/held: finalizer example.com/protect") {
		t.Fatalf("apply with a Site another controller's finalizer holds: %v", err)
	}
	var secs corev1.SecretList
	if err := c.List(ctx, &secs, client.InNamespace(f.snapNS)); err != nil || len(secs.Items) != 0 {
		t.Errorf("a refused apply wrote %d snapshots (%v)", len(secs.Items), err)
	}

	// That controller is gone: its finalizer is removed.
	if h, err = f.get(ctx, f.siteKind, "held"); err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, fin := range h.GetFinalizers() {
		if fin != "example.com/protect" {
			keep = append(keep, fin)
		}
	}
	h.SetFinalizers(keep)
	if err := c.Update(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, res, err := k.Apply(ctx, opts); err != nil || res.Moved != 2 || len(res.Failed) > 0 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	for _, n := range []string{"a", "held"} {
		if _, err := f.get(ctx, f.siteKind, n); !apierrors.IsNotFound(err) {
			t.Errorf("Site %s after the move: %v", n, err)
		}
	}
	for _, o := range []client.Object{handmade, theirs} {
		var last error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			last = c.Get(ctx, client.ObjectKeyFromObject(o), o)
			if last == nil && len(o.GetOwnerReferences()) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if last != nil || len(o.GetOwnerReferences()) != 0 {
			t.Errorf("%s after the move: %v, owner references %+v; want it kept, without its owner reference", o.GetName(), last, o.GetOwnerReferences())
		}
	}
	after := siteChildren(t, c, ns, webAppKind, "webapp", 2)
	for key, uid := range before {
		if after[key] != uid {
			t.Errorf("%s: UID %s after the move, %s before", key, after[key], uid)
		}
	}
	nu, err := f.get(ctx, webAppKind, "a")
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &cm); err != nil || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != nu.GetUID() {
		t.Errorf("ConfigMap a: %v, owner references %+v, want the WebApp's only", err, cm.OwnerReferences)
	}
}
