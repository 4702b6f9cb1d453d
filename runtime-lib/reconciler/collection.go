package reconciler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
)

// Collections is what an Evaluation offers for children with forEach. The
// interpreter's has it; an operator inrun build generated before
// collections existed does not, and its Reconciler says so.
type Collections interface {
	// Items evaluates c's iterators: one binding of their names per object
	// to render, every combination, in order.
	Items(c *ir.Child) ([]map[string]any, error)
	// IncludeItem evaluates c's includeWhen for one item.
	IncludeItem(c *ir.Child, item map[string]any) (bool, error)
	// ObjectItem renders c's template for one item.
	ObjectItem(c *ir.Child, item map[string]any) (map[string]any, error)
	// ReadyItem evaluates c's readyWhen for one item, its live object as
	// each; defined is false when c has none.
	ReadyItem(c *ir.Child, item map[string]any, live *unstructured.Unstructured) (ready, defined bool, err error)
	Lists
}

// Lists is what an Evaluation offers for children expressions read as
// lists: collections, and externalRefs by label selector.
type Lists interface {
	// SetLiveItems presents a child's live objects, in order, as the
	// list other expressions read.
	SetLiveItems(id string, objs []*unstructured.Unstructured) error
}

// collection renders and writes every item of c. A failure keeps every
// object of the collection as it is; an item that goes away is pruned.
func (p *pass) collection(ctx context.Context, c *ir.Child) {
	coll, ok := p.eval.(Collections)
	if !ok {
		p.childError(ctx, c, fmt.Errorf("%s: this operator's Renderer has no collections (forEach): generate it again with this version of inrun build", c.Pos))
		return
	}
	items, err := coll.Items(c)
	if err != nil {
		p.evalError(ctx, c, err)
		return
	}
	wanted := map[objectKey]bool{}
	var live []*unstructured.Unstructured
	notReady := 0
	for _, item := range items {
		include, err := coll.IncludeItem(c, item)
		if err != nil {
			p.evalError(ctx, c, err)
			return
		}
		if !include {
			continue
		}
		m, err := coll.ObjectItem(c, item)
		if err != nil {
			p.evalError(ctx, c, err)
			return
		}
		if m, err = p.transform(ctx, c, m); err != nil {
			p.childError(ctx, c, err)
			return
		}
		desired := &unstructured.Unstructured{Object: m}
		if err := p.decorate(c, desired); err != nil {
			p.childError(ctx, c, err)
			return
		}
		key := keyOf(desired)
		if wanted[key] {
			p.childError(ctx, c, fmt.Errorf("%s: two items of collection %q render %s: the list holds that item twice (listType=set, or listType=map with a key, in the schema refuses duplicates), or metadata.name does not use the iterator (put it there)", c.Pos, c.ID, key))
			return
		}
		if p.taken(ctx, c, key) {
			return
		}
		wanted[key] = true
		var current *unstructured.Unstructured
		for _, obj := range p.observed[c.ID] {
			if keyOf(obj) == key {
				current = obj
			}
		}
		if !p.canOwn(desired) && !controllerutil.ContainsFinalizer(p.cr, Finalizer) {
			if err := p.addFinalizer(ctx); err != nil {
				p.apiError(ctx, c, err, "patch")
				return
			}
		}
		obj := current
		switch {
		case c.Phase == ir.OnCreate && current != nil:
		case c.Phase == ir.OnCreate:
			obj = p.create(ctx, c, desired)
		default:
			obj = p.ensure(ctx, c, desired, current)
		}
		if obj == nil {
			p.keep[c.ID] = true
			continue
		}
		live = append(live, obj)
		ready, defined, err := coll.ReadyItem(c, item, obj)
		switch {
		case err != nil && !expr.DataPending(err):
			p.childError(ctx, c, err)
		case err != nil, defined && !ready, !defined && !p.kindReady(obj):
			notReady++
		}
	}
	p.wantedItems[c.ID] = wanted
	p.items[c.ID] = live
	if err := coll.SetLiveItems(c.ID, live); err != nil {
		p.childError(ctx, c, err)
		return
	}
	switch {
	case p.failed[c.ID]:
	case notReady > 0:
		p.notReady = append(p.notReady, fmt.Sprintf("%s: %d of %d items", c.ID, notReady, len(live)))
	default:
		p.isReady[c.ID] = true
	}
}
