package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// batchSize is how many objects a worker moves at once: their snapshots
// are saved, then their ledger entries written together (one write per
// ledger shard instead of one per object), then the objects updated. At 64
// objects over 16 shards, the ledger costs about half a write per object
// instead of two requests.
const batchSize = 64

// outcome is what moving one object of a batch did.
type outcome struct {
	moved bool
	err   error
}

// moveBatch moves objs, as the plan listed them, in three steps: every
// snapshot, then every ledger entry, then every object, each updated at the
// resourceVersion its snapshot was taken from. An object changed since the
// list (the update conflicts), or whose snapshot could not be recorded,
// starts again alone from a fresh read (moveOne). Nothing is updated before
// its snapshot and its entry are written.
func (m *Migration) moveBatch(ctx context.Context, s *store, c client.Client, objs []*unstructured.Unstructured) []outcome {
	out := make([]outcome, len(objs))
	type prepared struct {
		i     int
		moved *unstructured.Unstructured
		entry Entry
	}
	var ready []prepared
	for i, obj := range objs {
		moved, ch := m.moved(obj)
		if !ch.moved || !ch.lossAccepted {
			// The plan saw otherwise: read it again.
			out[i].moved, out[i].err = m.moveOne(ctx, s, c, client.ObjectKeyFromObject(obj))
			continue
		}
		e, err := s.save(ctx, obj)
		if err != nil {
			out[i].err = fmt.Errorf("%s: saving its snapshot: %w", objectKey(obj.GetNamespace(), obj.GetName()), err)
			continue
		}
		ready = append(ready, prepared{i: i, moved: moved, entry: e})
	}
	entries := make([]Entry, len(ready))
	for k, p := range ready {
		entries[k] = p.entry
	}
	if err := s.recordAll(ctx, entries); err != nil {
		for _, p := range ready {
			out[p.i].err = fmt.Errorf("%s: recording its snapshot in the ledger: %w", objectKey(objs[p.i].GetNamespace(), objs[p.i].GetName()), err)
		}
		return out
	}
	for _, p := range ready {
		err := c.Update(ctx, p.moved, client.FieldOwner(FieldManager))
		switch {
		case err == nil:
			out[p.i].moved = true
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			out[p.i].moved, out[p.i].err = m.moveOne(ctx, s, c, client.ObjectKeyFromObject(objs[p.i]))
		default:
			out[p.i].err = fmt.Errorf("%s: %w", objectKey(objs[p.i].GetNamespace(), objs[p.i].GetName()), err)
		}
	}
	return out
}

// recordAll writes entries to the ledger: one update per shard.
func (s *store) recordAll(ctx context.Context, entries []Entry) error {
	byShard := map[string]map[string]string{}
	for _, e := range entries {
		val, err := json.Marshal(e)
		if err != nil {
			return err
		}
		name := shardName(s.id, e.UID)
		if byShard[name] == nil {
			byShard[name] = map[string]string{}
		}
		byShard[name][e.UID] = string(val)
	}
	for name, data := range byShard {
		if err := s.recordShard(ctx, name, data); err != nil {
			return err
		}
	}
	return nil
}

// recordShard adds data's entries to ledger shard name, making it when it
// is missing.
func (s *store) recordShard(ctx context.Context, name string, data map[string]string) error {
	key := client.ObjectKey{Namespace: s.ns, Name: name}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := s.c.Get(ctx, key, &cm)
		if apierrors.IsNotFound(err) {
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: s.labels()}, Data: data}
			err = s.c.Create(ctx, &cm)
			if apierrors.IsAlreadyExists(err) {
				// Another worker made the shard first: try again.
				return apierrors.NewConflict(corev1.Resource("configmaps"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if !s.ours(&cm) {
			return fmt.Errorf("ConfigMap %s/%s exists and was not made by migration %s; it is left alone", s.ns, cm.Name, s.id)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		changed := false
		for k, v := range data {
			changed = changed || cm.Data[k] != v
			cm.Data[k] = v
		}
		if !changed {
			return nil // an interrupted run recorded them
		}
		return s.c.Update(ctx, &cm)
	})
}
