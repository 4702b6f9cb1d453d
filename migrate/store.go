package migrate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The store keeps a migration's snapshots and its ledger in one namespace:
//
//	ConfigMap inrun-ledger-<id>             data.migration: the Migration (JSON)
//	ConfigMap inrun-ledger-<id>-<shard>     data.<uid>: an Entry (JSON), 16 shards by the UID's hash
//	Secret    inrun-snap-<id>-<uid>-<n>     data.object: chunk n of the object's JSON
//
// The ledger holds each snapshot's SHA-256 apart from the snapshot, so a
// snapshot edited or deleted after the fact is found out.

const (
	// chunkSize keeps a snapshot Secret well under the 1 MiB object limit.
	chunkSize = 512 << 10
	// shards spreads the ledger's entries over ConfigMaps, so that neither
	// one grows past the object limit nor every write contends for one.
	shards = 16
	// headKey is the head ConfigMap's key holding the Migration.
	headKey = "migration"
	// chunkKey is a snapshot Secret's key holding its chunk.
	chunkKey = "object"
	// annotationObject names, on a snapshot Secret, the object it saves.
	annotationObject = "migrate.inrun.dev/object"
)

// Entry is the ledger's record of one object's snapshot.
type Entry struct {
	// Namespace and Name name the object; UID is the one it had.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// SHA256 is the hex SHA-256 of the snapshot, its chunks joined.
	SHA256 string `json:"sha256"`
	// Chunks is the number of Secrets the snapshot spans.
	Chunks int `json:"chunks"`
	// From is set on the entry of a custom resource a kind move created:
	// the UID of the one it moved. Its snapshot is the new custom resource
	// as created, what the move wrote, which rollback compares the live
	// one to.
	From string `json:"from,omitempty"`
}

// Object names the entry's object: namespace/name.
func (e Entry) Object() string { return objectKey(e.Namespace, e.Name) }

type store struct {
	c  client.Client
	ns string
	id string
}

func headName(id string) string { return "inrun-ledger-" + id }

func shardName(id, uid string) string {
	h := fnv.New32a()
	h.Write([]byte(uid))
	return fmt.Sprintf("inrun-ledger-%s-%x", id, h.Sum32()%shards)
}

// SnapshotName is the name of chunk n of the snapshot of the object with
// the given UID.
func SnapshotName(id, uid string, n int) string {
	return fmt.Sprintf("inrun-snap-%s-%s-%d", id, uid, n)
}

func (s *store) labels() map[string]string {
	return map[string]string{LabelID: s.id, labelManagedBy: managedBy}
}

// ours reports whether this migration made obj.
func (s *store) ours(obj client.Object) bool {
	l := obj.GetLabels()
	return l[LabelID] == s.id && l[labelManagedBy] == managedBy
}

// begin makes the namespace (when missing) and the ledger's head, or
// checks the head an earlier run made. m is the *Migration or *KindMove
// the ledger is for.
func (s *store) begin(ctx context.Context, m any) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns, Labels: map[string]string{labelManagedBy: managedBy}}}
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}); apierrors.IsNotFound(err) {
		if err := s.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s for the snapshots: %w", s.ns, err)
		}
	} else if err != nil {
		return err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	// A resumed run finds the head an earlier one made, and writes nothing.
	if _, err := s.headData(ctx); err == nil {
		return nil
	}
	head := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: headName(s.id), Namespace: s.ns, Labels: s.labels()}, Data: map[string]string{headKey: string(data)}}
	err = s.c.Create(ctx, head)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = s.headData(ctx)
	return err
}

// headData reads the head ConfigMap's record of the migration the ledger
// was made for.
func (s *store) headData(ctx context.Context) ([]byte, error) {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: headName(s.id)}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no ledger of migration %s in namespace %s (ConfigMap %s): it was never applied there, or inrun clean ended it (which deletes the ledger and the snapshots: it can no longer be rolled back)", s.id, s.ns, headName(s.id))
		}
		return nil, err
	}
	if !s.ours(&cm) {
		return nil, fmt.Errorf("ConfigMap %s/%s was not made by inrun migrate; it is left alone", s.ns, cm.Name)
	}
	var probe struct {
		ID string `json:"id"`
	}
	data := []byte(cm.Data[headKey])
	if err := json.Unmarshal(data, &probe); err != nil || probe.ID != s.id {
		return nil, fmt.Errorf("the ledger's head ConfigMap %s/%s is damaged: data.%s is not migration %s", s.ns, cm.Name, headKey, s.id)
	}
	return data, nil
}

// head reads the field migration the ledger was made for.
func (s *store) head(ctx context.Context) (*Migration, error) {
	data, err := s.headData(ctx)
	if err != nil {
		return nil, err
	}
	var m Migration
	if err := json.Unmarshal(data, &m); err != nil || len(m.Moves) == 0 {
		return nil, fmt.Errorf("migration %s moves custom resources to another kind, not fields: its Blueprint (with migrate.to) rolls it back", s.id)
	}
	return &m, nil
}

