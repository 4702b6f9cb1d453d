package reconciler

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/inrun/inrun/runtime-lib/internal/convert"
)

// TestUpToDateTypedAgreesWithTheView checks upToDateTyped against upToDate
// on the whole view, for random objects of the built-in kinds children
// are, and wants made from the view, from parts of it, from it changed in
// one place, and from another random object of the kind.
func TestUpToDateTypedAgreesWithTheView(t *testing.T) {
	kinds := map[schema.GroupVersionKind]func() runtime.Object{
		appsv1.SchemeGroupVersion.WithKind("Deployment"):                     func() runtime.Object { return &appsv1.Deployment{} },
		appsv1.SchemeGroupVersion.WithKind("StatefulSet"):                    func() runtime.Object { return &appsv1.StatefulSet{} },
		appsv1.SchemeGroupVersion.WithKind("DaemonSet"):                      func() runtime.Object { return &appsv1.DaemonSet{} },
		batchv1.SchemeGroupVersion.WithKind("Job"):                           func() runtime.Object { return &batchv1.Job{} },
		batchv1.SchemeGroupVersion.WithKind("CronJob"):                       func() runtime.Object { return &batchv1.CronJob{} },
		corev1.SchemeGroupVersion.WithKind("Service"):                        func() runtime.Object { return &corev1.Service{} },
		corev1.SchemeGroupVersion.WithKind("ConfigMap"):                      func() runtime.Object { return &corev1.ConfigMap{} },
		corev1.SchemeGroupVersion.WithKind("Secret"):                         func() runtime.Object { return &corev1.Secret{} },
		corev1.SchemeGroupVersion.WithKind("ServiceAccount"):                 func() runtime.Object { return &corev1.ServiceAccount{} },
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"):          func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		networkingv1.SchemeGroupVersion.WithKind("Ingress"):                  func() runtime.Object { return &networkingv1.Ingress{} },
		networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):            func() runtime.Object { return &networkingv1.NetworkPolicy{} },
		rbacv1.SchemeGroupVersion.WithKind("Role"):                           func() runtime.Object { return &rbacv1.Role{} },
		rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):                    func() runtime.Object { return &rbacv1.RoleBinding{} },
		policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):          func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"): func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
	}
	fill := randfill.NewWithSeed(1).NilChance(0.3).NumElements(0, 2).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(5000), resource.DecimalSI)
		},
		func(r *runtime.RawExtension, c randfill.Continue) {},
		func(f *metav1.FieldsV1, c randfill.Continue) { f.Raw = []byte(`{"f:spec":{}}`) },
	)
	rnd := rand.New(rand.NewSource(2))
	outcomes := map[bool]int{}
	for gvk, newObj := range kinds {
		for i := 0; i < 40; i++ {
			obj, other := newObj(), newObj()
			fill.Fill(obj)
			fill.Fill(other)
			// As the caches hold them, and apply leaves its answer.
			obj.(metav1.Object).SetManagedFields(nil)
			other.(metav1.Object).SetManagedFields(nil)
			view := mustView(t, obj, gvk)
			meta := mustMetaView(t, obj, gvk)
			otherView := mustView(t, other, gvk)
			wants := []map[string]any{
				runtime.DeepCopyJSON(view.Object),
				dropSome(rnd, runtime.DeepCopyJSON(view.Object)),
				changeOne(rnd, runtime.DeepCopyJSON(view.Object)),
				changeOne(rnd, dropSome(rnd, runtime.DeepCopyJSON(view.Object))),
				dropSome(rnd, runtime.DeepCopyJSON(otherView.Object)),
			}
			// The other object, in this one's name: it differs in the body.
			mixed := runtime.DeepCopyJSON(otherView.Object)
			mixed["metadata"] = runtime.DeepCopyJSON(view.Object)["metadata"]
			wants = append(wants, mixed)
			for j, want := range wants {
				desired := &unstructured.Unstructured{Object: want}
				ref := upToDate(desired, view)
				if got := upToDateTyped(desired, meta, obj); got != ref {
					t.Fatalf("%s #%d want %d: upToDateTyped = %v, upToDate on the whole view = %v\nwant: %v\nview: %v", gvk.Kind, i, j, got, ref, want, view.Object)
				}
				outcomes[ref]++
			}
		}
	}
	if outcomes[true] < 100 || outcomes[false] < 100 {
		t.Errorf("outcomes %v: the wants test too little of either answer", outcomes)
	}
}

