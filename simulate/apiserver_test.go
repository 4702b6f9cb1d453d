package simulate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// labelled renders a ConfigMap and a Service whose label comes from the
// spec, and a Service port without targetPort.
const labelled = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: labelled}
schema:
  apiVersion: v1
  group: example.inrun.dev
  kind: Labelled
  spec:
    key: string | default="app"
    value: string | default="web"
onReconcile:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "${self.metadata.name}"
        labels: "${ {self.spec.key: self.spec.value} }"
      data: {k: v}
  - id: service
    template:
      apiVersion: v1
      kind: Service
      metadata: {name: "${self.metadata.name}"}
      spec:
        selector: {app: web}
        ports: [{name: http, port: 8080}]
`

// TestMetadataValidated checks that the store refuses what the API server
// refuses of an object's metadata, with its message: a label an
// expression renders, a name its kind does not allow. It used to store
// them.
func TestMetadataValidated(t *testing.T) {
	bp := compileBlueprint(t, "labelled.yaml", []byte(labelled))
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"valid", `{}`, ""},
		{"a bad label key", `{key: "bad key!"}`, `ConfigMap "w" is invalid: metadata.labels: Invalid value: "bad key!": name part must consist of alphanumeric characters`},
		{"a bad label value", `{value: "x y"}`, `ConfigMap "w" is invalid: metadata.labels: Invalid value: "x y": a valid label must be an empty string or consist of alphanumeric characters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCases(t, bp, fmt.Sprintf(`cases:
  - name: c
    object: {apiVersion: example.inrun.dev/v1, kind: Labelled, metadata: {name: w}, spec: %s}
`, tc.spec))["c"]
			switch {
			case tc.want == "" && !res.Passed():
				t.Errorf("%s\nwant it passed", describe(res))
			case tc.want != "" && !strings.Contains(strings.Join(res.Failures, "\n"), tc.want):
				t.Errorf("%s\nwant a failure with %q", describe(res), tc.want)
			}
		})
	}

	store := simulate.NewStore(bp)
	ctx := context.Background()
	for _, tc := range []struct {
		obj  string
		want string
	}{
		{`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web.site","namespace":"default"},"spec":{"ports":[{"port":80}]}}`, `Service "web.site" is invalid: metadata.name: Invalid value: "web.site": a DNS-1035 label must consist of lower case alphanumeric characters or '-'`},
		{`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a.b"}}`, `Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots`},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a.b","namespace":"default","annotations":{"-x":"y"}}}`, `ConfigMap "a.b" is invalid: metadata.annotations: Invalid value: "-x"`},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a.b","namespace":"default"}}`, ""},
		// The API server's size limit: keys and values of a ConfigMap,
		// the values of a Secret.
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"default"},"data":{"k":"` + strings.Repeat("x", 1<<20) + `"}}`, `ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes`},
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fits","namespace":"default"},"data":{"k":"` + strings.Repeat("x", 1<<20-1) + `"}}`, ""},
		{`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"big","namespace":"default"},"stringData":{"k":"` + strings.Repeat("x", 1<<20+1) + `"}}`, `Secret "big" is invalid: data: Too long: may not be more than 1048576 bytes`},
	} {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(tc.obj)); err != nil {
			t.Fatal(err)
		}
		err := store.Create(ctx, u)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Create %s: %v", tc.obj, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Create %s = %v; want %q", tc.obj, err, tc.want)
		}
		if tc.want != "" && store.Get(ctx, client.ObjectKeyFromObject(u), u.DeepCopy()) == nil {
			t.Errorf("Create %s stored what it refused", tc.obj)
		}
	}
}

