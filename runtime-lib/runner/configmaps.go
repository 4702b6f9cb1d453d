package runner

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
)

// ConfigMaps finds Blueprints stored in ConfigMaps. The runner never
// compiles: Load, given by the program that runs it, turns a ConfigMap
// into IR (inrun run passes load.ConfigMap followed by the compiler).
type ConfigMaps struct {
	// Namespace to look in; "" for every namespace.
	Namespace string
	// Selector selects the ConfigMaps by label.
	Selector map[string]string
	// Load turns one ConfigMap into a Blueprint.
	Load func(*corev1.ConfigMap) (*ir.Blueprint, error)
}

// Blueprints loads every selected ConfigMap, in namespace/name order. Every
// Blueprint's errors are reported, not only the first's.
func (s ConfigMaps) Blueprints(ctx context.Context, r client.Reader) ([]*ir.Blueprint, error) {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels(s.Selector)); err != nil {
		return nil, fmt.Errorf("listing Blueprint ConfigMaps: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	var bps []*ir.Blueprint
	var errs []error
	for i := range list.Items {
		bp, err := s.Load(&list.Items[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bps = append(bps, bp)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return bps, nil
}
