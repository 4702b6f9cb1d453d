package reconciler

import (
	"context"
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/randfill"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"

	"github.com/inrun/inrun/runtime-lib/internal/convert"
)

var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

// rolling is a child Deployment of testdata/relevance.yaml asked for 2
// replicas, its controller having seen the spec, 1 of 2 replicas ready.
func rolling(child string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "hello-" + child, Namespace: "default", UID: "u1", ResourceVersion: "10", Generation: 2,
			Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelBlueprint: "relevance", LabelChild: child, LabelOwnerUID: "cr1", "app": "hello"},
			Annotations: map[string]string{AnnotationOwner: "example.inrun.dev/Website/default/hello"},
		},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}},
		},
	}
}

// relevanceReconciler is a Reconciler of testdata/relevance.yaml.
func relevanceReconciler(t *testing.T) *Reconciler {
	t.Helper()
	bp, err := compiler.CompileFile("testdata/relevance.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(bp, Options{Client: fake.NewClientBuilder().Build()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRelevant(t *testing.T) {
	r := relevanceReconciler(t)
	// Each case changes a copy of rolling(child) and gives it the next
	// resourceVersion, unless it says otherwise.
	for _, tt := range []struct {
		name   string
		child  string
		change func(d *appsv1.Deployment)
		want   bool
	}{
		{"only the resourceVersion", "deployment", func(*appsv1.Deployment) {}, false},
		{"a resync", "deployment", func(d *appsv1.Deployment) { d.ResourceVersion = "10" }, true},
		{"the spec seen, still not ready", "deployment", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }, false},
		{"replicas counted, still not ready", "deployment", func(d *appsv1.Deployment) {
			d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.UnavailableReplicas = 2, 2, 2, 1
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue})
		}, false},
		{"a status path an expression reads", "deployment", func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 2 }, true},
		// As the API server stores it: the next generation.
		{"a spec edited by someone else", "deployment", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "httpd"; d.Generation++ }, true},
		// Which it never stores for a Deployment: the spec is not compared
		// (specInGeneration). A Service's is (TestRelevantService).
		{"a spec changed in the same generation", "deployment", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "httpd" }, false},
		{"a generation bumped", "deployment", func(d *appsv1.Deployment) { d.Generation = 3 }, true},
		{"a label added by someone else", "deployment", func(d *appsv1.Deployment) { d.Labels["team"] = "web" }, false},
		{"an annotation added by someone else", "deployment", func(d *appsv1.Deployment) { d.Annotations["deployment.kubernetes.io/revision"] = "1" }, false},
		{"a label removed", "deployment", func(d *appsv1.Deployment) { delete(d.Labels, "app") }, true},
		{"a label changed", "deployment", func(d *appsv1.Deployment) { d.Labels["app"] = "other" }, true},
		{"one of Inrun's labels added", "deployment", func(d *appsv1.Deployment) { d.Labels[LabelAppliedHash] = "abc" }, true},
		{"being deleted", "deployment", func(d *appsv1.Deployment) { d.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
		{"an owner reference added", "deployment", func(d *appsv1.Deployment) {
			d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "u2"}}
		}, true},
		{"readyWhen's path", "worker", func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }, true},
		{"the kind's rule does not apply under readyWhen", "worker", func(d *appsv1.Deployment) {
			d.Status.ObservedGeneration, d.Status.UpdatedReplicas, d.Status.ReadyReplicas = 2, 2, 2
		}, false},
		{"read whole", "batch", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }, true},
		{"read whole, only the resourceVersion", "batch", func(*appsv1.Deployment) {}, true},
		{"labels read: one added", "config", func(d *appsv1.Deployment) { d.Labels["team"] = "web" }, true},
		{"labels read: status only", "config", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }, false},
		{"not a child of this Blueprint", "other", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }, true},
	} {
		old := rolling(tt.child)
		new := old.DeepCopy()
		new.ResourceVersion = "11"
		tt.change(new)
		if got := r.Relevant(deploymentGVK, old, new); got != tt.want {
			t.Errorf("%s: typed: Relevant = %v, want %v", tt.name, got, tt.want)
		}
		// The same update of the same objects, unstructured as the cache
		// holds kinds with no Go type.
		if got := r.Relevant(deploymentGVK, toUnstructured(t, old), toUnstructured(t, new)); got != tt.want {
			t.Errorf("%s: unstructured: Relevant = %v, want %v", tt.name, got, tt.want)
		}
	}

	// Ready by the kind's rule with nothing an expression reads changed:
	// the verdict alone counts.
	old := rolling("deployment")
	old.Status.ReadyReplicas = 2
	new := old.DeepCopy()
	new.ResourceVersion = "11"
	new.Status.ObservedGeneration, new.Status.UpdatedReplicas, new.Status.AvailableReplicas = 2, 2, 2
	if r.kindReady(readinessView(deploymentGVK, old, toUnstructured(t, old).Object["status"])) {
		t.Fatal("the Deployment before the update should not be ready")
	}
	if !r.Relevant(deploymentGVK, old, new) {
		t.Error("an update that makes a child ready by its kind's rule should count")
	}
	if !r.Relevant(deploymentGVK, toUnstructured(t, old), toUnstructured(t, new)) {
		t.Error("unstructured: an update that makes a child ready by its kind's rule should count")
	}
}

