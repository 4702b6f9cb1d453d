package migrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/ir"
)

const (
	// AnnotationID marks an object a migration has moved: its value is the
	// migration's ID. Apply skips marked objects, so a resumed apply moves
	// none twice.
	AnnotationID = "migrate.inrun.dev/id"
	// LabelID labels a migration's snapshots and ledger with its ID.
	LabelID = "migrate.inrun.dev/id"
	// labelManagedBy and managedBy mark what this package creates.
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "inrun"
	// FieldManager is the field manager of the objects' updates.
	FieldManager = "inrun-migrate"
	// DefaultNamespace holds snapshots and ledgers when Options says none.
	DefaultNamespace = "inrun-system"
)

// Move moves the value at the first of From that holds one to To.
type Move struct {
	// To is the served field's path, dotted from the root.
	To string `json:"to"`
	// From are the old paths, first wins.
	From []string `json:"from"`
	// Field is the served field's name.
	Field string `json:"field"`
	// AcceptLoss acknowledges that the move may drop a value.
	AcceptLoss bool `json:"acceptLoss,omitempty"`
}

// Migration is what a Blueprint asks to move, for one kind.
type Migration struct {
	// ID names the migration: the Blueprint's name and a hash of the kind
	// and the moves. The same Blueprint gives the same ID, so apply resumes
	// and rollback finds its ledger.
	ID string `json:"id"`
	// Kind is the custom resources' kind.
	Kind schema.GroupVersionKind `json:"kind"`
	// Plural is the kind's resource name; the CRD is <Plural>.<group>.
	Plural string `json:"plural"`
	// Namespaced is false for a cluster-scoped kind.
	Namespaced bool `json:"namespaced"`
	// Moves are the field moves, in Blueprint order.
	Moves []Move `json:"moves"`
}

// FromBlueprint returns the migration a compiled Blueprint declares, or an
// error when none of its served fields has a migrate section.
func FromBlueprint(bp *ir.Blueprint) (*Migration, error) {
	fields := bp.Serve.Migrations()
	if len(fields) == 0 {
		return nil, fmt.Errorf("Blueprint %s declares no migration: add migrate: {from: <old path>} to a field under serve.fields, or migrate: {to: ..., selection: ...} at its top to move custom resources to another kind", bp.Name)
	}
	m := &Migration{Kind: bp.Resource.GroupVersionKind, Plural: bp.Resource.Plural, Namespaced: bp.Resource.Namespaced}
	for _, f := range fields {
		m.Moves = append(m.Moves, Move{To: f.Path, From: f.Migrate.From, Field: f.Name, AcceptLoss: f.Migrate.AcceptLoss})
	}
	// AcceptLoss does not change what moves, so it is not part of the ID.
	key := struct {
		Kind  schema.GroupVersionKind
		Moves [][]string
	}{Kind: m.Kind}
	for _, mv := range m.Moves {
		key.Moves = append(key.Moves, append([]string{mv.To}, mv.From...))
	}
	data, _ := json.Marshal(key)
	sum := sha256.Sum256(data)
	name := bp.Name
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-.")
	}
	m.ID = name + "-" + hex.EncodeToString(sum[:])[:10]
	return m, nil
}

// Paths returns every path the migration may write: each move's To and
// From, in order.
func (m *Migration) Paths() []string {
	var out []string
	for _, mv := range m.Moves {
		out = append(out, mv.To)
		out = append(out, mv.From...)
	}
	return out
}

// Loss is a value a move drops.
type Loss struct {
	// Field is the served field; From the path whose value is dropped.
	Field, From string
	// Dropped is the value dropped; Kept the value the new path holds.
	Dropped, Kept any
}

// change is what moving one object does.
type change struct {
	// moved is true when any value moves.
	moved bool
	// losses are the values dropped, by move.
	losses []Loss
	// lossAccepted is false when a loss falls on a move that does not
	// acknowledge it.
	lossAccepted bool
}

// apply moves obj's values in place (without the marker) and says what it
// did. A value already at To wins over the old paths' (a writer of the new
// shape wrote it); the first old path holding a value wins over the rest.
func (m *Migration) apply(obj map[string]any) change {
	ch := change{lossAccepted: true}
	for _, mv := range m.Moves {
		kept, has := get(obj, mv.To)
		for _, from := range mv.From {
			v, ok := get(obj, from)
			if !ok {
				continue
			}
			ch.moved = true
			unset(obj, from)
			if !has {
				set(obj, mv.To, v)
				kept, has = v, true
				continue
			}
			if !equal(v, kept) {
				ch.losses = append(ch.losses, Loss{Field: mv.Field, From: from, Dropped: v, Kept: kept})
				if !mv.AcceptLoss {
					ch.lossAccepted = false
				}
			}
		}
	}
	return ch
}

// moved returns a copy of obj as the migration leaves it: values moved and
// the marker set.
func (m *Migration) moved(obj *unstructured.Unstructured) (*unstructured.Unstructured, change) {
	out := obj.DeepCopy()
	ch := m.apply(out.Object)
	if ch.moved {
		ann := out.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnotationID] = m.ID
		out.SetAnnotations(ann)
	}
	return out, ch
}

// get returns the value at a dotted path; absent for null.
func get(obj map[string]any, path string) (any, bool) {
	v, ok, err := unstructured.NestedFieldNoCopy(obj, strings.Split(path, ".")...)
	if err != nil || !ok || v == nil {
		return nil, false
	}
	return v, true
}

func set(obj map[string]any, path string, v any) {
	_ = unstructured.SetNestedField(obj, v, strings.Split(path, ".")...)
}

// unset removes the value at path, and the objects it leaves empty under
// spec: a move leaves no {} behind.
func unset(obj map[string]any, path string) {
	segs := strings.Split(path, ".")
	unstructured.RemoveNestedField(obj, segs...)
	for i := len(segs) - 1; i > 1; i-- {
		parent, ok, _ := unstructured.NestedMap(obj, segs[:i]...)
		if !ok || len(parent) > 0 {
			return
		}
		unstructured.RemoveNestedField(obj, segs[:i]...)
	}
}

// equal compares JSON values by their encoding, so that 1 and 1.0 read
// from different decoders agree.
func equal(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// Show renders a value for a report: JSON, or "(absent)".
func Show(v any, ok bool) string {
	if !ok {
		return "(absent)"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// objectKey names an object in reports: namespace/name, or name.
func objectKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
