package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// TestRemovedKindIsPruned removes the Site Blueprint's only Service
// template while the runtime is stopped: the next runtime no longer
// declares, watches or lists Services, yet deletes the one it made.
func TestRemovedKindIsPruned(t *testing.T) {
	f := newFixture(t)
	rt := f.start(f.cfg, []string{f.ns}, nil)
	f.createSite("shrunk", map[string]any{"replicas": int64(1), "expose": true})
	f.eventually(60*time.Second, "the Service made", func() string {
		if _, err := f.get(serviceGVK, f.ns, "shrunk"); err != nil {
			return err.Error()
		}
		return ""
	})
	rt.stop()

	src, err := os.ReadFile("testdata/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	start, end := strings.Index(text, "  - id: service"), strings.Index(text, "  - id: copy")
	dir := t.TempDir()
	crd, err := os.ReadFile("testdata/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "crd.yaml"), crd, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blueprint.yaml"), []byte(text[:start]+text[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.start(f.cfg, []string{f.ns}, func(o *runner.Options) { o.Blueprints = []*ir.Blueprint{bp} })
	f.eventually(30*time.Second, "the Service of the removed template deleted", func() string {
		if _, err := f.get(serviceGVK, f.ns, "shrunk"); !apierrors.IsNotFound(err) {
			return "it is still there"
		}
		return ""
	})
	if _, err := f.get(deploymentGVK, f.ns, "shrunk"); err != nil {
		t.Errorf("the Deployment, still declared: %v", err)
	}
}