// TestRelevantService checks a kind ready once it exists: an update of its
// status counts only where an expression reads the status.
func TestRelevantService(t *testing.T) {
	r := relevanceReconciler(t)
	gvk := corev1.SchemeGroupVersion.WithKind("Service")
	for _, tt := range []struct {
		child string
		want  bool
	}{{"service", false}, {"lb", true}} {
		old := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Name: "hello-" + tt.child, Namespace: "default", UID: "u3", ResourceVersion: "10",
				Labels: map[string]string{LabelManagedBy: ManagedBy, LabelBlueprint: "relevance", LabelChild: tt.child, LabelOwnerUID: "cr1"},
			},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
		}
		new := old.DeepCopy()
		new.ResourceVersion = "11"
		new.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
		if got := r.Relevant(gvk, old, new); got != tt.want {
			t.Errorf("%s: an address assigned: typed: Relevant = %v, want %v", tt.child, got, tt.want)
		}
		if got := r.Relevant(gvk, toUnstructured(t, old), toUnstructured(t, new)); got != tt.want {
			t.Errorf("%s: an address assigned: unstructured: Relevant = %v, want %v", tt.child, got, tt.want)
		}
		// Its spec edited by someone else counts, read or not.
		edited := old.DeepCopy()
		edited.ResourceVersion = "11"
		edited.Spec.Ports[0].Port = 8080
		if !r.Relevant(gvk, old, edited) {
			t.Errorf("%s: a spec edited by someone else should count", tt.child)
		}
	}
}

// TestRelevantHiddenReads checks that every update counts where a Go hook or
// a remote reconciler sees the children.
func TestRelevantHiddenReads(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/remote.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if reads := readsOf(bp); reads != nil {
		t.Fatalf("readsOf of a Blueprint with a remote reconciler = %v, want nil", reads)
	}
	r := &Reconciler{bp: bp}
	old := rolling("remote.deployment")
	old.Labels[LabelBlueprint] = bp.Name
	new := old.DeepCopy()
	new.ResourceVersion = "11"
	if !r.Relevant(deploymentGVK, old, new) {
		t.Error("an update of a remote reconciler's child should count")
	}
}

