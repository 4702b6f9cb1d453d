package compiler_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
)

// composite uses another Blueprint and a foreign CRD, and reads both.
const composite = website + `uses:
  - blueprint: uses/database.yaml
  - crd: manifests/certificate.yaml
onReconcile:
  - id: database
    template:
      apiVersion: example.inrun.dev/v1
      kind: Database
      metadata:
        name: ${self.metadata.name}
      spec:
        size: large
  - id: certificate
    template:
      apiVersion: cert-manager.io/v1
      kind: Certificate
      metadata:
        name: ${self.metadata.name}
      spec:
        secretName: ${self.metadata.name}-tls
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${self.metadata.name}
      data:
        host: ${database.status.host}
        generation: ${string(database.status.observedGeneration)}
        expires: ${certificate.status.notAfter}
`

func TestUses(t *testing.T) {
	bp := compile(t, composite)
	if len(bp.Uses) != 2 {
		t.Fatalf("Uses: %d, want 2", len(bp.Uses))
	}
	db, cert := bp.Uses[0], bp.Uses[1]
	dbGVK := schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1", Kind: "Database"}
	if db.GroupVersionKind != dbGVK || db.Plural != "databases" || !db.Namespaced || db.Blueprint != "database" ||
		db.File != "uses/database.yaml" || db.Source != "testdata/uses/database.yaml" || db.CRD == nil || db.Schema == nil || !db.ReadyCondition {
		t.Errorf("the used Blueprint: %+v", db)
	}
	if db.Pos != (ir.Pos{File: bpFile, Line: 8, Col: 5}) {
		t.Errorf("the used Blueprint's Pos %v, want its entry", db.Pos)
	}
	if db.Compiled == nil || db.Compiled.Name != "database" || db.Compiled.File != db.Source || db.Compiled.Child("service") == nil {
		t.Errorf("Compiled: %+v, want the database Blueprint compiled", db.Compiled)
	}
	if cert.Kind != "Certificate" || cert.Group != "cert-manager.io" || cert.Version != "v1" || cert.Blueprint != "" ||
		cert.Source != "testdata/manifests/certificate.yaml" || cert.Compiled != nil || !cert.ReadyCondition {
		t.Errorf("the used CRD: %+v", cert)
	}
	if got := bp.Use(dbGVK); got != db {
		t.Errorf("Use(Database) = %v", got)
	}
	ch := bp.Child("database")
	if ch.BuiltIn || ch.Plural != "databases" || !ch.Namespaced || ch.GroupVersionKind != dbGVK {
		t.Errorf("child database: %+v", ch)
	}
	data := bp.Child("config").Template.Lookup("data")
	for key, want := range map[string]string{"host": "string", "generation": "string", "expires": "string"} {
		if x := data.Lookup(key).Expr; x.Type != want {
			t.Errorf("data.%s: ${%s} is %s, want %s", key, x.Source, x.Type, want)
		}
	}
	if x := data.Lookup("generation").Expr; !cmp.Equal(x.Refs, []string{"database"}) {
		t.Errorf("Refs %v", x.Refs)
	}
}

// TestUsesReadiness: a CRD whose status has no conditions makes children
// of its kind ready once they exist.
func TestUsesReadiness(t *testing.T) {
	bp := compile(t, `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: database
crd:
  file: uses/database-crd.yaml
uses:
  - crd: manifests/crd.yaml
`)
	if u := bp.Uses[0]; u.Kind != "Website" || u.ReadyCondition {
		t.Errorf("a CRD whose status has no conditions: %+v, want ReadyCondition false", u)
	}
}

