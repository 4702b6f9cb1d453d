package main

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// liveDeployment is a Website's Deployment as the API server sends it once
// it is ready: the fields Inrun applies, those the API server defaults, and
// a status.
func liveDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "hello"}
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "hello", Namespace: "default", UID: "00000000-0000-4000-8000-000000000002",
			ResourceVersion: "12345", Generation: 1, CreationTimestamp: created,
			Labels: map[string]string{
				"app": "hello", "app.kubernetes.io/managed-by": "inrun", "inrun.dev/blueprint": "website",
				"inrun.dev/child": "deployment", "inrun.dev/owner-uid": "00000000-0000-4000-8000-000000000001",
			},
			Annotations: map[string]string{
				"deployment.kubernetes.io/revision": "1", "inrun.dev/owner": websiteGroup + "/Website/default/hello",
				"inrun.dev/applied-hash": "0123456789abcdef",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: websiteGroup + "/v1", Kind: "Website", Name: "hello",
				UID: "00000000-0000-4000-8000-000000000001", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: "web", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
						Resources:                corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
						TerminationMessagePath:   "/dev/termination-log",
						TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
					}},
					RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
					TerminationGracePeriodSeconds: ptr.To[int64](30), SchedulerName: "default-scheduler",
					SecurityContext: &corev1.PodSecurityContext{},
				},
			},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: created, LastTransitionTime: created},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "hello-5d8f" has successfully progressed.`, LastUpdateTime: created, LastTransitionTime: created},
			},
		},
	}
}

// BenchmarkChildRead compares the two ways the runtime has held a built-in
// child, per watch event (event/...) and per reconcile (read/...): as an
// unstructured object decoded from JSON, converted to its Go type for the
// expressions that read it (the baseline, as before); and as its Go type
// decoded from protobuf, as controller-runtime's typed informers fetch it,
// with an unstructured view taken for comparing (as now). The typed
// figures report x-unstructured, their time over the baseline's measured
// just before in the same run.
func BenchmarkChildRead(b *testing.B) {
	d := liveDeployment()
	jsonData, err := runtime.Encode(unstructured.UnstructuredJSONScheme, mustUnstructured(b, d))
	if err != nil {
		b.Fatal(err)
	}
	pb := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme)
	pbData, err := runtime.Encode(pb, d)
	if err != nil {
		b.Fatal(err)
	}
	var eventBase, readBase float64
	b.Run("event/unstructured-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u := &unstructured.Unstructured{}
			if _, _, err := unstructured.UnstructuredJSONScheme.Decode(jsonData, nil, u); err != nil {
				b.Fatal(err)
			}
		}
		eventBase = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("event/typed-protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := pb.Decode(pbData, nil, &appsv1.Deployment{}); err != nil {
				b.Fatal(err)
			}
		}
		reportRatio(b, eventBase)
	})
	u := mustUnstructured(b, d)
	b.Run("read/unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			live := u.DeepCopy()
			typed := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, typed); err != nil {
				b.Fatal(err)
			}
		}
		readBase = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("read/typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			live := d.DeepCopy()
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live); err != nil {
				b.Fatal(err)
			}
		}
		reportRatio(b, readBase)
	})
}

func reportRatio(b *testing.B, base float64) {
	if base > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-unstructured")
	}
}

func mustUnstructured(b *testing.B, obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		b.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// appliedDeployment is liveDeployment as the API server answers a
// server-side apply of it: with the managed fields of Inrun's apply and of
// the deployment controller's status.
func appliedDeployment() *appsv1.Deployment {
	d := liveDeployment()
	at := metav1.NewTime(d.CreationTimestamp.Time)
	d.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "inrun", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", Time: &at, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:inrun.dev/applied-hash":{},"f:inrun.dev/owner":{}},"f:labels":{"f:app":{},"f:app.kubernetes.io/managed-by":{},"f:inrun.dev/blueprint":{},"f:inrun.dev/child":{},"f:inrun.dev/owner-uid":{}},"f:ownerReferences":{"k:{\"uid\":\"00000000-0000-4000-8000-000000000001\"}":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}},"f:resources":{"f:requests":{"f:cpu":{}}}}}}}}}`)}},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: &at, FieldsType: "FieldsV1", Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}`)}},
	}
	return d
}

// BenchmarkApplyAnswer compares the two ways the runtime has taken the
// API server's answer to the apply of a built-in child: as JSON, decoded
// unstructured, then converted to its Go type for the expressions that
// read it (the baseline, as before); and as protobuf, decoded typed, with
// the unstructured view taken from it (as now, reconciler.applyTyped).
// encode/... is the API server's half: writing the answer in either form.
func BenchmarkApplyAnswer(b *testing.B) {
	d := appliedDeployment()
	js := json.NewSerializerWithOptions(json.DefaultMetaFactory, clientgoscheme.Scheme, clientgoscheme.Scheme, json.SerializerOptions{})
	pb := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme)
	jsonData, err := runtime.Encode(js, d)
	if err != nil {
		b.Fatal(err)
	}
	pbData, err := runtime.Encode(pb, d)
	if err != nil {
		b.Fatal(err)
	}
	var decodeBase, encodeBase float64
	b.Run("decode/unstructured-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			u := &unstructured.Unstructured{}
			if _, _, err := unstructured.UnstructuredJSONScheme.Decode(jsonData, nil, u); err != nil {
				b.Fatal(err)
			}
			unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &appsv1.Deployment{}); err != nil {
				b.Fatal(err)
			}
		}
		decodeBase = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("decode/typed-protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			typed := &appsv1.Deployment{}
			if _, _, err := pb.Decode(pbData, nil, typed); err != nil {
				b.Fatal(err)
			}
			typed.ManagedFields = nil
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed); err != nil {
				b.Fatal(err)
			}
		}
		reportRatio(b, decodeBase)
	})
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := runtime.Encode(js, d); err != nil {
				b.Fatal(err)
			}
		}
		encodeBase = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("encode/protobuf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := runtime.Encode(pb, d); err != nil {
				b.Fatal(err)
			}
		}
		if encodeBase > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/encodeBase, "x-json")
		}
	})
}
