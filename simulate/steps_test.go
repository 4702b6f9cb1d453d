package simulate_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/simulate"
)

const websiteSteps = `cases:
  - name: scale, then delete
    cr: ../manifests/cr.yaml
    expect:
      children: [{id: deployment, match: {spec: {replicas: 2}}}]
    steps:
      - patch: {spec: {replicas: 5}}
        expect:
          children: [{id: deployment, match: {spec: {replicas: 5}}}]
          status: {observedGeneration: 2}
      - delete: true
        passes: 1
        expect:
          gone: true
          absent: [deployment, service]
  - name: a failing step ends the case
    cr: ../manifests/cr.yaml
    steps:
      - patch: {spec: {replicas: 5}}
        expect:
          children: [{id: deployment, match: {spec: {replicas: 6}}}]
      - delete: true
        expect: {gone: true}
`

// TestSteps runs steps on the website pack, whose Blueprint has no remote
// reconciler: a patch is followed, with a new generation, and a deleted CR
// is gone with what it owned, as the garbage collector would have it.
func TestSteps(t *testing.T) {
	f, sim := packCases(t, packs.Default, "", "steps.yaml", websiteSteps)
	if res := sim.RunCase(context.Background(), f, &f.Cases[0]); !res.Passed() {
		t.Errorf("case %q: %v\n%s", res.Case, res.Err, strings.Join(res.Failures, "\n"))
	}
	res := sim.RunCase(context.Background(), f, &f.Cases[1])
	got := strings.Join(res.Failures, "\n")
	if res.Err != nil || len(res.Failures) != 2 || !strings.HasPrefix(got, `step 1 (patch): child "deployment" differs`) || res.Failures[1] != "step 2 did not run" {
		t.Errorf("case %q: error %v, failures:\n%s\nwant step 1's difference, then that step 2 did not run", res.Case, res.Err, got)
	}
}

const collectionTags = `cases:
  - name: tags that pass
    cr: ../manifests/cr.yaml
    expect:
      status:
        roster: !absent
        conditions: !contains
          - {type: Degraded, status: "False"}
          - {type: Progressing}
  - name: tags that fail
    cr: ../manifests/cr.yaml
    expect:
      status:
        workers: !absent
        conditions: !contains
          - {type: Ready, status: "Maybe"}
`

// TestMatchTags: !absent asserts a status key is not there, and !contains
// matches items of a list by their fields, in any order. The collections
// example's roster, which waits for every worker to be ready, is not
// there after the first passes.
func TestMatchTags(t *testing.T) {
	f, sim := packCases(t, "declarative", "05-collections", "tags.yaml", collectionTags)
	if res := sim.RunCase(context.Background(), f, &f.Cases[0]); !res.Passed() {
		t.Errorf("case %q: %v\n%s", res.Case, res.Err, strings.Join(res.Failures, "\n"))
	}
	res := sim.RunCase(context.Background(), f, &f.Cases[1])
	got := strings.Join(res.Failures, "\n")
	if res.Passed() || !regexp.MustCompile(`"workers": +string\("\(absent\)"\)`).MatchString(got) || !strings.Contains(got, `"Maybe"`) {
		t.Errorf("case %q: failures:\n%s\nwant status.workers present and no Ready=Maybe condition reported", res.Case, got)
	}
}

const websiteRefusals = `cases:
  - name: a negative replica count is refused
    object: {apiVersion: example.inrun.dev/v1, kind: Website, metadata: {name: neg}, spec: {replicas: -1}}
    expect:
      refused: [spec.replicas, greater than or equal to 0]
  - name: a patch is refused, and the CR stays as it was
    cr: ../manifests/cr.yaml
    steps:
      - patch: {spec: {replicas: -3}}
        expect: {refused: [spec.replicas]}
      - patch: {spec: {replicas: 4}}
        expect:
          children: [{id: deployment, match: {spec: {replicas: 4}}}]
  - name: a valid CR expected refused
    cr: ../manifests/cr.yaml
    expect: {refused: [spec.replicas]}
  - name: refused, but not as said
    object: {apiVersion: example.inrun.dev/v1, kind: Website, metadata: {name: neg}, spec: {replicas: -1}}
    expect: {refused: [spec.image]}
`

