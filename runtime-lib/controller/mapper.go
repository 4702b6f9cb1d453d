package controller

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewMapper is the managers' MapperProvider: controller-runtime's lazy
// REST mapper, with the mappings it found remembered. Its metadata client
// (the status apply's) asks the mapper on every call, where the typed and
// unstructured clients keep what they found; the lazy mapper answers each
// question through a priority mapper over every known group, which costs
// more than the rest of building the request.
func NewMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &memoMapper{RESTMapper: m}, nil
}

// memoMapper remembers the mappings of a kind at one version. It forgets
// nothing, as the lazy mapper underneath forgets no mapping it found
// either: a kind's resource and scope do not change while its CRD exists.
type memoMapper struct {
	meta.RESTMapper
	mappings sync.Map // schema.GroupVersionKind → *meta.RESTMapping
}

// RESTMapping implements meta.RESTMapper.
func (m *memoMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 || versions[0] == "" {
		// Any of several versions, or the preferred one: which one
		// answers may change as the group does.
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	gvk := gk.WithVersion(versions[0])
	if mapping, ok := m.mappings.Load(gvk); ok {
		return mapping.(*meta.RESTMapping), nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		m.mappings.Store(gvk, mapping)
	}
	return mapping, err
}
