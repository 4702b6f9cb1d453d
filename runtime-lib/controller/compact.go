package controller

import (
	"bytes"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// A custom resource is decoded from its watch as nested maps, the only
// form Inrun can read a kind it has no Go type of, and a map costs about
// 300 bytes however few its entries: a settled Website held 2.9 KB that
// way, a third of it what its JSON takes. So the manager's cache keeps a
// custom resource as a compactObject: its metadata typed, which is all the
// cache, its indexes and the controller's event filters read, and the
// object as JSON. A reader of the cache gets the unstructured object it
// asks for, decoded from the JSON: controller-runtime's cache hands out
// what DeepCopyObject returns (it copies before every Get and List, so
// that no one changes what it holds), and a compactObject's copy is that
// decoding. Decoding costs a read about 6 µs more than the deep copy of
// the maps it replaces (BenchmarkCachedRead), a few tens of milliseconds
// over a thousand custom resources created.

// compactObject is a custom resource as the manager's cache holds it.
type compactObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// raw is the whole object as JSON, without its managed fields.
	raw []byte
}

var _ runtime.Object = &compactObject{}

// DeepCopyObject returns the object unstructured, as its readers ask for
// it: a new copy each time.
func (c *compactObject) DeepCopyObject() runtime.Object {
	m := map[string]any{}
	if err := utiljson.Unmarshal(c.raw, &m); err != nil {
		// raw was encoded from an unstructured object by compact.
		panic(fmt.Sprintf("decoding the cached %s %s/%s: %v", c.Kind, c.Namespace, c.Name, err))
	}
	return &unstructured.Unstructured{Object: m}
}

// compactBuffers are compact's encoding buffers; the encoding is copied
// out at its size.
var compactBuffers = sync.Pool{New: func() any { return new([]byte) }}

// compact is the cache transform of custom resources: it keeps an
// unstructured object as a compactObject, and hands anything else to
// StripManagedFields.
func compact(in any) (any, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return StripManagedFields(in)
	}
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	buf := compactBuffers.Get().(*[]byte)
	defer compactBuffers.Put(buf)
	b, ok := reconciler.AppendJSON((*buf)[:0], u.Object)
	if !ok {
		return nil, fmt.Errorf("encoding %s %s/%s: it holds a value JSON cannot", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	*buf = b
	raw := bytes.Clone(b)
	c := &compactObject{
		TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{
			Name:                       u.GetName(),
			GenerateName:               u.GetGenerateName(),
			Namespace:                  u.GetNamespace(),
			UID:                        u.GetUID(),
			ResourceVersion:            u.GetResourceVersion(),
			Generation:                 u.GetGeneration(),
			CreationTimestamp:          u.GetCreationTimestamp(),
			DeletionTimestamp:          u.GetDeletionTimestamp(),
			DeletionGracePeriodSeconds: u.GetDeletionGracePeriodSeconds(),
			Labels:                     u.GetLabels(),
			Annotations:                u.GetAnnotations(),
			OwnerReferences:            u.GetOwnerReferences(),
			Finalizers:                 u.GetFinalizers(),
		},
		raw: raw,
	}
	internMeta(c)
	return c, nil
}
