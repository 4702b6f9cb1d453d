package codegen

import (
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/rbac"
)

// The files Generate copies from the Blueprint's directory, and config/.

// copyTests copies the Blueprint's own tests and the manifests they read,
// for the generated tests to run.
func (p *project) copyTests() {
	for _, rel := range []string{"test/simulate.yaml", "test/e2e.yaml"} {
		if data, err := fs.ReadFile(p.files, rel); err == nil {
			p.Files["internal/blueprint/"+rel] = data
		}
	}
	entries, err := fs.ReadDir(p.files, "manifests")
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			continue
		}
		if data, err := fs.ReadFile(p.files, "manifests/"+e.Name()); err == nil {
			p.Files["internal/blueprint/manifests/"+e.Name()] = data
		}
	}
}

// config renders config/: the CRD, the RBAC derived from the Blueprint
// and the sample custom resource.
func (p *project) config() error {
	bp := p.Blueprint
	if crd := bp.Resource.CRDFile; crd != "" {
		data, err := fs.ReadFile(p.files, path.Clean(filepath.ToSlash(crd)))
		if err != nil {
			return fmt.Errorf("copying the CRD: %w", err)
		}
		name := fmt.Sprintf("config/crd/bases/%s_%s.yaml", bp.Resource.Group, bp.Resource.Plural)
		p.Files[name] = data
	}
	role := rbac.ClusterRole(bp)
	role.Name = "manager-role"
	out, err := yaml.Marshal(role)
	if err != nil {
		return err
	}
	p.Files["config/rbac/role.yaml"] = append([]byte("# The least-privilege rules the Blueprint needs, as inrun rbac prints them;\n# the +kubebuilder:rbac markers in internal/controller say the same.\n"), out...)
	if data, ok := p.Files["internal/blueprint/manifests/cr.yaml"]; ok {
		p.Files[p.samplePath()] = data
	}
	return nil
}

func (p *project) samplePath() string {
	r := p.Blueprint.Resource
	group, _, _ := strings.Cut(r.Group, ".")
	return fmt.Sprintf("config/samples/%s_%s_%s.yaml", group, r.Version, p.lowerKind())
}

// hasRemote reports whether bp calls a remote reconciler.
func hasRemote(bp *ir.Blueprint) bool {
	return bp.Reconcile != nil && bp.Reconcile.Remote != nil
}