// encode is the snapshot of obj: all of it but managedFields, which the
// API server keeps for itself.
func encode(obj *unstructured.Unstructured) ([]byte, error) {
	c := obj.DeepCopy()
	c.SetManagedFields(nil)
	return json.Marshal(c.Object)
}

// save writes obj's snapshot and returns its ledger entry.
func (s *store) save(ctx context.Context, obj *unstructured.Unstructured) (Entry, error) {
	data, err := encode(obj)
	if err != nil {
		return Entry{}, err
	}
	sum := sha256.Sum256(data)
	e := Entry{Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()), SHA256: hex.EncodeToString(sum[:])}
	for off := 0; off < len(data) || off == 0; off += chunkSize {
		end := min(off+chunkSize, len(data))
		sec := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: SnapshotName(s.id, e.UID, e.Chunks), Namespace: s.ns, Labels: s.labels(),
				Annotations: map[string]string{annotationObject: e.Object()}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{chunkKey: data[off:end]},
		}
		if err := s.put(ctx, sec); err != nil {
			return Entry{}, err
		}
		e.Chunks++
		if end == len(data) {
			break
		}
	}
	return e, nil
}

// put creates sec, or replaces the one an earlier, interrupted run of this
// migration made.
func (s *store) put(ctx context.Context, sec *corev1.Secret) error {
	err := s.c.Create(ctx, sec)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var cur corev1.Secret
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(sec), &cur); err != nil {
		return err
	}
	if !s.ours(&cur) {
		return fmt.Errorf("Secret %s/%s exists and was not made by migration %s; it is left alone", s.ns, sec.Name, s.id)
	}
	if bytes.Equal(cur.Data[chunkKey], sec.Data[chunkKey]) && maps.Equal(cur.Annotations, sec.Annotations) {
		return nil // an interrupted run saved the same state
	}
	cur.Data = sec.Data
	cur.Annotations = sec.Annotations
	return s.c.Update(ctx, &cur)
}

// record writes e to the ledger.
func (s *store) record(ctx context.Context, e Entry) error {
	return s.recordAll(ctx, []Entry{e})
}

// entries reads the ledger: every entry, by UID. An entry that does not
// parse is an error naming its ConfigMap and key.
func (s *store) entries(ctx context.Context) (map[string]Entry, []string, error) {
	var list corev1.ConfigMapList
	if err := s.c.List(ctx, &list, client.InNamespace(s.ns), client.MatchingLabels(s.labels())); err != nil {
		return nil, nil, err
	}
	out := map[string]Entry{}
	var problems []string
	for _, cm := range list.Items {
		if cm.Name == headName(s.id) {
			continue
		}
		for uid, val := range cm.Data {
			var e Entry
			if err := json.Unmarshal([]byte(val), &e); err != nil || e.UID != uid || e.Chunks < 1 {
				problems = append(problems, fmt.Sprintf("ledger ConfigMap %s/%s: entry %s is damaged", s.ns, cm.Name, uid))
				continue
			}
			out[uid] = e
		}
	}
	sort.Strings(problems)
	return out, problems, nil
}

// load reads and verifies e's snapshot. Its error names the object and
// the snapshot.
func (s *store) load(ctx context.Context, e Entry) (*unstructured.Unstructured, error) {
	var data []byte
	for n := range e.Chunks {
		name := SnapshotName(s.id, e.UID, n)
		var sec corev1.Secret
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &sec); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%s: snapshot Secret %s/%s is missing", e.Object(), s.ns, name)
			}
			return nil, err
		}
		data = append(data, sec.Data[chunkKey]...)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != e.SHA256 {
		return nil, fmt.Errorf("%s: snapshot %s/%s does not match the ledger (SHA-256 %s, ledger %s): it was changed after it was taken", e.Object(), s.ns, SnapshotName(s.id, e.UID, 0), got[:12], e.SHA256[:min(12, len(e.SHA256))])
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("%s: snapshot %s/%s does not decode: %v", e.Object(), s.ns, SnapshotName(s.id, e.UID, 0), err)
	}
	if string(obj.GetUID()) != e.UID {
		return nil, fmt.Errorf("%s: snapshot %s/%s is of another object (UID %s)", e.Object(), s.ns, SnapshotName(s.id, e.UID, 0), obj.GetUID())
	}
	return obj, nil
}

// hasEntry reports whether the ledger has an entry for the object with
// the given UID; false when it cannot tell.
func (s *store) hasEntry(ctx context.Context, uid types.UID) bool {
	var cm corev1.ConfigMap
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: shardName(s.id, string(uid))}, &cm); err != nil {
		return false
	}
	_, ok := cm.Data[string(uid)]
	return ok
}
