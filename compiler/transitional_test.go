package compiler_test

import (
	"slices"
	"strings"
	"testing"
)

// TestTransitionalCRD checks the CRD generated while fields move: the old
// paths stay, marked deprecated (a description written by the author is
// kept after the mark, one that already says so is left alone), and the new
// path is no longer required, so that an old writer's object is admitted.
func TestTransitionalCRD(t *testing.T) {
	bp := compile(t, `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: app
schema:
  apiVersion: v1
  group: example.inrun.dev
  kind: App
  spec:
    repository: string | required=true
    replicas: integer
    owner: string | required=true
    repo: string | description="The repository."
    size: integer | description="Deprecated, use replicas."
    source:
      url: string
serve:
  fields:
    repository:
      path: spec.repository
      migrate:
        from: [spec.repo, spec.source.url]
    replicas:
      path: spec.replicas
      migrate:
        from: spec.size
    owner:
      path: spec.owner
  tokens:
    - {scope: deploy, verbs: [create]}
`)
	spec := bp.Resource.CRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if got := spec.Properties["repo"].Description; got != "Deprecated: moved to spec.repository; inrun clean removes it once inrun migrate has moved every value. The repository." {
		t.Errorf("spec.repo's description = %q", got)
	}
	if got := spec.Properties["source"].Properties["url"].Description; !strings.HasPrefix(got, "Deprecated: moved to spec.repository;") {
		t.Errorf("spec.source.url's description = %q", got)
	}
	if got := spec.Properties["size"].Description; got != "Deprecated, use replicas." {
		t.Errorf("spec.size's description = %q, want the author's", got)
	}
	if got := spec.Properties["replicas"].Description; got != "" {
		t.Errorf("spec.replicas (the new path) got a description: %q", got)
	}
	if slices.Contains(spec.Required, "repository") || !slices.Contains(spec.Required, "owner") {
		t.Errorf("spec.required = %v, want owner without repository", spec.Required)
	}
	if bp.Resource.Schema.Properties["spec"].Properties["repo"].Description == "" {
		t.Error("the Blueprint's schema (what expressions are typed against) is not the transitional one")
	}
}
