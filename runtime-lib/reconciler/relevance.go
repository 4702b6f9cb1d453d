package reconciler

import (
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/internal/convert"
)

// childReads is what a pass reads of a child's live object beyond what
// applying it compares (its metadata and everything but its status): the
// status paths the Blueprint's expressions read, and the verdict of the
// kind's readiness rule.
type childReads struct {
	// status are the paths below status that expressions read, without
	// the leading "status"; wholeStatus is set when one reads it all.
	status      [][]string
	wholeStatus bool
	// statusTop are the first fields of status's paths: what of a typed
	// object's status is converted to compare them.
	statusTop []string
	// kindRule is set when the child has no readyWhen: the rule of its
	// kind (kindReady) decides whether it is ready.
	kindRule bool
	// labels is set when an expression reads its labels or annotations:
	// then even one added by someone else counts.
	labels bool
}

// readsOf returns what passes read of each child of bp whose updates
// Relevant may judge, by child id. A child is left out, and each of its
// updates counts, when an expression reads it whole or reads metadata the
// comparison does not cover, when it is a collection or an externalRef,
// or when its template sets a status (which applying compares). The whole
// Blueprint is left out (nil) when a remote reconciler or a Go hook sees
// the children: what they read is not known. A workflow without a
// reconciler reads no more than its steps' failedWhen (among the
// expressions) and its resources' readiness.
func readsOf(bp *ir.Blueprint) map[string]*childReads {
	if (bp.Reconcile != nil && !templateSteps(bp)) || len(components.Needs(bp)) > 0 {
		return nil
	}
	exprs := bp.RenderExprs()
	out := map[string]*childReads{}
children:
	for _, c := range bp.Children {
		if c.External || len(c.ForEach) > 0 || c.Template.Lookup("status") != nil {
			continue
		}
		reads := &childReads{kindRule: c.ReadyWhen == nil}
		for _, x := range exprs {
			if x == nil || x.Checked == nil {
				if x != nil && containsRef(x.Refs, c.ID) {
					continue children // unchecked: what it reads is unknown
				}
				continue
			}
			for _, p := range expr.ReadPaths(x.Checked.NativeRep().Expr(), c.ID) {
				switch {
				case len(p) == 0:
					continue children
				case p[0] == "status" && len(p) == 1:
					reads.wholeStatus = true
				case p[0] == "status":
					reads.status = append(reads.status, p[1:])
					if !slices.Contains(reads.statusTop, p[1]) {
						reads.statusTop = append(reads.statusTop, p[1])
					}
				case p[0] == "metadata" && len(p) == 1:
					continue children
				case p[0] == "metadata" && (p[1] == "labels" || p[1] == "annotations"):
					reads.labels = true
				case p[0] == "metadata" && !comparedMeta[p[1]]:
					continue children
				}
			}
		}
		out[c.ID] = reads
	}
	return out
}

func containsRef(refs []string, id string) bool {
	for _, r := range refs {
		if r == id {
			return true
		}
	}
	return false
}

// comparedMeta are the metadata fields sameMeta compares, or that never
// change: an expression may read them without making every update count.
var comparedMeta = map[string]bool{
	"name": true, "namespace": true, "uid": true, "generation": true, "creationTimestamp": true, "generateName": true,
	"deletionTimestamp": true, "finalizers": true, "ownerReferences": true, "labels": true, "annotations": true,
}

