package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/migrate"
)

// TestMigrateKindApplyRefusedOnce: a refused kind move's apply writes the
// move's header once, then what the plan found.
func TestMigrateKindApplyRefusedOnce(t *testing.T) {
	bp, err := compiler.CompileFile("../migrate/testdata/kind/site.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := migrate.KindFromBlueprint(bp)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "migrate.inrun.dev/v1", "kind": "Site",
			"metadata": map[string]any{"name": "a", "namespace": "apps", "uid": "uid-a", "labels": map[string]any{"tier": "web"}},
			"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
		}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "platform.inrun.dev/v1", "kind": "WebApp",
			"metadata": map[string]any{"name": "a", "namespace": "apps"},
		}},
	}
	for _, crd := range []any{bp.Resource.CRD, bp.Uses[0].CRD} {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		objs = append(objs, u)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	var out bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	cmd.SetContext(context.Background())
	err = kindApply(cmd, k, migrate.Options{Client: c})
	if err == nil || !strings.Contains(err.Error(), "objects are in the way") {
		t.Fatalf("apply: %v", err)
	}
	if n := strings.Count(out.String(), "Migration "+k.ID+" moves"); n != 1 || !strings.Contains(out.String(), "apps/a: WebApp apps/a already exists") {
		t.Errorf("the header written %d times, want once; output:\n%s", n, out.String())
	}
}
