package compiler

import (
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/builtin"
)

// builtinKind is what the compiler knows offline about a built-in kind.
type builtinKind struct {
	plural     string
	namespaced bool
}

// notStored are kinds client-go knows that are no objects a Blueprint can
// keep: subresources (Scale, Eviction, Binding, TokenRequest), reviews the
// API server answers and forgets, and read-only or internal kinds.
var notStored = map[string]bool{
	"Scale": true, "Eviction": true, "Binding": true, "TokenRequest": true,
	"TokenReview": true, "SelfSubjectReview": true, "SubjectAccessReview": true,
	"LocalSubjectAccessReview": true, "SelfSubjectAccessReview": true, "SelfSubjectRulesReview": true,
	"ComponentStatus": true, "RangeAllocation": true, "PodStatusResult": true, "SerializedReference": true,
}

// lookupBuiltin resolves a GVK against the kinds builtin.Scheme knows that
// every API server of this Kubernetes version serves: not a version it
// removed, which client-go still knows. Only objects the API server stores
// count: a kind with metadata, not an options type, a list, a subresource
// or a review.
func lookupBuiltin(gvk schema.GroupVersionKind) (builtinKind, bool) {
	if !storedKind(gvk) {
		return builtinKind{}, false
	}
	if _, removed := builtin.Removed(gvk); removed {
		return builtinKind{}, false
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return builtinKind{plural: plural.Resource, namespaced: !builtin.ClusterScoped(gvk.GroupKind())}, true
}

// removedBuiltin reports the Kubernetes release that stopped serving gvk,
// a kind that was built in, in this version, until then.
func removedBuiltin(gvk schema.GroupVersionKind) (string, bool) {
	if !storedKind(gvk) {
		return "", false
	}
	return builtin.Removed(gvk)
}

// storedKind reports whether builtin.Scheme knows gvk as an object the API
// server stores.
func storedKind(gvk schema.GroupVersionKind) bool {
	t, ok := builtin.Scheme.AllKnownTypes()[gvk]
	return ok && gvk.Version != "__internal" && !strings.HasSuffix(gvk.Kind, "List") && !notStored[gvk.Kind] && hasObjectMeta(t)
}

// builtinVersions returns the apiVersions that serve kind, for hints.
func builtinVersions(kind string) []string {
	var out []string
	for gvk := range builtin.Scheme.AllKnownTypes() {
		if _, ok := lookupBuiltin(gvk); ok && gvk.Kind == kind {
			out = append(out, gvk.GroupVersion().String())
		}
	}
	sort.Strings(out)
	return out
}

// builtinKindNames returns every built-in kind name, for hints.
func builtinKindNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, gvk := range BuiltinKinds() {
		if !seen[gvk.Kind] {
			seen[gvk.Kind] = true
			out = append(out, gvk.Kind)
		}
	}
	sort.Strings(out)
	return out
}

// hasObjectMeta reports whether t embeds metav1.ObjectMeta, as every stored
// object does and no options type does.
func hasObjectMeta(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	f, ok := t.FieldByName("ObjectMeta")
	return ok && f.Anonymous
}

// BuiltinKinds returns every built-in kind a Blueprint may use, sorted by
// apiVersion and kind.
func BuiltinKinds() []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk := range builtin.Scheme.AllKnownTypes() {
		if _, ok := lookupBuiltin(gvk); ok {
			out = append(out, gvk)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GroupVersion().String()+" "+out[i].Kind < out[j].GroupVersion().String()+" "+out[j].Kind
	})
	return out
}