// TestRefused runs cases whose CR or patch the CRD's schema refuses:
// expect.refused passes them when the message says what it lists, and
// fails a case whose CR is taken, or refused for another reason.
func TestRefused(t *testing.T) {
	f, sim := packCases(t, packs.Default, "", "refused.yaml", websiteRefusals)
	for i, want := range []string{"", "", "the CR was not refused: the API server took it, and expect.refused says it refuses it", `the CR was refused, but the message does not say "spec.image"`} {
		res := sim.RunCase(context.Background(), f, &f.Cases[i])
		got := strings.Join(res.Failures, "\n")
		if res.Err != nil || (want == "") != res.Passed() || !strings.Contains(got, want) {
			t.Errorf("case %q: error %v, failures:\n%s\nwant %q", res.Case, res.Err, got, want)
		}
	}
}

// packCases copies a pack, writes cases into the test directory of its
// Blueprint in sub ("" for the pack's own), and returns them read, with a
// Simulator of that Blueprint.
func packCases(t *testing.T, pack, sub, name, cases string) (*simulate.File, *simulate.Simulator) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pack")
	if err := packs.Copy(pack, dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(dir, sub)
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "test", name)
	if err := os.WriteFile(path, []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := simulate.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	return f, sim
}

const compositionGenerations = `cases:
  - name: generations as on a cluster
    cr: ../manifests/cr.yaml
    expect:
      children:
        - id: database
          match: {metadata: {generation: 1}}
        - id: database.server
          match: {metadata: {generation: 1}}
        - id: database.service
          match:
            metadata:
              generation: !absent
        - id: database.credentials
          match:
            metadata:
              generation: !absent
`

// TestCompositionGenerations: with Blueprints that use others, objects
// get a generation where the API server gives one (a Deployment, a custom
// resource), and none where it does not (a Service, a Secret).
func TestCompositionGenerations(t *testing.T) {
	f, sim := packCases(t, "declarative", "07-composition", "generations.yaml", compositionGenerations)
	if res := sim.RunCase(context.Background(), f, &f.Cases[0]); !res.Passed() {
		t.Errorf("case %q: %v\n%s", res.Case, res.Err, strings.Join(res.Failures, "\n"))
	}
}

// TestDeleteUsedCRWithFinalizer deletes a custom resource whose child is a
// used Blueprint's custom resource that holds a finalizer (its own child
// is in another namespace): garbage collection marks it deleted once, and
// the passes release it (the simulator spun for ever deleting it again).
func TestDeleteUsedCRWithFinalizer(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("child/blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: child}
schema:
  apiVersion: v1alpha1
  group: example.inrun.dev
  kind: Child
  spec: {id: string}
onReconcile:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${self.spec.id}-cm", namespace: other}
      data: {id: "${self.spec.id}"}
`)
	parent := write("parent/blueprint.yaml", `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: parent}
schema:
  apiVersion: v1alpha1
  group: example.inrun.dev
  kind: Parent
  spec: {id: string}
uses:
  - blueprint: ../child/blueprint.yaml
onReconcile:
  - id: child
    template:
      apiVersion: example.inrun.dev/v1alpha1
      kind: Child
      metadata: {name: "${self.spec.id}"}
      spec: {id: "${self.spec.id}"}
`)
	bp, err := compiler.CompileFile(parent, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan map[string]*simulate.Result, 1)
	go func() {
		done <- runCases(t, bp, `cases:
  - name: create then delete
    object:
      apiVersion: example.inrun.dev/v1alpha1
      kind: Parent
      metadata: {name: p, namespace: default}
      spec: {id: x}
    objects:
      - {apiVersion: v1, kind: Namespace, metadata: {name: other}}
    passes: 3
    expect:
      children:
        - id: child.cm
          match: {metadata: {namespace: other}, data: {id: x}}
    steps:
      - delete: true
        passes: 3
        expect:
          gone: true
`)
	}()
	select {
	case res := <-done:
		if r := res["create then delete"]; r == nil || !r.Passed() {
			t.Errorf("%s", describe(r))
		}
	case <-time.After(time.Minute):
		t.Fatal("the case did not end within a minute")
	}
}