// TestServiceTargetPort checks that a Service port without targetPort is
// stored with the API server's default, its port: the typed round trip
// used to leave targetPort: 0.
func TestServiceTargetPort(t *testing.T) {
	bp := compileBlueprint(t, "labelled.yaml", []byte(labelled))
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Labelled",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{},
	}}
	out, err := sim.Run(context.Background(), simulate.Input{CR: cr})
	if err != nil {
		t.Fatal(err)
	}
	svcs := out.Children["service"]
	if len(svcs) != 1 {
		t.Fatalf("service: %d objects", len(svcs))
	}
	ports, _, _ := unstructured.NestedSlice(svcs[0].Object, "spec", "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["targetPort"]) != "8080" {
		t.Errorf("ports = %v; want targetPort 8080, its port", ports)
	}
	if out.IdleWrites != 0 {
		t.Errorf("the further pass wrote %v", out.IdleWritten)
	}
}

// TestChildNamespaceMustExist checks that a child written into a namespace
// that does not exist is refused, as the API server refuses it: a case
// makes the namespaces of its objects and of its CR (as inrun e2e does),
// and a Namespace object it gives. It used to be stored.
func TestChildNamespaceMustExist(t *testing.T) {
	bp, err := compiler.CompileFile("../packs/declarative/04-copy-across-namespaces/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const source = `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: vault}, data: {k: dg==}}`
	res := runCases(t, bp, `cases:
  - name: missing
    object: {apiVersion: example.inrun.dev/v1, kind: SecretCopy, metadata: {name: c, namespace: team-a}, spec: {source: {name: s, namespace: vault}, targetNamespace: team-b}}
    objects: [`+source+`]
    expect: {children: [{id: copy}]}
  - name: given
    object: {apiVersion: example.inrun.dev/v1, kind: SecretCopy, metadata: {name: c, namespace: team-a}, spec: {source: {name: s, namespace: vault}, targetNamespace: team-b}}
    objects: [`+source+`, {apiVersion: v1, kind: Namespace, metadata: {name: team-b}}]
    expect: {children: [{id: copy}]}
  - name: the source's
    object: {apiVersion: example.inrun.dev/v1, kind: SecretCopy, metadata: {name: c, namespace: team-a}, spec: {source: {name: s, namespace: vault}, targetNamespace: vault}}
    objects: [`+source+`]
    expect: {children: [{id: copy}]}
`)
	if r := res["missing"]; r.Passed() || !strings.Contains(strings.Join(r.Failures, "\n"), `namespaces "team-b" not found`) {
		t.Errorf("missing: %s\nwant the API server's refusal", describe(r))
	}
	for _, name := range []string{"given", "the source's"} {
		if r := res[name]; !r.Passed() {
			t.Errorf("%s: %s", name, describe(r))
		}
	}
}

// roleBinding binds the role its spec names: roleRef cannot change once
// the binding exists.
const roleBinding = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: binding}
schema:
  apiVersion: v1
  group: example.inrun.dev
  kind: Access
  spec:
    role: string | default="view"
onReconcile:
  - id: binding
    template:
      apiVersion: rbac.authorization.k8s.io/v1
      kind: RoleBinding
      metadata: {name: "${self.metadata.name}"}
      roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "${self.spec.role}"}
      subjects: [{kind: User, name: jane, apiGroup: rbac.authorization.k8s.io}]
`

// TestImmutableFieldsKept checks that an update changing a field the API
// server keeps as it was (a RoleBinding's roleRef) is refused with its
// message and not stored. It used to pass, and fail on a cluster.
func TestImmutableFieldsKept(t *testing.T) {
	bp := compileBlueprint(t, "binding.yaml", []byte(roleBinding))
	r := runCases(t, bp, `cases:
  - name: c
    object: {apiVersion: example.inrun.dev/v1, kind: Access, metadata: {name: a}, spec: {role: view}}
    expect: {children: [{id: binding, match: {roleRef: {name: view}}}]}
    steps:
      - patch: {spec: {role: edit}}
        expect:
          children: [{id: binding, match: {roleRef: {name: view}}}]
          errors: ['RoleBinding.rbac.authorization.k8s.io "a" is invalid: roleRef: Invalid value', "field is immutable"]