// TestUsedOnce: a Blueprint used twice, directly and through another, is
// compiled once.
func TestUsedOnce(t *testing.T) {
	src := load.Bytes(bpFile, []byte(website+`uses:
  - blueprint: uses/database.yaml
  - blueprint: uses/app.yaml
`))
	src.Files = overlay{Dir: "testdata", files: map[string]string{"testdata/uses/app.yaml": `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: app
crd:
  file: app-crd.yaml
uses:
  - blueprint: ./database.yaml
onReconcile:
  - id: database
    template:
      apiVersion: example.inrun.dev/v1
      kind: Database
      metadata:
        name: ${self.metadata.name}
`, "testdata/uses/app-crd.yaml": strings.NewReplacer("Database", "App", "database", "app").Replace(readFile(t, "testdata/uses/database-crd.yaml"))}}
	bp, err := compiler.Compile(src, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	direct, viaApp := bp.Uses[0].Compiled, bp.Uses[1].Compiled.Uses[0].Compiled
	if direct == nil || direct != viaApp {
		t.Errorf("the database Blueprint was compiled twice: %p and %p", direct, viaApp)
	}
	all := ir.WithUsed([]*ir.Blueprint{bp})
	var names []string
	for _, b := range all {
		names = append(names, b.Name)
	}
	if !cmp.Equal(names, []string{"database", "app", "website"}) {
		t.Errorf("WithUsed: %v, want [database app website]", names)
	}
}

// TestUsedBlueprintErrors: a used Blueprint that does not compile fails
// the one that uses it, with its own diagnostics at their own positions.
func TestUsedBlueprintErrors(t *testing.T) {
	src := load.Bytes(bpFile, []byte(website+`uses:
  - blueprint: uses/broken.yaml
onReconcile:
  - id: database
    template:
      apiVersion: example.inrun.dev/v1
      kind: Database
      metadata:
        name: ${self.metadata.name}
`))
	src.Files = overlay{Dir: "testdata", files: map[string]string{"testdata/uses/broken.yaml": `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata:
  name: broken
crd:
  file: database-crd.yaml
emit:
  status:
    host: ${self.spec.sise}
`}}
	bp, err := compiler.Compile(src, compiler.Options{})
	if bp != nil || err == nil {
		t.Fatalf("compiled: %v", err)
	}
	got := diag.All(err)
	if len(got) != 1 || got[0].Pos.String() != "testdata/uses/broken.yaml:9:23" || got[0].Code != diag.ExprType {
		t.Errorf("got %v, want one %s at testdata/uses/broken.yaml:9:23 (and nothing about the child of its kind)", err, diag.ExprType)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUsesFromConfigMaps: in a ConfigMap, a used Blueprint is read from its
// own ConfigMap, named after its directory, which must be labelled as a
// Blueprint's (so that the runtime runs it).
func TestUsesFromConfigMaps(t *testing.T) {
	cm := func(name string, labelled bool, data map[string]string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Data: data}
		if labelled {
			c.Labels = load.ConfigMapSelector()
		}
		return c
	}
	database := cm("database", true, map[string]string{
		load.KeyBlueprint:   readFile(t, "testdata/uses/database.yaml"),
		"database-crd.yaml": readFile(t, "testdata/uses/database-crd.yaml"),
	})
	app := cm("app", true, map[string]string{
		load.KeyBlueprint: strings.Replace(composite, "  - crd: manifests/certificate.yaml\n", "", 1) + "",
		"crd.yaml":        readFile(t, "testdata/manifests/crd.yaml"),
	})
	// The certificate child needs its CRD: drop it from this variant.
	app.Data[load.KeyBlueprint] = app.Data[load.KeyBlueprint][:strings.Index(app.Data[load.KeyBlueprint], "  - id: certificate")] +
		"  - id: config\n    template:\n      apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: ${self.metadata.name}\n      data:\n        host: ${database.status.host}\n"
	for _, tt := range []struct {
		name   string
		others map[string]*corev1.ConfigMap
		want   string // a part of the error; "" compiles
	}{
		{"its own ConfigMap", map[string]*corev1.ConfigMap{"database": database}, ""},
		{"none", nil, `configmap/shop/app/blueprint.yaml:8:16: E0019 uses[0].blueprint "uses/database.yaml" cannot be read: the used Blueprint is kept in the ConfigMap shop/database, which does not exist: create it with the Blueprint and its CRD, labelled inrun.dev/role=blueprint`},
		{"not labelled", map[string]*corev1.ConfigMap{"database": cm("database", false, database.Data)}, "the ConfigMap shop/database keeps the used Blueprint but is not labelled inrun.dev/role=blueprint, so the runtime does not run it: label it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			get := func(namespace, name string) (*corev1.ConfigMap, error) {
				if namespace != "shop" {
					t.Errorf("looked in namespace %q, want the using ConfigMap's", namespace)
				}
				return tt.others[name], nil
			}
			bp, err := compiler.CompileConfigMaps(get)(app)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want == "":
				if u := bp.Uses[0]; u.Source != "configmap/shop/database/blueprint.yaml" || u.Compiled == nil || u.Kind != "Database" {
					t.Errorf("the used Blueprint: %+v", u)
				}
			case err == nil || !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
