package migrate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options say where a migration keeps its snapshots and how it reports.
type Options struct {
	// Client reads and writes the custom resources, the snapshots and the
	// ledger.
	Client client.Client
	// Namespace holds the snapshots and the ledger; DefaultNamespace when
	// empty. Apply creates it when it is missing.
	Namespace string
	// Only limits a migration to the custom resources in one namespace;
	// every namespace when empty. Runs limited to different namespaces
	// share the migration's ledger.
	Only string
	// Workers is how many objects Apply and Rollback change at once; 4
	// when zero.
	Workers int
	// Samples is how many sample diffs a plan shows; 3 when zero, none
	// when negative.
	Samples int
	// Progress, when set, is called after each object Apply or Rollback
	// handles, one call at a time.
	Progress func(Progress)
	// Discovery, when set, lets a kind move's plan look, among every kind
	// the API server serves, for other controllers' objects that a custom
	// resource to move owns; without it, they are not looked for.
	Discovery Discovery
}

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Samples == 0 {
		o.Samples = 3
	}
}

// Progress is how far Apply or Rollback has got.
type Progress struct {
	// Done of Total objects handled; Changed of them written.
	Done, Total, Changed int
	// Elapsed since the start.
	Elapsed time.Duration
}

// Plan is what Apply would do, found without writing anything.
type Plan struct {
	Migration *Migration
	// Objects is the number of custom resources of the kind.
	Objects int
	// ToMove hold a value at an old path and carry no marker.
	ToMove int
	// Migrated carry this migration's marker: Apply skips them.
	Migrated int
	// Rewritten carry the marker but hold a value at an old path again,
	// written since by a writer of the old shape. Apply leaves them (their
	// snapshot is the state before the migration); rollback reports them
	// as drift.
	Rewritten []string
	// Untouched hold nothing at the old paths.
	Untouched int
	// Losses are the values moves would drop, by object.
	Losses []ObjectLoss
	// Samples are diffs of some of the objects to move.
	Samples []Diff

	// todo are the objects to move, as listed.
	todo []*unstructured.Unstructured
}

// ObjectLoss is a value a move would drop from one object.
type ObjectLoss struct {
	Object string
	Loss
	// Accepted is true when the field's migrate section acknowledges it.
	Accepted bool
}

// Refused reports whether the plan has a loss no field acknowledges:
// Apply then refuses to start.
func (p *Plan) Refused() bool {
	for _, l := range p.Losses {
		if !l.Accepted {
			return true
		}
	}
	return false
}

// Diff is how a move changes one object.
type Diff struct {
	Object string
	Fields []FieldDiff
}

// FieldDiff is one path's value before and after, as Show renders them.
type FieldDiff struct {
	Path, Before, After string
}

// Plan lists the kind's custom resources and works out what Apply would do
// to each. It writes nothing.
func (m *Migration) Plan(ctx context.Context, opts Options) (*Plan, error) {
	opts.defaults()
	if err := m.checkCRD(ctx, opts.Client); err != nil {
		return nil, err
	}
	objs, err := m.list(ctx, opts.Client, opts.Only)
	if err != nil {
		return nil, err
	}
	p := &Plan{Migration: m, Objects: len(objs)}
	for _, obj := range objs {
		key := objectKey(obj.GetNamespace(), obj.GetName())
		out, ch := m.moved(obj)
		switch {
		case obj.GetAnnotations()[AnnotationID] == m.ID:
			if ch.moved {
				p.Rewritten = append(p.Rewritten, key)
			}
			p.Migrated++
			continue
		case !ch.moved:
			p.Untouched++
			continue
		}
		p.ToMove++
		p.todo = append(p.todo, obj)
		for _, l := range ch.losses {
			p.Losses = append(p.Losses, ObjectLoss{Object: key, Loss: l, Accepted: m.accepts(l.Field)})
		}
		if opts.Samples > 0 && len(p.Samples) < opts.Samples {
			p.Samples = append(p.Samples, m.diff(key, obj.Object, out.Object))
		}
	}
	return p, nil
}

func (m *Migration) accepts(field string) bool {
	for _, mv := range m.Moves {
		if mv.Field == field {
			return mv.AcceptLoss
		}
	}
	return false
}

// diff compares the migration's paths of before and after.
func (m *Migration) diff(key string, before, after map[string]any) Diff {
	d := Diff{Object: key}
	for _, p := range m.Paths() {
		b, bok := get(before, p)
		a, aok := get(after, p)
		if bok != aok || !equal(a, b) {
			d.Fields = append(d.Fields, FieldDiff{Path: p, Before: Show(b, bok), After: Show(a, aok)})
		}
	}
	return d
}

// list reads every custom resource of the kind (in namespace ns, when not
// empty), a page at a time, sorted by namespace and name.
func (m *Migration) list(ctx context.Context, c client.Client, ns string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(m.Kind.GroupVersion().WithKind(m.Kind.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns), client.Limit(500), client.Continue(cont)); err != nil {
			return nil, fmt.Errorf("listing %s: %w", m.Kind.Kind, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		if cont = list.GetContinue(); cont == "" {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return objectKey(out[i].GetNamespace(), out[i].GetName()) < objectKey(out[j].GetNamespace(), out[j].GetName())
	})
	return out, nil
}

// String describes the moves: spec.repo → spec.repository.
func (m *Migration) String() string {
	var parts []string
	for _, mv := range m.Moves {
		parts = append(parts, strings.Join(mv.From, ", ")+" → "+mv.To)
	}
	return strings.Join(parts, "; ")
}

// checkCRD checks that the installed CRD still has every old path: the API
// server prunes a value at a path its CRD does not have, on read as on
// write, so a move could find nothing to move and the values would be
// gone. A client not allowed to read CRDs skips the check.
func (m *Migration) checkCRD(ctx context.Context, c client.Client) error {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	name := m.Plural + "." + m.Kind.Group
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		switch {
		case apierrors.IsForbidden(err):
			return nil
		case apierrors.IsNotFound(err):
			return fmt.Errorf("CRD %s is not installed: there is nothing to migrate", name)
		}
		return err
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var root map[string]any
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if vm["name"] == m.Kind.Version {
			root, _, _ = unstructured.NestedMap(vm, "schema", "openAPIV3Schema")
		}
	}
	if root == nil {
		return fmt.Errorf("CRD %s has no schema for version %s", name, m.Kind.Version)
	}
	var missing []string
	for _, mv := range m.Moves {
		for _, p := range append([]string{mv.To}, mv.From...) {
			if !schemaHas(root, p) {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the installed CRD %s has no %s: the API server prunes values there before they could move; install the CRD that serves both the old and the new paths (the Blueprint's) first, then plan again; or, if inrun clean ended this migration and dropped them, remove the field's migrate section from the Blueprint", name, strings.Join(missing, ", "))
	}
	return nil
}

// schemaHas reports whether an OpenAPI schema has a dotted path, or keeps
// unknown fields above it.
func schemaHas(s map[string]any, path string) bool {
	for _, seg := range strings.Split(path, ".") {
		if keep, _ := s["x-kubernetes-preserve-unknown-fields"].(bool); keep {
			return true
		}
		next, ok, _ := unstructured.NestedMap(s, "properties", seg)
		if !ok {
			return false
		}
		s = next
	}
	return true
}