`)["c"]
	if !r.Passed() {
		t.Errorf("%s\nwant the change of roleRef refused, the binding kept", describe(r))
	}
}

// batch runs a Job, by its kind's rule, and a ConfigMap that reads it.
const batch = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: batch}
schema:
  apiVersion: v1
  group: example.inrun.dev
  kind: Batch
  spec:
    image: string | default="busybox"
onReconcile:
  - id: job
    template:
      apiVersion: batch/v1
      kind: Job
      metadata: {name: "${self.metadata.name}"}
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: run, image: "${self.spec.image}"}]
  - id: results
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${job.metadata.name}-results"}
`

// TestFailedJobDegrades checks that a Job that failed for good, which will
// never be ready, makes the CR Degraded with the Job's reason, not
// Progressing for ever "waiting for job to be ready".
func TestFailedJobDegrades(t *testing.T) {
	bp := compileBlueprint(t, "batch.yaml", []byte(batch))
	r := runCases(t, bp, `cases:
  - name: c
    object: {apiVersion: example.inrun.dev/v1, kind: Batch, metadata: {name: b}, spec: {}}
    observe:
      - afterPass: 1
        child: job
        status:
          failed: 4
          conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]
    expect:
      absent: [results]
      status:
        conditions: !contains [{type: Degraded, status: "True", message: 'child "job": Job b failed: BackoffLimitExceeded: Job has reached the specified backoff limit'}]
      errors: [Job b failed]
`)["c"]
	if !r.Passed() {
		t.Errorf("%s\nwant the CR Degraded with the Job's failure", describe(r))
	}
}

// TestCreateOnlyApply: an apply naming resourceVersion
// reconciler.CreateOnly creates the object when none of its name exists
// and is refused with a Conflict, changing nothing, when one does, as the
// API server does (conformance's TestCreateOnlyApplyAsTheAPIServer). The
// runtime writes a child's first version so, instead of reading first.
// Both ways the runtime applies are checked: unstructured, and as a patch
// answered typed.
func TestCreateOnlyApply(t *testing.T) {
	ctx := context.Background()
	store := simulate.NewStore(compileBlueprint(t, "labelled.yaml", []byte(labelled)))
	config := func(value string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "default", "resourceVersion": reconciler.CreateOnly},
			"data":     map[string]any{"k": value},
		}}
		return u
	}
	applies := map[string]func(u *unstructured.Unstructured) error{
		"unstructured": func(u *unstructured.Unstructured) error {
			return store.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("inrun"), client.ForceOwnership)
		},
		"typed": func(u *unstructured.Unstructured) error {
			data, err := u.MarshalJSON()
			if err != nil {
				return err
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace()}}
			return store.Patch(ctx, cm, client.RawPatch(types.ApplyPatchType, data), client.FieldOwner("inrun"), client.ForceOwnership)
		},
	}
	for name, apply := range applies {
		t.Run(name, func(t *testing.T) {
			if err := apply(config("first")); err != nil {
				t.Fatalf("an apply that only creates, of an object that does not exist: %v", err)
			}
			live := &corev1.ConfigMap{}
			if err := store.Get(ctx, client.ObjectKey{Namespace: "default", Name: "c"}, live); err != nil {
				t.Fatal(err)
			}
			if live.ResourceVersion == reconciler.CreateOnly || live.ResourceVersion == "" || live.Data["k"] != "first" {
				t.Fatalf("created %v with resourceVersion %q, want data first and a version of the store's", live.Data, live.ResourceVersion)
			}
			if err := apply(config("second")); !apierrors.IsConflict(err) {
				t.Errorf("an apply that only creates, of an object that exists: %v, want a Conflict", err)
			}
			after := &corev1.ConfigMap{}
			if err := store.Get(ctx, client.ObjectKey{Namespace: "default", Name: "c"}, after); err != nil {
				t.Fatal(err)
			}
			if after.Data["k"] != "first" || after.ResourceVersion != live.ResourceVersion {
				t.Errorf("the refused apply changed the object: %v, version %s (was %s)", after.Data, after.ResourceVersion, live.ResourceVersion)
			}
			if err := store.Delete(ctx, after); err != nil {
				t.Fatal(err)
			}
		})
	}
}
