package builtin

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// enums are the string types of k8s.io/api whose values the API server
// checks against a fixed set wherever they appear, refusing any other as
// "Unsupported value", with the values in the order its message lists
// them. Each is held to a real API server by a conformance case.
//
// Left out: TolerationOperator, whose message lists Lt and Gt (behind an
// alpha feature gate) only for those two, and the types refused as Invalid
// rather than NotSupported (PodManagementPolicyType,
// StatefulSetUpdateStrategyType).
var enums = newEnumTable(
	enum(corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever),
	// Any pod's. A workload's or a Job's pods take fewer, which their
	// rules check; the API server refuses a value that is none of these
	// by both rules.
	enum(corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever),
	enum(corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP),
	enum(corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone),
	enum(corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort),
	enum(corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone),
	enum(corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal),
	enum(corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal),
	enum(corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError),
	enum(corev1.URISchemeHTTP, corev1.URISchemeHTTPS),
	enum(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute),
	enum(corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod),
	enum(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem),
	enum(appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType),
	enum(appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType),
	enum(batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent),
	enum(batchv1.NonIndexedCompletion, batchv1.IndexedCompletion),
	enum(networkingv1.PathTypeExact, networkingv1.PathTypeImplementationSpecific, networkingv1.PathTypePrefix),
	enum(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress),
	enum(policyv1.AlwaysAllow, policyv1.IfHealthyBudget),
)

type enumEntry struct {
	t      reflect.Type
	values []string
}

// enum is the entry of T: the type is the constants', so that a value
// cannot be listed under another type.
func enum[T ~string](values ...T) enumEntry {
	e := enumEntry{t: reflect.TypeFor[T]()}
	for _, v := range values {
		e.values = append(e.values, string(v))
	}
	return e
}

func newEnumTable(entries ...enumEntry) map[reflect.Type][]string {
	m := make(map[reflect.Type][]string, len(entries))
	for _, e := range entries {
		if _, dup := m[e.t]; dup {
			panic("builtin: enum " + e.t.String() + " listed twice")
		}
		m[e.t] = e.values
	}
	return m
}

// EnumValues returns the values the API server accepts in a field of Go
// type t (a k8s.io/api string type), in the order its messages list them,
// when it accepts no others. The empty string is not among them: most
// such fields are defaulted when empty, and the rest are required.
func EnumValues(t reflect.Type) ([]string, bool) {
	values, ok := enums[t]
	return values, ok
}

// supported reports whether v is one of its type's values, or its type
// is no enum.
func supported[T ~string](v T) bool {
	values, ok := enums[reflect.TypeFor[T]()]
	return !ok || slices.Contains(values, string(v))
}

// enumValues returns T's values; T must be in the table.
func enumValues[T ~string]() []string {
	values, ok := enums[reflect.TypeFor[T]()]
	if !ok {
		panic("builtin: " + reflect.TypeFor[T]().String() + " is no enum")
	}
	return values
}

// enumErrors walks a typed object's spec along its json tags and reports
// each enum field whose value its type does not take, at the API server's
// path and with its message. A field left empty is not checked (it is
// defaulted or required), but a pointer set to "" is: the API server
// defaults only a nil one. own are types the kind's rules check
// themselves, because the API server words or places their refusal
// differently there.
func enumErrors(obj any, own ...reflect.Type) field.ErrorList {
	spec := reflect.ValueOf(obj).Elem().FieldByName("Spec")
	if !spec.IsValid() || !holdsEnum(spec.Type()) {
		return nil
	}
	w := enumWalk{own: own, path: []step{{name: "spec"}}}
	w.value(spec, false)
	return w.errs
}

// enumWalk keeps the path as steps, made into a field.Path only for an
// error: most specs have none.
type enumWalk struct {
	own  []reflect.Type
	path []step
	errs field.ErrorList
}

// step is a field's name, a list's index, or a map's key.
type step struct {
	name  string
	index int
	key   bool
}

func (w *enumWalk) fieldPath() *field.Path {
	p := field.NewPath(w.path[0].name)
	for _, s := range w.path[1:] {
		switch {
		case s.key:
			p = p.Key(s.name)
		case s.name != "":
			p = p.Child(s.name)
		default:
			p = p.Index(s.index)
		}
	}
	return p
}

// value walks v, a value of a type that can hold an enum; set says a
// pointer to it was set.
func (w *enumWalk) value(v reflect.Value, set bool) {
	t := v.Type()
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			w.value(v.Elem(), true)
		}
	case reflect.String:
		s := v.String()
		if (s == "" && !set) || slices.Contains(w.own, t) {
			return
		}
		if values := enums[t]; !slices.Contains(values, s) {
			// The typed value, which the API server prints as JSON.
			w.errs = append(w.errs, field.NotSupported(w.fieldPath(), v.Interface(), values))
		}
	case reflect.Struct:
		for _, f := range enumFields(t) {
			if f.name == "" {
				w.value(v.Field(f.index), false)
				continue
			}
			w.path = append(w.path, step{name: f.name})
			w.value(v.Field(f.index), false)
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Slice, reflect.Array:
		// The API server names the list, not the item, for access modes.
		atList := t.Elem() == accessModeType
		for i := range v.Len() {
			if atList {
				w.value(v.Index(i), true)
				continue
			}
			w.path = append(w.path, step{index: i})
			w.value(v.Index(i), true)
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			w.path = append(w.path, step{name: k.String(), key: true})
			w.value(v.MapIndex(k), true)
			w.path = w.path[:len(w.path)-1]
		}
	}
}

var accessModeType = reflect.TypeFor[corev1.PersistentVolumeAccessMode]()

// enumField is a struct field that can hold an enum: its index, and its
// name in JSON, "" when encoding/json flattens it into its parent.
type enumField struct {
	index int
	name  string
}

var structFields sync.Map // reflect.Type → []enumField

// enumFields returns the fields of struct type t that can hold an enum,
// so that the walk visits nothing else.
func enumFields(t reflect.Type) []enumField {
	if fs, ok := structFields.Load(t); ok {
		return fs.([]enumField)
	}
	var fs []enumField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || !holdsEnum(f.Type) {
			continue
		}
		switch {
		case (f.Anonymous && name == "") || strings.Contains(opts, "inline"):
			name = ""
		case name == "":
			name = f.Name
		}
		fs = append(fs, enumField{index: i, name: name})
	}
	structFields.Store(t, fs)
	return fs
}

// holds caches holdsEnum by type; computing is under holdsMu, so that
// reachesEnum reads only final answers.
var (
	holds   sync.Map // reflect.Type → bool
	holdsMu sync.Mutex
)

// holdsEnum reports whether a value of type t can hold an enum field, so
// that the walk skips the rest (most of a pod spec) at a map lookup.
func holdsEnum(t reflect.Type) bool {
	if h, ok := holds.Load(t); ok {
		return h.(bool)
	}
	holdsMu.Lock()
	defer holdsMu.Unlock()
	h := reachesEnum(t, map[reflect.Type]bool{})
	holds.Store(t, h)
	return h
}

// reachesEnum searches the types a value of type t is made of for an
// enum; seen breaks the cycles of recursive types.
func reachesEnum(t reflect.Type, seen map[reflect.Type]bool) bool {
	if h, ok := holds.Load(t); ok {
		return h.(bool)
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String:
		_, ok := enums[t]
		return ok
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return reachesEnum(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && reachesEnum(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