// Relevant reports whether an update of a child of kind gvk, from old to
// new, can change what a pass of its custom resource does. A pass reads a
// child's metadata and body to compare them with what it applies, the
// paths of it that expressions read, and its readiness. An update that
// changes none of these (a Deployment's controller counting its replicas
// while it stays unready, say) would only make a pass that writes nothing:
// the pass that read the object before the update did all there is to do,
// and any later update that matters still counts. Resyncs (the same
// resourceVersion) and objects not known as a child of this Blueprint
// count.
func (r *Reconciler) Relevant(gvk schema.GroupVersionKind, old, new client.Object) bool {
	if r.reads == nil || old == nil || new == nil || old.GetResourceVersion() == new.GetResourceVersion() {
		return true
	}
	labels := new.GetLabels()
	reads := r.reads[labels[LabelChild]]
	if reads == nil || labels[LabelBlueprint] != r.bp.Name {
		return true
	}
	if !sameMeta(old, new, reads.labels) {
		return true
	}
	// Whether the status is read at all: a Service's changing status
	// matters to no pass that reads none of it and calls it ready anyway.
	kindRule := reads.kindRule && !r.readyOnceItExists(gvk)
	read := reads.wholeStatus || len(reads.status) > 0 || kindRule
	var ruleReads []string
	if kindRule {
		ruleReads = r.kindReadsStatus(gvk)
	}
	oldStatus, newStatus, same, ok := statuses(old, new, read && !reads.wholeStatus, specInGeneration[gvk.GroupKind()], reads.statusTop, ruleReads)
	switch {
	case !ok:
		return true
	case same || !read:
		return false
	case reads.wholeStatus:
		return true
	}
	for _, p := range reads.status {
		if !equalJSON(at(oldStatus, p), at(newStatus, p)) {
			return true
		}
	}
	return kindRule && r.kindReady(readinessView(gvk, old, oldStatus)) != r.kindReady(readinessView(gvk, new, newStatus))
}

// sameMeta reports whether old and new have the same metadata, but for
// their resourceVersion and managed fields, and for labels and
// annotations someone else added (when strict is false): applying
// compares only those it sets, which are Inrun's own and the template's,
// and an added one is neither missing nor changed.
func sameMeta(old, new client.Object, strict bool) bool {
	return old.GetName() == new.GetName() && old.GetNamespace() == new.GetNamespace() && old.GetUID() == new.GetUID() &&
		old.GetGeneration() == new.GetGeneration() && old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp()) &&
		reflect.DeepEqual(old.GetFinalizers(), new.GetFinalizers()) &&
		reflect.DeepEqual(old.GetOwnerReferences(), new.GetOwnerReferences()) &&
		onlyAdded(old.GetLabels(), new.GetLabels(), strict) && onlyAdded(old.GetAnnotations(), new.GetAnnotations(), strict)
}

// onlyAdded reports whether new is old with, unless strict, keys added
// that are not Inrun's.
func onlyAdded(old, new map[string]string, strict bool) bool {
	if len(new) < len(old) || strict && len(new) != len(old) {
		return false
	}
	for k, v := range old {
		if nv, ok := new[k]; !ok || nv != v {
			return false
		}
	}
	if len(new) == len(old) {
		return true
	}
	for k := range new {
		if _, ok := old[k]; !ok && (strings.HasPrefix(k, "inrun.dev/") || k == LabelManagedBy) {
			return false
		}
	}
	return true
}

// specInGeneration are the kinds whose metadata.generation the API server
// raises on every change of the spec (their strategies compare the spec,
// and the Deployment's its annotations too, on each update), and which
// have no body but spec and status: between two objects of one of them
// that sameMeta found of one generation, the spec need not be compared.
// The Deployment's controller updates its status far more often than
// anyone its spec, and a pod template is the bulk of the object.
var specInGeneration = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:  true,
	{Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}:   true,
	{Group: "apps", Kind: "ReplicaSet"}:  true,
	{Group: "batch", Kind: "Job"}:        true,
	{Group: "batch", Kind: "CronJob"}:    true,
}

// statuses returns the status of old and new as JSON values, and whether
// they are the same. It fails (ok false) unless both objects are of one
// type and, but for metadata and status, equal: a typed object's body is
// compared field by field (unless sameGeneration says the API server
// vouches for it: see specInGeneration), and its status converted only
// when it changed and convert is set.
func statuses(old, new client.Object, convert, sameGeneration bool, fields ...[]string) (oldStatus, newStatus any, same, ok bool) {
	if ou, isU := old.(*unstructured.Unstructured); isU {
		nu, isU := new.(*unstructured.Unstructured)
		if !isU {
			return nil, nil, false, false
		}
		for k, v := range nu.Object {
			if k != "metadata" && k != "status" && (k != "spec" || !sameGeneration) && !equalJSON(ou.Object[k], v) {
				return nil, nil, false, false
			}
		}
		for k := range ou.Object {
			if _, kept := nu.Object[k]; !kept && k != "metadata" && k != "status" {
				return nil, nil, false, false
			}
		}
		oldStatus, newStatus = ou.Object["status"], nu.Object["status"]
		return oldStatus, newStatus, equalJSON(oldStatus, newStatus), true
	}
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(new)
	if ov.Type() != nv.Type() || ov.Kind() != reflect.Pointer || ov.Elem().Kind() != reflect.Struct {
		return nil, nil, false, false
	}
	ov, nv = ov.Elem(), nv.Elem()
	status := -1
	for i := 0; i < ov.NumField(); i++ {
		f := ov.Type().Field(i)
		switch {
		case !f.IsExported():
			return nil, nil, false, false
		case f.Name == "TypeMeta", f.Name == "ObjectMeta":
		case f.Name == "Status":
			status = i
		case f.Name == "Spec" && sameGeneration:
		case !reflect.DeepEqual(ov.Field(i).Addr().Interface(), nv.Field(i).Addr().Interface()):
			return nil, nil, false, false
		}
	}
	if status < 0 {
		return nil, nil, true, true // a kind with no status
	}
	os, ns := ov.Field(status).Addr().Interface(), nv.Field(status).Addr().Interface()
	if reflect.DeepEqual(os, ns) {
		return nil, nil, true, true
	}
	if !convert {
		return nil, nil, false, true
	}
	om, oldOK := convertStatus(ov.Field(status), fields)
	nm, newOK := convertStatus(nv.Field(status), fields)
	if !oldOK || !newOK {
		return nil, nil, false, false
	}
	return om, nm, false, true
}