// TestRelevantTemplateWorkflow: a workflow without a reconciler reads its
// resources through its steps' failedWhen and their readiness only, so
// the updates of a running Job that touch neither do not count.
func TestRelevantTemplateWorkflow(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/workflow-templates.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(bp, Options{Client: fake.NewClientBuilder().Build()})
	if err != nil {
		t.Fatal(err)
	}
	jobGVK := batchv1.SchemeGroupVersion.WithKind("Job")
	running := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "rel-migrate", Namespace: "shop", UID: "u1", ResourceVersion: "10", Generation: 1,
			Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelBlueprint: bp.Name, LabelChild: "migrate", LabelOwnerUID: "cr1"},
			Annotations: map[string]string{AnnotationOwner: "example.inrun.dev/Website/shop/rel"},
		},
		Status: batchv1.JobStatus{Active: 1},
	}
	for _, tt := range []struct {
		name   string
		change func(j *batchv1.Job)
		want   bool
	}{
		{"a Pod ready, still running", func(j *batchv1.Job) { j.Status.Ready = ptr.To[int32](1) }, false},
		{"a Pod failed: failedWhen reads it", func(j *batchv1.Job) { j.Status.Failed = 1 }, true},
		{"complete: ready by the kind's rule", func(j *batchv1.Job) {
			j.Status.Active, j.Status.Succeeded = 0, 1
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}, true},
		{"a spec edited by someone else", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](2); j.Generation++ }, true},
	} {
		new := running.DeepCopy()
		new.ResourceVersion = "11"
		tt.change(new)
		if got := r.Relevant(jobGVK, running, new); got != tt.want {
			t.Errorf("%s: Relevant = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestReadinessView checks that the view of a typed object gives kindReady
// the verdict the whole object gives.
func TestReadinessView(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/relevance.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{bp: bp}
	for _, d := range []*appsv1.Deployment{rolling("deployment"), func() *appsv1.Deployment {
		d := rolling("deployment")
		d.Status.ObservedGeneration, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 2, 2, 2, 2
		return d
	}(), func() *appsv1.Deployment {
		d := rolling("deployment")
		d.Spec.Replicas = nil // defaults to 1
		d.Status.ObservedGeneration = 2
		return d
	}()} {
		whole := toUnstructured(t, d)
		whole.SetGroupVersionKind(deploymentGVK)
		view := readinessView(deploymentGVK, d, whole.Object["status"])
		if got, want := r.kindReady(view), r.kindReady(whole); got != want {
			t.Errorf("status %+v, replicas %v: kindReady of the view = %v, of the object = %v", d.Status, d.Spec.Replicas, got, want)
		}
	}
}

func toUnstructured(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	return u
}

// BenchmarkRelevant measures the cost of judging one update of a child
// Deployment: its controller noting the new generation while it is not
// ready yet, which Relevant drops. The pass it saves is
// BenchmarkSyncConverged in bench.
func BenchmarkRelevant(b *testing.B) {
	bp, err := compiler.CompileFile("testdata/relevance.yaml", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := &Reconciler{bp: bp, reads: readsOf(bp)}
	old := rolling("deployment")
	new := old.DeepCopy()
	new.ResourceVersion = "11"
	new.Status.ObservedGeneration = 2
	b.ReportAllocs()
	for b.Loop() {
		if r.Relevant(deploymentGVK, old, new) {
			b.Fatal("the update should not count")
		}
	}
}

// helloAt is the custom resource default/hello of bp's kind at
// resourceVersion rv, as a read or a watch event gives it.
func helloAt(bp *ir.Blueprint, rv string) *unstructured.Unstructured {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(bp.Resource.GroupVersionKind)
	cr.SetNamespace("default")
	cr.SetName("hello")
	cr.SetResourceVersion(rv)
	return cr
}

// TestCaughtUp: the status a write gave a custom resource is given to a
// read of the version the write was made over, until a watch event brings
// another version; then it is forgotten, not kept until the next reconcile.
func TestCaughtUp(t *testing.T) {
	r := relevanceReconciler(t)
	bp := r.bp
	at := func(rv string) *unstructured.Unstructured { return helloAt(bp, rv) }
	r.wroteStatus(at("5"), "5", map[string]any{"phase": "Ready"})
	r.CaughtUp(at("5")) // an event of the version written over: the cache lags still
	stale := at("5")
	r.catchUp(stale)
	if stale.Object["status"] == nil {
		t.Fatal("a read of the version written over did not get the status written")
	}
	r.CaughtUp(at("6"))
	later := at("5")
	r.catchUp(later)
	if later.Object["status"] != nil {
		t.Errorf("after an event of another version, a read still got the status written: %v", later.Object["status"])
	}
	left := 0
	r.statuses.Range(func(any, any) bool { left++; return true })
	if left != 0 {
		t.Errorf("%d status writes remembered after the cache caught up, want 0", left)
	}
}

// TestCaughtUpDuringRead: the cache may catch up with a status write (and
// CaughtUp forget it) while a reconcile reads the version written over;
// that read still gets the status written, so the status is not written a
// second time. Without it, the fault matrix's kill row saw such a write.
func TestCaughtUpDuringRead(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/relevance.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(rv string) *unstructured.Unstructured { return helloAt(bp, rv) }
	var r *Reconciler
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		// The cache answers with version 5, which the write was made over,
		// and the event of version 6, the write's, is handled meanwhile.
		Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			r.CaughtUp(at("6"))
			at("5").DeepCopyInto(obj.(*unstructured.Unstructured))
			return nil
		},
	}).Build()
	if r, err = New(bp, Options{Client: c}); err != nil {
		t.Fatal(err)
	}
	r.wroteStatus(at("5"), "5", map[string]any{"phase": "Ready"})
	cr, err := r.read(context.Background(), echoKey(at("5")))
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(cr.Object, "status", "phase"); got != "Ready" {
		t.Errorf("the version written over, read while the cache caught up, has status %v; want the status written", cr.Object["status"])
	}
	left := 0
	r.statuses.Range(func(any, any) bool { left++; return true })
	if left != 0 {
		t.Errorf("%d status writes remembered after the cache caught up, want 0", left)
	}
}

// TestStatusWriteEchoFirst: the watch event of a status write may be
// handled before the write returns, and a write may change nothing (no
// event at all); either way no status is left remembered once the write
// returns. A failed write is not remembered either.
func TestStatusWriteEchoFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		// answer is the resourceVersion the write answers with, "" for an
		// error.
		answer string
		// echoFirst hands the write's event to CaughtUp before it returns.
		echoFirst bool
	}{
		{name: "event before the answer", answer: "6", echoFirst: true},
		{name: "no change", answer: "5"},
		{name: "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *Reconciler
			patch := func(obj client.Object) error {
				if tc.answer == "" {
					return errors.New("the API server is away")
				}
				obj.SetResourceVersion(tc.answer)
				if tc.echoFirst {
					r.CaughtUp(helloAt(r.bp, tc.answer))
				}
				return nil
			}
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
					return patch(obj)
				},
				SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
					return patch(obj)
				},
			}).Build()
			bp, err := compiler.CompileFile("testdata/relevance.yaml", compiler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r, err = New(bp, Options{Client: c}); err != nil {
				t.Fatal(err)
			}
			p := &pass{Reconciler: r, cr: helloAt(bp, "5"), rep: &Report{}}
			err = p.applyStatus(context.Background(), map[string]any{"phase": "Ready"})
			if (err != nil) != (tc.answer == "") {
				t.Fatalf("applyStatus: %v", err)
			}
			left := 0
			r.statuses.Range(func(any, any) bool { left++; return true })
			if left != 0 {
				t.Errorf("%d status writes remembered, want 0", left)
			}
		})
	}
}

