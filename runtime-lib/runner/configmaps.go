package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
)

// Blueprints stored in the cluster are ConfigMaps: Inrun installs no CRDs of
// its own.
const (
	// LabelRole marks a ConfigMap as holding a Blueprint: inrun.dev/role=blueprint.
	LabelRole = "inrun.dev/role"
	// RoleBlueprint is LabelRole's value.
	RoleBlueprint = "blueprint"
	// KeyBlueprint is the data key holding the Blueprint. Other keys are
	// files the Blueprint names, by base name: crd.file: manifests/crd.yaml
	// reads the key crd.yaml.
	KeyBlueprint = "blueprint.yaml"
)

// LoadConfigMaps compiles every Blueprint stored in a ConfigMap labelled
// inrun.dev/role=blueprint in namespace ("" for all namespaces). Every
// Blueprint's errors are reported, not only the first's.
func LoadConfigMaps(ctx context.Context, r client.Reader, namespace string) ([]*ir.Blueprint, error) {
	list := &corev1.ConfigMapList{}
	if err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{LabelRole: RoleBlueprint}); err != nil {
		return nil, fmt.Errorf("listing Blueprint ConfigMaps: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	var bps []*ir.Blueprint
	var errs []error
	for i := range list.Items {
		cm := &list.Items[i]
		dir := path.Join("configmap", cm.Namespace, cm.Name)
		src, ok := cm.Data[KeyBlueprint]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no %q key; put the Blueprint there", dir, KeyBlueprint))
			continue
		}
		read := func(name string) ([]byte, error) {
			// A ConfigMap is flat: crd.file: manifests/crd.yaml is the key crd.yaml.
			if v, ok := cm.Data[path.Base(name)]; ok {
				return []byte(v), nil
			}
			return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
		}
		bp, err := compiler.Compile(path.Join(dir, KeyBlueprint), []byte(src), compiler.Options{ReadFile: read})
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
