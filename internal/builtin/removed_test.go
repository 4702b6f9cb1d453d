package builtin_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/builtin"
)

func TestRemoved(t *testing.T) {
	for _, c := range []struct {
		gvk     schema.GroupVersionKind
		release string // "" when served
	}{
		{schema.GroupVersionKind{Group: "apps", Version: "v1beta1", Kind: "Deployment"}, "1.16"},
		{schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "Ingress"}, "1.22"},
		{schema.GroupVersionKind{Group: "batch", Version: "v1beta1", Kind: "CronJob"}, "1.25"},
		{schema.GroupVersionKind{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3", Kind: "FlowSchema"}, "1.32"},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1alpha1", Kind: "Role"}, "1.22"},
		// Removed in this very release: not served by its API server.
		{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1beta1", Kind: "ServiceCIDR"}, "1.37"},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, ""},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, ""},
		// A beta still served, though it will not be for ever.
		{schema.GroupVersionKind{Group: "resource.k8s.io", Version: "v1beta2", Kind: "DeviceClass"}, ""},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}, ""},
	} {
		release, ok := builtin.Removed(c.gvk)
		if release != c.release || ok != (c.release != "") {
			t.Errorf("Removed(%v) = %q, %v; want %q", c.gvk, release, ok, c.release)
		}
	}
}

// TestKubernetesMinor holds the release the removals are judged at to the
// k8s.io/api of go.mod: v0.N is Kubernetes 1.N.
func TestKubernetesMinor(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/api v0\.(\d+)\.`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/api")
	}
	if minor, _ := strconv.Atoi(string(m[1])); minor != builtin.KubernetesMinor {
		t.Errorf("go.mod requires k8s.io/api v0.%d, but KubernetesMinor is %d", minor, builtin.KubernetesMinor)
	}
}