// TestUpToDateTypedService is one case by hand: a Service the API server
// defaulted, with a named target port (an IntOrString) and an omitted
// zero.
func TestUpToDateTypedService(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("Service")
	svc := &corev1.Service{Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Type:     corev1.ServiceTypeClusterIP,
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
	}}
	svc.Name, svc.Namespace = "web", "default"
	svc.Spec.Ports[0].TargetPort.Type, svc.Spec.Ports[0].TargetPort.StrVal = 1, "http"
	meta := mustMetaView(t, svc, gvk)
	desired := func(port any, target string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "web", "namespace": "default"},
			"spec": map[string]any{
				"selector":  map[string]any{"app": "web"},
				"ports":     []any{map[string]any{"name": "http", "port": port, "targetPort": target}},
				"clusterIP": "",
			},
		}}
	}
	for _, tc := range []struct {
		desired *unstructured.Unstructured
		want    bool
	}{
		{desired(int64(80), "http"), true},
		{desired(80.0, "http"), true},
		{desired(int64(81), "http"), false},
		{desired(int64(80), "web"), false},
	} {
		if got := upToDateTyped(tc.desired, meta, svc); got != tc.want {
			t.Errorf("upToDateTyped(%v) = %v, want %v", tc.desired.Object["spec"], got, tc.want)
		}
	}
}

func mustView(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	u, err := viewOf(obj, gvk)
	if err != nil {
		t.Fatalf("%s: %v", gvk.Kind, err)
	}
	return u
}

func mustMetaView(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	u, err := metaView(obj, gvk)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// dropSome deletes about a third of the keys of m and of the maps below it.
func dropSome(rnd *rand.Rand, m map[string]any) map[string]any {
	for k, v := range m {
		if rnd.Intn(3) == 0 {
			delete(m, k)
			continue
		}
		dropBelow(rnd, v)
	}
	return m
}

func dropBelow(rnd *rand.Rand, v any) {
	switch v := v.(type) {
	case map[string]any:
		dropSome(rnd, v)
	case []any:
		for _, x := range v {
			dropBelow(rnd, x)
		}
	}
}

// changeOne changes one value somewhere in m: a leaf to another value or
// type, an empty or null value, a key added, a list shortened.
func changeOne(rnd *rand.Rand, m map[string]any) map[string]any {
	var places []func()
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			places = append(places, func() { v[fmt.Sprintf("added%d", rnd.Intn(3))] = []any{"x", "", nil, int64(0), false}[rnd.Intn(5)] })
			for k, x := range v {
				places = append(places, func() { v[k] = mutated(rnd, x) })
				walk(x)
			}
		case []any:
			for i, x := range v {
				places = append(places, func() { v[i] = mutated(rnd, x) })
				walk(x)
			}
		}
	}
	walk(m)
	if len(places) > 0 {
		places[rnd.Intn(len(places))]()
	}
	return m
}

func mutated(rnd *rand.Rand, v any) any {
	switch x := v.(type) {
	case string:
		return []any{x + "x", "", nil, int64(len(x))}[rnd.Intn(4)]
	case int64:
		return []any{x + 1, float64(x), int64(0), fmt.Sprint(x), nil}[rnd.Intn(5)]
	case float64:
		return []any{x + 0.5, int64(x), nil}[rnd.Intn(3)]
	case bool:
		return []any{!x, nil, "true"}[rnd.Intn(3)]
	case []any:
		if len(x) > 0 && rnd.Intn(2) == 0 {
			return x[:len(x)-1]
		}
		return []any{}
	case map[string]any:
		return []any{map[string]any{}, nil, "x"}[rnd.Intn(3)]
	}
	return "x"
}

