package builder_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/builder"
	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// TestBuildTypedOperator is inrun build --operator --with (Operator) on a typed
// Blueprint (the test module's own, beside its hooks: a child completed by the Go transform size, and
// the Go reconciler webapp): the operator links the module, keeping its
// local replace directive and leaving its go.mod as it was, and the binary,
// run against a local control plane, gives the custom resource the
// transformed child, the reconciler's ConfigMap and its status.
func TestBuildTypedOperator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an operator and starts a local control plane")
	}
	clustertest.RequireAssets(t, localcluster.Options{})
	const path = "testdata/webapp/blueprint.yaml"
	bp, err := compiler.CompileFile(path, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := builder.ParseWith(webapp)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile(filepath.Join(w.Dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, bin := filepath.Join(dir, "webapp-operator"), filepath.Join(dir, "bin", "webapp-operator")
	var progress bytes.Buffer
	_, err = builder.Operator(context.Background(), bp, os.DirFS(filepath.Dir(path)), []builder.With{w}, codegen.BuildOptions{
		Out: out, Binary: bin, Progress: &progress, SkipTests: true,
	})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(filepath.Join(w.Dir, "go.mod")); !bytes.Equal(now, theirs) {
		t.Errorf("the module's go.mod was written")
	}
	data, err := os.ReadFile(filepath.Join(out, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	replaced := map[string]string{}
	for _, r := range f.Replace {
		replaced[r.Old.Path] = r.New.Path
	}
	greeting, _ := filepath.Abs("testdata/greeting")
	if got := replaced["example.com/greeting"]; got == "" || filepath.Join(out, got) != greeting {
		t.Errorf("the module's replace of example.com/greeting = %q, want %s relative to %s", got, greeting, out)
	}
	if replaced["github.com/inrun/inrun"] != "./third_party/inrun" {
		t.Errorf("replace github.com/inrun/inrun = %q, want ./third_party/inrun", replaced["github.com/inrun/inrun"])
	}

	cluster := clustertest.Start(t, localcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := runner.InstallCRDs(ctx, cluster.RESTConfig(), []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, cluster)
	op := exec.Command(bin, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	op.Env = append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath())
	var logs bytes.Buffer
	op.Stdout, op.Stderr = &logs, &logs
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = op.Process.Kill()
		_ = op.Wait()
		if t.Failed() {
			t.Logf("the operator's log:\n%s", logs.String())
		}
	}()

	c, err := client.New(cluster.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "hello-webapp", "namespace": ns},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(3), "expose": false},
	}}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	get := func(kind, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		if kind == "WebApp" {
			u.SetAPIVersion("example.inrun.dev/v1")
		}
		u.SetKind(kind)
		return u, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	}
	// What the operator leaves once it has converged; polled until the
	// deadline, as a reconcile takes what it takes.
	var why string
	for {
		why = ""
		settings, err := get("ConfigMap", "hello-webapp-settings")
		switch {
		case err != nil:
			why = "the transformed child: " + err.Error()
		case settings.GetAnnotations()["example.com/size"] != "6":
			why = "the transformed child has no example.com/size: 6 from the Go transform: " + fmt.Sprint(settings.Object)
		}
		if why == "" {
			config, err := get("ConfigMap", "hello-webapp")
			if err != nil {
				why = "the Go reconciler's ConfigMap: " + err.Error()
			} else if img, _, _ := unstructured.NestedString(config.Object, "data", "image"); img != "nginx:1.27" {
				why = "the Go reconciler's ConfigMap has data.image " + img
			}
		}
		if why == "" {
			got, err := get("WebApp", "hello-webapp")
			if err != nil {
				why = err.Error()
			} else if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Greeted" {
				why = "status.phase is " + phase + ", not the Go reconciler's Greeted"
			}
		}
		if why == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the typed operator did not converge: %s", why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
