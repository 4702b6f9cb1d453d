package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// headlessBlueprint writes a copy of the Blueprint at bpPath into dir whose
// Service templates set clusterIP: None, next to a copy of its CRD file,
// and returns the copy's path.
//
// kube-apiserver's ClusterIP allocator lists every allocated address to
// count those of its range, so creating N ClusterIP Services costs N²; at
// N=10,000 that, not any operator, sets the pace (docs/performance.md §7).
// Headless Services take no address.
func headlessBlueprint(bpPath, dir string) (string, error) {
	raw, err := os.ReadFile(bpPath)
	if err != nil {
		return "", err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", bpPath, err)
	}
	resources, _ := doc["onReconcile"].([]any)
	services := 0
	for _, r := range resources {
		tmpl, _ := r.(map[string]any)["template"].(map[string]any)
		if tmpl["apiVersion"] != "v1" || tmpl["kind"] != "Service" {
			continue
		}
		spec, ok := tmpl["spec"].(map[string]any)
		if !ok {
			spec = map[string]any{}
			tmpl["spec"] = spec
		}
		spec["clusterIP"] = "None"
		services++
	}
	if services == 0 {
		return "", fmt.Errorf("-headless: %s has no Service template in onReconcile; drop -headless or pass a Blueprint with one", bpPath)
	}
	// The CRD file is read relative to the Blueprint; copy it to the same
	// relative place.
	crd, _ := doc["crd"].(map[string]any)
	if file, ok := crd["file"].(string); ok {
		if !filepath.IsLocal(file) {
			return "", errors.New("-headless: the Blueprint's crd.file must be a path inside the Blueprint's directory")
		}
		b, err := os.ReadFile(filepath.Join(filepath.Dir(bpPath), file))
		if err != nil {
			return "", err
		}
		to := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return "", err
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.Base(bpPath))
	return path, os.WriteFile(path, out, 0o644)
}
