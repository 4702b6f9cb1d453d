package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/compiler"
)

// TestHeadlessBlueprint checks that -headless turns the Website pack's
// Service headless in a copy that still compiles, and in the limit.
func TestHeadlessBlueprint(t *testing.T) {
	dir := t.TempDir()
	path, err := headlessBlueprint("../packs/website/blueprint.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compiler.CompileFile(path, compiler.Options{}); err != nil {
		t.Fatalf("the headless copy does not compile: %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OnReconcile []struct {
			ID       string         `json:"id"`
			Template map[string]any `json:"template"`
		} `json:"onReconcile"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.OnReconcile {
		ip, _, _ := unstructured.NestedString(r.Template, "spec", "clusterIP")
		if want := map[string]string{"service": "None"}[r.ID]; ip != want {
			t.Errorf("resource %s: clusterIP %q, want %q", r.ID, ip, want)
		}
	}

	l := &limit{headless: true}
	if ip, _, _ := unstructured.NestedString(l.service(limitSite{name: "a"}).Object, "spec", "clusterIP"); ip != "None" {
		t.Errorf("the headless limit's Service has clusterIP %q", ip)
	}
}

func TestHeadlessBlueprintRefuses(t *testing.T) {
	dir := t.TempDir()
	noService := filepath.Join(dir, "blueprint.yaml")
	if err := os.WriteFile(noService, []byte("kind: Blueprint\ncrd:\n  file: crd.yaml\nonReconcile:\n- id: cm\n  template: {apiVersion: v1, kind: ConfigMap}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := headlessBlueprint(noService, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no Service template") {
		t.Errorf("a Blueprint without a Service: got %v", err)
	}
	outside := filepath.Join(dir, "outside.yaml")
	if err := os.WriteFile(outside, []byte("kind: Blueprint\ncrd:\n  file: ../crd.yaml\nonReconcile:\n- id: s\n  template: {apiVersion: v1, kind: Service}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = headlessBlueprint(outside, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "inside the Blueprint's directory") {
		t.Errorf("a CRD outside the Blueprint's directory: got %v", err)
	}
}
