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

	"github.com/go-logr/logr"
	"golang.org/x/mod/modfile"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/inrun/inrun/builder"
	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/localcluster"
	"github.com/inrun/inrun/localcluster/clustertest"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// The test process's own clients (the local control plane's) log nothing.
func init() { ctrllog.SetLogger(logr.Discard()) }

// operator is a typed Blueprint's operator built with its module linked,
// as inrun build --operator --with builds it.
type operator struct {
	bp  *ir.Blueprint
	out string // the generated project
	bin string
}

// buildOperator builds the operator of the Blueprint in the module dir
// with names, with that module linked, and checks that the module's
// go.mod was only read.
func buildOperator(t *testing.T, with string) *operator {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an operator and starts a local control plane")
	}
	clustertest.RequireAssets(t, localcluster.Options{})
	w, err := builder.ParseWith(with)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(w.Dir, "blueprint.yaml")
	bp, err := compiler.CompileFile(path, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile(filepath.Join(w.Dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	op := &operator{bp: bp, out: filepath.Join(dir, bp.Name+"-operator"), bin: filepath.Join(dir, "bin", bp.Name+"-operator")}
	var progress bytes.Buffer
	_, err = builder.Operator(context.Background(), bp, os.DirFS(w.Dir), []builder.With{w}, codegen.BuildOptions{
		Out: op.out, Binary: op.bin, Progress: &progress, SkipTests: true,
	})
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(filepath.Join(w.Dir, "go.mod")); !bytes.Equal(now, theirs) {
		t.Errorf("the module's go.mod was written")
	}
	return op
}

// run installs the Blueprint's CRD on a local control plane of its own,
// starts the operator's binary against it, and returns a client and a
// namespace for the test's objects.
func (op *operator) run(t *testing.T) (client.Client, string) {
	t.Helper()
	cluster := clustertest.Start(t, localcluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := runner.InstallCRDs(ctx, cluster.RESTConfig(), []*ir.Blueprint{op.bp}); err != nil {
		t.Fatal(err)
	}
	ns := clustertest.NewNamespace(t, cluster)
	cmd := exec.Command(op.bin, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath())
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the operator's log:\n%s", logs.String())
		}
	})
	c, err := client.New(cluster.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, ns
}

// converge polls check until it returns "", or fails t with its last word
// after two minutes: a reconcile takes what it takes.
func converge(t *testing.T, check func(ctx context.Context) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		why := check(ctx)
		if why == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the operator did not converge: %s", why)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func get(ctx context.Context, c client.Client, apiVersion, kind, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
}

// TestBuildTypedOperator is inrun build --operator --with (Operator) on a
// typed Blueprint, the test module's own (a child completed by the Go
// transform size, which reads the custom resource through the types inrun
// generate api wrote, and the Go reconciler webapp): the operator links the
// module, keeping its local replace directive and leaving its go.mod as it
// was, and the binary, run against a local control plane, gives the custom
// resource the transformed child, the reconciler's ConfigMap and its
// status.
func TestBuildTypedOperator(t *testing.T) {
	op := buildOperator(t, webapp)
	data, err := os.ReadFile(filepath.Join(op.out, "go.mod"))
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
	if got := replaced["example.com/greeting"]; got == "" || filepath.Join(op.out, got) != greeting {
		t.Errorf("the module's replace of example.com/greeting = %q, want %s relative to %s", got, greeting, op.out)
	}
	if replaced["github.com/inrun/inrun"] != "./third_party/inrun" {
		t.Errorf("replace github.com/inrun/inrun = %q, want ./third_party/inrun", replaced["github.com/inrun/inrun"])
	}

	c, ns := op.run(t)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "hello-webapp", "namespace": ns},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(3), "expose": false},
	}}
	if err := c.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	converge(t, func(ctx context.Context) string {
		settings, err := get(ctx, c, "v1", "ConfigMap", ns, "hello-webapp-settings")
		if err != nil {
			return "the transformed child: " + err.Error()
		}
		if settings.GetAnnotations()["example.com/size"] != "6" {
			return fmt.Sprintf("the transformed child has no example.com/size: 6 from the Go transform: %v", settings.Object)
		}
		config, err := get(ctx, c, "v1", "ConfigMap", ns, "hello-webapp")
		if err != nil {
			return "the Go reconciler's ConfigMap: " + err.Error()
		}
		if img, _, _ := unstructured.NestedString(config.Object, "data", "image"); img != "nginx:1.27" {
			return "the Go reconciler's ConfigMap has data.image " + img
		}
		got, err := get(ctx, c, "example.inrun.dev/v1", "WebApp", ns, "hello-webapp")
		if err != nil {
			return err.Error()
		}
		if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Greeted" {
			return "status.phase is " + phase + ", not the Go reconciler's Greeted"
		}
		return ""
	})
}

// TestBuildTypedOperatorController: the operator of a Blueprint that runs
// an unchanged controller-runtime reconciler (reconcile.go.controller, in
// testdata/guestbook) links it with its API types, which the module
// registers (components.RegisterScheme) for the same kind as the
// operator's own api/v1: the operator starts, and the controller reads its
// kind typed and writes its ConfigMap and condition.
func TestBuildTypedOperatorController(t *testing.T) {
	op := buildOperator(t, "example.com/guestbook=testdata/guestbook")
	c, ns := op.run(t)
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "webapp.inrun.dev/v1", "kind": "Guestbook",
		"metadata": map[string]any{"name": "visitors", "namespace": ns},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if err := c.Create(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	converge(t, func(ctx context.Context) string {
		cm, err := get(ctx, c, "v1", "ConfigMap", ns, "visitors-config")
		if err != nil {
			return "the controller's ConfigMap: " + err.Error()
		}
		if size, _, _ := unstructured.NestedString(cm.Object, "data", "size"); size != "3" {
			return fmt.Sprintf("the controller's ConfigMap has data.size %q, want 3", size)
		}
		gb, err := get(ctx, c, "webapp.inrun.dev/v1", "Guestbook", ns, "visitors")
		if err != nil {
			return err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(gb.Object, "status", "conditions")
		for _, x := range conds {
			if m, _ := x.(map[string]any); m["type"] == "Available" && m["status"] == "True" {
				return ""
			}
		}
		return fmt.Sprintf("no Available=True condition from the controller: %v", conds)
	})
}
