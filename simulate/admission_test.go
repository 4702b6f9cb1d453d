package simulate_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/simulate"
)

// secretReader reads an existing Secret's data: it is ready, and copied
// into a ConfigMap, only once data has the password.
const secretReader = `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: reader}
schema:
  apiVersion: v1
  group: example.inrun.dev
  kind: Db
  spec:
    secret: string | required=true
onReconcile:
  - id: creds
    externalRef:
      apiVersion: v1
      kind: Secret
      metadata: {name: "${self.spec.secret}"}
    readyWhen: ${has(creds.data.password)}
  - id: copy
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${self.metadata.name}"}
      data:
        user: ${string(creds.data.username)}
        password: ${string(creds.data.password)}
`

// TestObjectsStoredAsTheAPIServerStores checks that an object given before
// the run (a case's objects, render's --object) is stored as the API
// server stores it: a Secret's stringData in data, base64-encoded, winning
// over a data key of the same name. It used to keep stringData, and the
// Blueprint waited forever for data.
func TestObjectsStoredAsTheAPIServerStores(t *testing.T) {
	bp := compileBlueprint(t, "reader.yaml", []byte(secretReader))
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		data, strData  map[string]any
		wantCopy       map[string]any
		wantRefusalHas string
	}{{
		name:     "data",
		data:     map[string]any{"username": "b3JkZXJz", "password": "czNjcmV0"},
		wantCopy: map[string]any{"user": "orders", "password": "s3cret"},
	}, {
		name:     "stringData",
		strData:  map[string]any{"username": "orders", "password": "s3cret"},
		wantCopy: map[string]any{"user": "orders", "password": "s3cret"},
	}, {
		name:     "stringData wins over data",
		data:     map[string]any{"username": "b3JkZXJz", "password": "b2xk"},
		strData:  map[string]any{"password": "s3cret"},
		wantCopy: map[string]any{"user": "orders", "password": "s3cret"},
	}, {
		name:           "a value that is no string",
		strData:        map[string]any{"username": "orders", "password": int64(1234)},
		wantRefusalHas: "cannot unmarshal number into Go struct field Secret.stringData of type string",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds"}}
			if tc.data != nil {
				secret["data"] = tc.data
			}
			if tc.strData != nil {
				secret["stringData"] = tc.strData
			}
			cr := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.inrun.dev/v1", "kind": "Db",
				"metadata": map[string]any{"name": "a"},
				"spec":     map[string]any{"secret": "creds"},
			}}
			out, err := sim.Run(context.Background(), simulate.Input{CR: cr, Objects: []*unstructured.Unstructured{{Object: secret}}})
			if tc.wantRefusalHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantRefusalHas) {
					t.Fatalf("want a refusal with %q, got %v", tc.wantRefusalHas, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cp := out.Children["copy"]
			if len(cp) != 1 {
				t.Fatalf("copy: %d objects (pending: %v)", len(cp), out.Last().Pending)
			}
			if got := cp[0].Object["data"]; !equality.Semantic.DeepEqual(got, tc.wantCopy) {
				t.Errorf("copy's data = %v, want %v", got, tc.wantCopy)
			}
		})
	}
}

// TestSecretStoredAsData checks what the store keeps of a Secret written
// with stringData, as an object given before the run or a Go reconciler
// writes it, typed or not: data, as read back from a cluster.
func TestSecretStoredAsData(t *testing.T) {
	bp := compileBlueprint(t, "reader.yaml", []byte(secretReader))
	store := simulate.NewStore(bp)
	ctx := context.Background()
	typed := &corev1.Secret{}
	typed.Name, typed.Namespace = "typed", "default"
	typed.Data = map[string][]byte{"username": []byte("old"), "password": []byte("old")}
	typed.StringData = map[string]string{"password": "s3cret"}
	if err := store.Create(ctx, typed); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "unstructured", "namespace": "default"},
		"data":       map[string]any{"username": "b2xk", "password": "b2xk"},
		"stringData": map[string]any{"password": "s3cret"},
	}}
	if err := store.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"typed", "unstructured"} {
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("v1")
		got.SetKind("Secret")
		if err := store.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"username": "b2xk", "password": "czNjcmV0"}
		if _, has := got.Object["stringData"]; has || !equality.Semantic.DeepEqual(got.Object["data"], want) {
			t.Errorf("%s: stored %v; want data %v and no stringData", name, got.Object, want)
		}
	}
}
