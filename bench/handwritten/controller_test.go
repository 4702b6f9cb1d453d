package handwritten

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkChildren is the hand-written operator's share of the work that
// BenchmarkRenderChildren and BenchmarkApplyPatch measure for Inrun: build
// a Website's Deployment and Service apply configurations and encode the
// bodies it sends. It is the baseline those figures are compared with.
func BenchmarkChildren(b *testing.B) {
	site := &Website{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default", UID: "00000000-0000-4000-8000-000000000001", Generation: 1},
		Spec:       WebsiteSpec{Image: "nginx:1.27", Replicas: 1, Port: 80},
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, obj := range []any{desiredDeployment(site), desiredService(site, false)} {
			if _, err := json.Marshal(obj); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestHeadlessService(t *testing.T) {
	site := &Website{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"}, Spec: WebsiteSpec{Port: 80}}
	if got := desiredService(site, true).Spec.ClusterIP; got == nil || *got != "None" {
		t.Errorf("headless: clusterIP %v, want None", got)
	}
	if got := desiredService(site, false).Spec.ClusterIP; got != nil {
		t.Errorf("not headless: clusterIP %q, want unset", *got)
	}
}
