package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conflictBackoff retries an object's step when a writer changed it between
// the read and the write; the step starts again from a fresh read and a
// fresh snapshot.
var conflictBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.2}

// Result is what Apply did.
type Result struct {
	// Moved objects were snapshotted and moved by this run.
	Moved int
	// Skipped already carried the marker (an earlier run moved them), or
	// held nothing to move once read again.
	Skipped int
	// Failed lists the objects that could not be moved, with why.
	Failed []error
}

// ErrRefused is returned, wrapped, by Apply when its plan is refused: it
// drops values no field acknowledges, or (a kind move) objects are in the
// way; nothing is written.
var ErrRefused = errors.New("the migration was refused")

// Apply moves every object the plan finds: for each, a snapshot, its
// ledger entry, then the update with the marker, in that order. It returns
// the plan it worked from. Objects that fail are listed in Result.Failed
// and the rest go on; an error means Apply stopped (ctx ended, the plan
// was refused, or the store could not be written).
func (m *Migration) Apply(ctx context.Context, opts Options) (*Plan, *Result, error) {
	opts.defaults()
	p, err := m.Plan(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if p.Refused() {
		var lines []string
		for _, l := range p.Losses {
			if !l.Accepted {
				lines = append(lines, fmt.Sprintf("%s: %s %s would be dropped, %s holds %s", l.Object, l.From, Show(l.Dropped, true), m.to(l.Field), Show(l.Kept, true)))
			}
		}
		return p, nil, fmt.Errorf("%w: it would drop values; nothing was written:\n  %s\nmake the values agree, or add acceptLoss: true to the field's migrate section (the snapshots keep the dropped values for rollback)", ErrRefused, strings.Join(lines, "\n  "))
	}
	s := &store{c: opts.Client, ns: opts.Namespace, id: m.ID}
	if len(p.todo) == 0 {
		return p, &Result{}, nil
	}
	if err := s.begin(ctx, m); err != nil {
		return p, nil, err
	}
	res := &Result{}
	start := time.Now()
	done := 0
	// Batches no larger than an even share, so that every worker has one.
	size := max(1, min(batchSize, (len(p.todo)+opts.Workers-1)/opts.Workers))
	var batches [][]*unstructured.Unstructured
	for i := 0; i < len(p.todo); i += size {
		batches = append(batches, p.todo[i:min(i+size, len(p.todo))])
	}
	runWorkers(ctx, opts.Workers, batches, func(batch []*unstructured.Unstructured) []outcome {
		return m.moveBatch(ctx, s, opts.Client, batch)
	}, func(_ []*unstructured.Unstructured, outs []outcome) {
		for _, o := range outs {
			switch {
			case o.err != nil:
				res.Failed = append(res.Failed, o.err)
			case o.moved:
				res.Moved++
			default:
				res.Skipped++
			}
			done++
			if opts.Progress != nil {
				opts.Progress(Progress{Done: done, Total: len(p.todo), Changed: res.Moved, Elapsed: time.Since(start)})
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return p, res, fmt.Errorf("apply stopped (%w) with %d of %d objects moved; run it again to finish (moved objects are skipped)", err, res.Moved, len(p.todo))
	}
	return p, res, nil
}

func (m *Migration) to(field string) string {
	for _, mv := range m.Moves {
		if mv.Field == field {
			return mv.To
		}
	}
	return field
}

// moveOne moves one object: it reads it, snapshots exactly what it read,
// records the snapshot, and updates the object at the resourceVersion it
// read. A conflict starts again from a fresh read.
func (m *Migration) moveOne(ctx context.Context, s *store, c client.Client, key client.ObjectKey) (bool, error) {
	name := objectKey(key.Namespace, key.Name)
	moved := false
	err := retry.RetryOnConflict(conflictBackoff, func() error {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(m.Kind)
		if err := c.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil // deleted since the plan: nothing to move
			}
			return err
		}
		if obj.GetAnnotations()[AnnotationID] == m.ID {
			return nil
		}
		out, ch := m.moved(obj)
		if !ch.moved {
			return nil
		}
		if !ch.lossAccepted {
			return fmt.Errorf("a value written since the plan would be dropped (%s %s); run inrun migrate plan again", ch.losses[0].From, Show(ch.losses[0].Dropped, true))
		}
		e, err := s.save(ctx, obj)
		if err != nil {
			return fmt.Errorf("saving its snapshot: %w", err)
		}
		if err := s.record(ctx, e); err != nil {
			return fmt.Errorf("recording its snapshot in the ledger: %w", err)
		}
		if err := c.Update(ctx, out, client.FieldOwner(FieldManager)); err != nil {
			return err
		}
		moved = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return moved, nil
}
