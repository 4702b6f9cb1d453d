package codegen_test

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestConfigDefaultBuilds: kustomize build config/default of a generated
// project (kustomize's library, as kubectl apply -k runs it) gives the
// manager's Deployment serving metrics over HTTPS to authorized tokens, the
// metrics Service, and the ClusterRoles the manager and a scraper need,
// bound to the manager's ServiceAccount in the project's namespace.
func TestConfigDefaultBuilds(t *testing.T) {
	p := generate(t, "../packs/website/blueprint.yaml")
	fs := filesys.MakeFsInMemory()
	for name, b := range p.Files {
		if strings.HasPrefix(name, "config/") {
			if err := fs.WriteFile("/"+name, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/config/default")
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	got := map[string]bool{}
	for _, r := range res.Resources() {
		got[r.GetKind()+"/"+r.GetName()] = true
		switch r.GetKind() {
		case "Deployment":
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			containers := m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
			var args []string
			for _, a := range containers[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
			for _, want := range []string{"--metrics-bind-address=:8443", "--metrics-secure", "--leader-elect", "--health-probe-bind-address=:8081"} {
				if !slices.Contains(args, want) {
					t.Errorf("the manager runs %v, without %s", args, want)
				}
			}
		case "ClusterRoleBinding":
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			subject := m["subjects"].([]any)[0].(map[string]any)
			if subject["name"] != "website-operator-controller-manager" || subject["namespace"] != "website-operator-system" {
				t.Errorf("%s binds %v, want the manager's ServiceAccount", r.GetName(), subject)
			}
		}
	}
	for _, want := range []string{
		"Deployment/website-operator-controller-manager",
		"Service/website-operator-controller-manager-metrics-service",
		"ClusterRole/website-operator-metrics-auth-role",
		"ClusterRoleBinding/website-operator-metrics-auth-rolebinding",
		"ClusterRole/website-operator-metrics-reader",
		"ClusterRole/website-operator-manager-role",
	} {
		if !got[want] {
			t.Errorf("kustomize build config/default has no %s; it has %v", want, got)
		}
	}
}
