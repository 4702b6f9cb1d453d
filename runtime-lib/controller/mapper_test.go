package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper answers from a DefaultRESTMapper and counts the
// RESTMapping questions it was asked.
type countingMapper struct {
	*meta.DefaultRESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func TestMemoMapperRemembersWhatItFound(t *testing.T) {
	website := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Website"}
	under := &countingMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil)}
	under.Add(website, meta.RESTScopeNamespace)
	m := &memoMapper{RESTMapper: under}

	for range 3 {
		mapping, err := m.RESTMapping(website.GroupKind(), "v1")
		if err != nil {
			t.Fatal(err)
		}
		if mapping.Resource.Resource != "websites" || mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("mapping = %+v", mapping)
		}
	}
	if under.asked != 1 {
		t.Errorf("the mapper underneath was asked %d times for one kind and version, want 1", under.asked)
	}

	// What was not found is asked again: the kind's CRD may come.
	gadget := schema.GroupKind{Group: "example.com", Kind: "Gadget"}
	for range 2 {
		if _, err := m.RESTMapping(gadget, "v1"); !meta.IsNoMatchError(err) {
			t.Fatalf("err = %v, want no match", err)
		}
	}
	if under.asked != 3 {
		t.Errorf("asked %d times after two misses, want 3: a miss is not remembered", under.asked)
	}
	under.Add(gadget.WithVersion("v1"), meta.RESTScopeRoot)
	if mapping, err := m.RESTMapping(gadget, "v1"); err != nil || mapping.Scope.Name() != meta.RESTScopeNameRoot {
		t.Fatalf("after the kind came: mapping %+v, err %v", mapping, err)
	}

	// A question about any of several versions, or the preferred one, is
	// the mapper's to answer each time.
	before := under.asked
	for range 2 {
		if _, err := m.RESTMapping(website.GroupKind(), "v2", "v1"); err != nil {
			t.Fatal(err)
		}
		_, _ = m.RESTMapping(website.GroupKind(), "")
	}
	if under.asked != before+4 {
		t.Errorf("asked %d times for four questions of no single version, want 4", under.asked-before)
	}
}
