package simulate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/inrun/inrun/internal/builtin"
)

// nameRule is how the API server validates the name of an object of gk,
// where apimachinery has the rule: a Namespace's is a DNS label, a
// Service's a DNS-1035 label, RBAC's a path segment, and every other
// kind's (custom resources' too) a DNS subdomain.
func nameRule(gk schema.GroupKind) apivalidation.ValidateNameFunc {
	switch {
	case gk == schema.GroupKind{Kind: "Namespace"}:
		return apivalidation.ValidateNamespaceName
	case gk == schema.GroupKind{Kind: "Service"}:
		return apivalidation.NameIsDNS1035Label
	case gk.Group == "rbac.authorization.k8s.io":
		return path.ValidatePathSegmentName
	}
	return apivalidation.NameIsDNSSubdomain
}

// validMeta refuses obj, about to be written, when the API server would
// refuse its metadata: its name for its kind, namespace, labels,
// annotations, owner references and finalizers, with the API server's
// error (ConfigMap "x" is invalid: metadata.labels: Invalid value: ...).
func (s *Store) validMeta(obj client.Object) error {
	return s.valid(obj, false)
}

// validObject is validMeta for obj written whole (created, updated or
// patched), whose spec, when of a built-in kind, is validated too
// (builtin.Validate). A server-side apply's spec is validated once
// merged (admitApply).
func (s *Store) validObject(obj client.Object) error {
	return s.valid(obj, true)
}

func (s *Store) valid(obj client.Object, spec bool) error {
	gvk, err := apiutil.GVKForObject(obj, s.base.Scheme())
	if err != nil {
		return nil
	}
	namespaced, err := s.base.IsObjectNamespaced(obj)
	if err != nil {
		// A kind none of the Blueprints names: its scope is what it says.
		namespaced = obj.GetNamespace() != ""
	}
	errs := apivalidation.ValidateObjectMetaAccessor(obj, namespaced, nameRule(gvk.GroupKind()), fieldpath.NewPath("metadata"))
	errs = append(errs, validSize(gvk, obj)...)
	if spec && builtin.Validates(gvk.GroupKind()) {
		if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err == nil {
			typed := &unstructured.Unstructured{Object: u}
			typed.SetGroupVersionKind(gvk)
			errs = append(errs, builtin.Validate(typed)...)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gvk.GroupKind(), obj.GetName(), errs)
}

// maxDataSize is the most a ConfigMap's or a Secret's data may hold, as
// the API server counts it (corev1's MaxSecretSize).
const maxDataSize = 1 << 20

// validSize refuses a ConfigMap whose keys and values, or a Secret whose
// values, add up to more than maxDataSize bytes, as the API server does.
func validSize(gvk schema.GroupVersionKind, obj client.Object) fieldpath.ErrorList {
	if gvk.Group != "" || (gvk.Kind != "ConfigMap" && gvk.Kind != "Secret") {
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	size := 0
	add := func(field string, withKeys, encoded bool) {
		m, _, _ := unstructured.NestedMap(u, field)
		for k, v := range m {
			s, _ := v.(string)
			n := len(s)
			if encoded {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					n = len(b)
				}
			}
			if withKeys {
				n += len(k)
			}
			size += n
		}
	}
	if gvk.Kind == "ConfigMap" {
		add("data", true, false)
		add("binaryData", true, true)
		if size > maxDataSize {
			return fieldpath.ErrorList{fieldpath.TooLong(fieldpath.NewPath(""), "", maxDataSize)}
		}
		return nil
	}
	add("data", false, true)
	add("stringData", false, false)
	if size > maxDataSize {
		return fieldpath.ErrorList{fieldpath.TooLong(fieldpath.NewPath("data"), "", maxDataSize)}
	}
	return nil
}

// validPatch runs write, a patch of obj that leaves obj as stored, and
// undoes it when the API server would have refused the metadata it left.
func (s *Store) validPatch(ctx context.Context, obj client.Object, write func() error) error {
	old := &unstructured.Unstructured{}
	gvk, err := apiutil.GVKForObject(obj, s.base.Scheme())
	if err != nil {
		return write()
	}
	old.SetGroupVersionKind(gvk)
	if err := s.base.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
		return write()
	}
	if err := write(); err != nil {
		return err
	}
	invalid := s.validObject(obj)
	if invalid == nil {
		return nil
	}
	old.SetResourceVersion(obj.GetResourceVersion())
	if err := s.base.Update(ctx, old); err != nil {
		return fmt.Errorf("undoing a refused patch: %w", err)
	}
	return invalid
}

// validApplyMeta is validMeta for a server-side apply of ac, whose object
// is only what it sets: what it does not set was checked when written.
func (s *Store) validApplyMeta(ac runtime.ApplyConfiguration) error {
	data, err := json.Marshal(ac)
	if err != nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil
	}
	return s.validMeta(u)
}

// defaultServicePorts gives each port of a Service read from the store the
// targetPort the API server defaults to its port. The store keeps Services
// typed, and the round trip leaves targetPort 0 where the object set none.
// It is the one default of a built-in kind the store fills in.
func defaultServicePorts(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Service:
		for i := range o.Spec.Ports {
			if p := &o.Spec.Ports[i]; p.TargetPort.IntValue() == 0 && p.TargetPort.Type == intstr.Int {
				p.TargetPort = intstr.FromInt32(p.Port)
			}
		}
	case *corev1.ServiceList:
		for i := range o.Items {
			defaultServicePorts(&o.Items[i])
		}
	case *unstructured.Unstructured:
		if o.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Service") {
			return
		}
		ports, ok, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
		if !ok {
			return
		}
		for _, p := range ports {
			port, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if tp := port["targetPort"]; tp == nil || tp == int64(0) || tp == float64(0) {
				if n, ok := port["port"]; ok {
					port["targetPort"] = n
				}
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, ports, "spec", "ports")
	case *unstructured.UnstructuredList:
		for i := range o.Items {
			defaultServicePorts(&o.Items[i])
		}
	}
}