// TestTypedContainsLeavesNothingToTheFallback checks that the kinds
// children usually are walk field by field, not by converting whole
// structs, which would lose what upToDateTyped saves.
// TestMetaViewIsTheConvertersMetadata checks metaView's metadata against
// runtime.DefaultUnstructuredConverter's, less the managed fields, for
// random metadata, zero values and nil pointers included.
func TestMetaViewIsTheConvertersMetadata(t *testing.T) {
	fill := randfill.NewWithSeed(3).NilChance(0.3).NumElements(0, 3).Funcs(
		func(f *metav1.FieldsV1, c randfill.Continue) { f.Raw = []byte(`{"f:spec":{}}`) },
		func(tm *metav1.Time, c randfill.Continue) {
			if c.Bool() {
				*tm = metav1.Unix(c.Int63n(1<<32), 0)
			}
		},
	)
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	seen := map[string]int{}
	for i := 0; i < 500; i++ {
		d := &appsv1.Deployment{}
		fill.Fill(&d.ObjectMeta)
		if i == 0 {
			d.ObjectMeta = metav1.ObjectMeta{}
		}
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d.ObjectMeta)
		if err != nil {
			t.Fatal(err)
		}
		delete(want, "managedFields")
		view := mustMetaView(t, d, gvk)
		if got := view.Object["metadata"]; !reflect.DeepEqual(got, want) {
			t.Fatalf("metadata %d:\n got  %#v\n want %#v", i, got, want)
		}
		if view.GetAPIVersion() != "apps/v1" || view.GetKind() != "Deployment" || len(view.Object) != 3 {
			t.Fatalf("view %d: %#v", i, view.Object)
		}
		for k := range want {
			seen[k]++
		}
	}
	// Every field was set in some of them.
	for _, k := range []string{"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
		"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers"} {
		if seen[k] < 20 {
			t.Errorf("metadata.%s set in %d of 500 random objects, want 20 or more", k, seen[k])
		}
	}
}

func TestTypedContainsLeavesNothingToTheFallback(t *testing.T) {
	for _, obj := range []any{appsv1.Deployment{}, corev1.Service{}, corev1.ConfigMap{}, corev1.Secret{}, batchv1.Job{}, corev1.PodSpec{}} {
		if convert.Fields(reflect.TypeOf(obj)) == nil {
			t.Errorf("%T is not walked field by field", obj)
		}
	}
}

// BenchmarkCompareChild compares the two ways a pass has compared a
// listed Deployment with what it renders: its whole unstructured view,
// converted from the typed object, compared map by map (the baseline, as
// before); and its metadata view with the rest compared in the typed
// object (upToDateTyped, as now). x-whole is the time over the baseline's,
// measured just before in the same run.
func BenchmarkCompareChild(b *testing.B) {
	gvk := appsv1.SchemeGroupVersion.WithKind("Deployment")
	live := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "hello", Namespace: "default", UID: "00000000-0000-4000-8000-000000000002", ResourceVersion: "12345", Generation: 1,
			Labels:      map[string]string{"app": "hello", LabelBlueprint: "website", LabelChild: "deployment", LabelOwnerUID: "00000000-0000-4000-8000-000000000001"},
			Annotations: map[string]string{"deployment.kubernetes.io/revision": "1", LabelAppliedHash: "0123456789abcdef"},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hello"}},
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hello"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
						TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						ImagePullPolicy: corev1.PullIfNotPresent,
					}},
					RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
					TerminationGracePeriodSeconds: ptr.To[int64](30), SchedulerName: "default-scheduler",
					SecurityContext: &corev1.PodSecurityContext{},
				},
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1},
	}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "hello", "namespace": "default",
			"labels":      map[string]any{"app": "hello", LabelBlueprint: "website", LabelChild: "deployment", LabelOwnerUID: "00000000-0000-4000-8000-000000000001"},
			"annotations": map[string]any{LabelAppliedHash: "0123456789abcdef"},
		},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "hello"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "hello"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "web", "image": "nginx:1.27", "ports": []any{map[string]any{"name": "http", "containerPort": int64(80)}},
				}}},
			},
		},
	}}
	var base float64
	b.Run("whole-view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			view, err := viewOf(live, gvk)
			if err != nil || !upToDate(desired, view) {
				b.Fatalf("not up to date (%v)", err)
			}
		}
		base = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("metadata-view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			view, err := metaView(live, gvk)
			if err != nil || !upToDateTyped(desired, view, live) {
				b.Fatalf("not up to date (%v)", err)
			}
		}
		if base > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-whole")
		}
	})
}