// TestStatusFieldsAreTheConverters checks that converting some fields of a
// typed status gives, for each, what converting it whole gives, and that
// the readiness rules judge the workload kinds the same from the fields
// they name (kindReadsStatus) as from the whole status, over random
// statuses whose counts are small enough to be ready about half the time.
func TestStatusFieldsAreTheConverters(t *testing.T) {
	kinds := map[schema.GroupVersionKind]func() client.Object{
		appsv1.SchemeGroupVersion.WithKind("Deployment"):            func() client.Object { return &appsv1.Deployment{} },
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"):           func() client.Object { return &appsv1.StatefulSet{} },
		appsv1.SchemeGroupVersion.WithKind("DaemonSet"):             func() client.Object { return &appsv1.DaemonSet{} },
		batchv1.SchemeGroupVersion.WithKind("Job"):                  func() client.Object { return &batchv1.Job{} },
		corev1.SchemeGroupVersion.WithKind("Pod"):                   func() client.Object { return &corev1.Pod{} },
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"): func() client.Object { return &corev1.PersistentVolumeClaim{} },
		corev1.SchemeGroupVersion.WithKind("Service"):               func() client.Object { return &corev1.Service{} },
	}
	fill := randfill.NewWithSeed(4).NilChance(0.3).NumElements(0, 2).MaxDepth(8).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(5000), resource.DecimalSI)
		},
		func(i *int32, c randfill.Continue) { *i = c.Int31n(3) },
		func(i *int64, c randfill.Continue) { *i = c.Int63n(3) },
		func(s *corev1.PersistentVolumeClaimPhase, c randfill.Continue) {
			*s = []corev1.PersistentVolumeClaimPhase{"", corev1.ClaimBound, corev1.ClaimPending}[c.Intn(3)]
		},
		func(s *corev1.ConditionStatus, c randfill.Continue) {
			*s = []corev1.ConditionStatus{"True", "False"}[c.Intn(2)]
		},
		func(tm *metav1.Time, c randfill.Continue) {
			if c.Bool() {
				*tm = metav1.Unix(c.Int63n(1<<32), 0)
			}
		},
		func(f *metav1.FieldsV1, c randfill.Continue) { f.Raw = []byte(`{"f:spec":{}}`) },
		func(r *runtime.RawExtension, c randfill.Continue) {},
	)
	r := &Reconciler{bp: &ir.Blueprint{}}
	verdicts := map[bool]int{}
	for gvk, newObj := range kinds {
		for i := 0; i < 100; i++ {
			obj := newObj()
			fill.Fill(obj)
			whole, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				t.Fatal(err)
			}
			wholeStatus, _ := whole["status"].(map[string]any)
			status := reflect.ValueOf(obj).Elem().FieldByName("Status")
			for name := range convert.Fields(status.Type()) {
				part, ok := statusFields(status, [][]string{{name}})
				if !ok {
					t.Fatalf("%s: status fields not converted", gvk.Kind)
				}
				got, present := part[name]
				want, wantPresent := wholeStatus[name]
				if present != wantPresent || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %d: status.%s = %#v (present %v), converted whole %#v (present %v)", gvk.Kind, i, name, got, present, want, wantPresent)
				}
			}
			u := &unstructured.Unstructured{Object: whole}
			u.SetGroupVersionKind(gvk)
			want := r.kindReady(u)
			got := r.kindReady(readinessView(gvk, obj, typedStatus(obj, r.kindReadsStatus(gvk))))
			if got != want {
				t.Fatalf("%s %d: ready from the fields read %v, from the whole status %v: %#v", gvk.Kind, i, got, want, wholeStatus)
			}
			if !r.readyOnceItExists(gvk) {
				verdicts[want]++
			}
		}
	}
	if verdicts[true] < 50 || verdicts[false] < 50 {
		t.Errorf("verdicts %v: the random statuses should be ready and not ready often enough to tell", verdicts)
	}
}
