package served

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

type fakeDiscovery struct {
	lists []*metav1.APIResourceList
	err   error
}

func (f fakeDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return f.lists, f.err
}

// TestKinds: subresources, Events and kinds lacking a verb are left out; a
// group that failed discovery is reported beside what was found.
func TestKinds(t *testing.T) {
	d := fakeDiscovery{
		lists: []*metav1.APIResourceList{
			{GroupVersion: "v1", APIResources: []metav1.APIResource{
				{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: []string{"list", "delete"}},
				{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"list", "delete"}},
				{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"list", "delete"}},
				{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
				{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list"}},
			}},
		},
		err: &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("down")}},
	}
	kinds, err := Kinds(d, "list", "delete")
	if len(kinds) != 1 || kinds[0].Kind != "ConfigMap" || kinds[0].Resource != "configmaps" || !kinds[0].Namespaced {
		t.Errorf("kinds = %+v, want ConfigMap alone", kinds)
	}
	if !discovery.IsGroupDiscoveryFailedError(err) {
		t.Errorf("err = %v, want the failed group", err)
	}
	if kinds, _ := Kinds(d, "list"); len(kinds) != 2 {
		t.Errorf("listable kinds = %v, want ConfigMap and Namespace", kinds)
	}
	if _, err := Kinds(fakeDiscovery{err: errors.New("refused")}); err == nil {
		t.Error("a discovery that failed whole gave no error")
	}
}