// at returns the value at path below v; where the path goes through
// something that is not a map, what is there.
func at(v any, path []string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		v = m[k]
	}
	return v
}

// convertStatus converts status, a struct, as typedStatus does.
func convertStatus(status reflect.Value, fields [][]string) (map[string]any, bool) {
	if len(fields) > 0 {
		if m, ok := statusFields(status, fields); ok {
			return m, true
		}
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status.Addr().Interface())
	return m, err == nil
}

// typedStatus is the status of a typed object as JSON, nil for a kind with
// none. With fields, only those of its top fields are converted and the
// map holds no others: a Deployment's conditions, which no readiness rule
// reads, cost more to convert than the rest of it.
func typedStatus(obj client.Object, fields ...[]string) any {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("Status")
	if !f.IsValid() || f.Kind() != reflect.Struct {
		return nil
	}
	m, ok := convertStatus(f, fields)
	if !ok {
		return nil
	}
	return m
}

// statusFields converts the named fields of status, a struct, as
// runtime.DefaultUnstructuredConverter.ToUnstructured would write them;
// ok is false when the converter must convert it whole (convert.Fields).
func statusFields(status reflect.Value, fields [][]string) (map[string]any, bool) {
	byName := convert.Fields(status.Type())
	if byName == nil {
		return nil, false
	}
	m := map[string]any{}
	for _, names := range fields {
		for _, name := range names {
			f, known := byName[name]
			if _, done := m[name]; done || !known {
				continue
			}
			v := status.FieldByIndex(f.Index)
			if f.Omitted(v) {
				continue
			}
			u, err := fieldValue(v)
			if err != nil {
				return nil, false
			}
			m[name] = u
		}
	}
	return m, true
}

// fieldValue is the converter's view of a field's value: a string, a
// bool or an integer (or a pointer to one) directly, anything else through
// the converter.
func fieldValue(v reflect.Value) (any, error) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		if k := v.Elem().Kind(); k == reflect.String || k == reflect.Bool || k >= reflect.Int && k <= reflect.Int64 {
			v = v.Elem()
		}
	}
	if reflect.PointerTo(v.Type()).NumMethod() > 0 {
		return convert.Value(v) // it may marshal itself
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	}
	return convert.Value(v)
}

// readinessView is what kindReady reads of obj, given its status as JSON:
// obj itself when unstructured, else its kind, generation, spec.replicas
// and status, without converting the rest of a typed object.
func readinessView(gvk schema.GroupVersionKind, obj client.Object, status any) *unstructured.Unstructured {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"generation": obj.GetGeneration()}}}
	u.SetGroupVersionKind(gvk)
	if status != nil {
		u.Object["status"] = status
	}
	spec := reflect.ValueOf(obj).Elem().FieldByName("Spec")
	if spec.IsValid() && spec.Kind() == reflect.Struct {
		if r := spec.FieldByName("Replicas"); r.IsValid() && r.Kind() == reflect.Pointer && !r.IsNil() && r.Elem().CanInt() {
			u.Object["spec"] = map[string]any{"replicas": r.Elem().Int()}
		}
	}
	return u
}
