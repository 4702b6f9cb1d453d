package simulate

import (
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/expr"
)

// defaultCR fills in the CRD's defaults, as the API server does on every
// write.
func (s *Store) defaultCR(cr *unstructured.Unstructured) {
	if s.bp.Resource.Schema == nil {
		return
	}
	if st, err := expr.ResourceSchema(s.bp.Resource.Schema); err == nil {
		defaulting.Default(cr.Object, st)
	}
}
