package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kroRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: webapp.kro.run
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      image: string
    status:
      ready: ${deployment.status.readyReplicas}
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.metadata.name}
        spec:
          selector:
            matchLabels:
              app: ${schema.metadata.name}
          template:
            metadata:
              labels:
                app: ${schema.metadata.name}
            spec:
              containers:
                - name: web
                  image: ${schema.spec.image}
`

// TestImportKro is a kro user's first import: the Blueprint is written,
// a second import refuses to overwrite it, --force does.
func TestImportKro(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rgd.yaml"), []byte(kroRGD), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, dir, "import", "kro", "rgd.yaml", "-o", "webapp")
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	bpPath := filepath.Join(dir, "webapp", "blueprint.yaml")
	if want := filepath.Join("webapp", "blueprint.yaml") + ": webapp (kro.run/v1alpha1 WebApp) from ResourceGraphDefinition webapp.kro.run, with 1 child\n" +
		`rgd.yaml:4:9: note: the Blueprint is named webapp: a Blueprint's name is a DNS-1123 label, and "webapp.kro.run" is not one` + "\n" +
		`rgd.yaml:17:15: note: spec.resources[0] has no readyWhen, which kro reads as ready once it exists; Inrun would wait until every replica is available: readyWhen: ${true} keeps kro's meaning (remove it to wait)` + "\n"; out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	bp, err := os.ReadFile(bpPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Imported from rgd.yaml by inrun import kro", "name: webapp\n", "group: kro.run", "image: ${self.spec.image}", "emit:\n  status:\n    ready: ${deployment.status.readyReplicas}"} {
		if !strings.Contains(string(bp), want) {
			t.Errorf("blueprint.yaml lacks %q:\n%s", want, bp)
		}
	}

	// Edited by hand, then imported again: refused, the edit kept.
	edited := append(bp, "# edited\n"...)
	if err := os.WriteFile(bpPath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, dir, "import", "kro", "rgd.yaml", "-o", "webapp")
	if err == nil || !strings.Contains(err.Error(), "exists; give --force to overwrite it") {
		t.Errorf("a second import: err = %v, want a refusal to overwrite\n%s", err, out)
	}
	if got, _ := os.ReadFile(bpPath); string(got) != string(edited) {
		t.Errorf("a refused import changed blueprint.yaml")
	}
	if out, err := run(t, dir, "import", "kro", "rgd.yaml", "-o", "webapp", "--force"); err != nil {
		t.Fatalf("import --force: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(bpPath); string(got) != string(bp) {
		t.Errorf("import --force did not rewrite blueprint.yaml:\n%s", got)
	}
}

// TestImportKroNotConverted: what cannot be converted is listed with its
// position, the rest is written, and the exit status is 1.
func TestImportKroNotConverted(t *testing.T) {
	dir := t.TempDir()
	rgd := strings.Replace(kroRGD, "image: ${schema.spec.image}", "image: ${schema.spec.image + hash.md5(schema.spec.image)}", 1)
	if err := os.WriteFile(filepath.Join(dir, "rgd.yaml"), []byte(rgd), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, dir, "import", "kro", "rgd.yaml")
	if err == nil {
		t.Fatalf("import of an RGD calling hash.md5 succeeded:\n%s", out)
	}
	for _, want := range []string{"rgd.yaml:31:48: E0022 kro's hash.md5() has no equivalent in a Blueprint", "1 construct was not converted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if exitCode(err) != 1 {
		t.Errorf("exit code %d, want 1", exitCode(err))
	}
	bp, rerr := os.ReadFile(filepath.Join(dir, "blueprint.yaml"))
	if rerr != nil {
		t.Fatalf("the rest was not written: %v", rerr)
	}
	if !strings.Contains(string(bp), "image: ${self.spec.image + hash.md5(self.spec.image)}") {
		t.Errorf("blueprint.yaml does not keep the expression for the user to fix:\n%s", bp)
	}
}

// TestImportKroNothingWritten: an RGD that cannot be read writes nothing,
// and the summary says so rather than that the rest was written.
func TestImportKroNothingWritten(t *testing.T) {
	dir := t.TempDir()
	rgd := strings.Replace(kroRGD, "  schema:", " schema:", 1)
	if err := os.WriteFile(filepath.Join(dir, "rgd.yaml"), []byte(rgd), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, dir, "import", "kro", "rgd.yaml")
	if err == nil || !strings.Contains(err.Error(), "E0001") || !strings.Contains(err.Error(), "no Blueprint was written: fix the 1 mistake above and import again") || strings.Contains(err.Error(), "hold the rest") {
		t.Errorf("import of a broken RGD: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blueprint.yaml")); err == nil {
		t.Error("blueprint.yaml written")
	}
}

func TestImportKroHelp(t *testing.T) {
	out, err := run(t, t.TempDir(), "import", "kro", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spec.schema.status        emit.status", "${schema.spec.x}", "Not converted", "omit()", "--force", "inrun import kro rgd.yaml", "kubectl get crd"} {
		if !strings.Contains(out, want) {
			t.Errorf("import kro --help lacks %q:\n%s", want, out)
		}
	}
}

// TestImportKroWithCRD: an RGD that creates a kind another operator
// reconciles converts when that kind's CRD is given beside it, as kubectl
// prints it; the CRD is copied next to the Blueprint, which uses it, and
// inrun check types the child by it. Without the CRD the hint says how to
// get it.
func TestImportKroWithCRD(t *testing.T) {
	dir := t.TempDir()
	rgd := kroRGD + `    - id: cert
      template:
        apiVersion: cert-manager.io/v1
        kind: Certificate
        metadata:
          name: ${schema.metadata.name}
        spec:
          secretName: ${schema.metadata.name}-tls
          dnsNames:
            - ${schema.metadata.name}.example.com
`
	crd := `apiVersion: v1
kind: List
items:
  - apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: certificates.cert-manager.io
      uid: 6f1e0f43-7a4c-4b7e-9d0e-2d6f3f1f9a10
    spec:
      group: cert-manager.io
      names:
        kind: Certificate
        plural: certificates
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  properties:
                    secretName:
                      type: string
                    dnsNames:
                      type: array
                      items:
                        type: string
`
	for name, data := range map[string]string{"rgd.yaml": rgd, "crds.yaml": crd} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	out, err := run(t, dir, "import", "kro", "rgd.yaml", "-o", "without")
	if err == nil || !strings.Contains(err.Error(), "kubectl get crd certificates.cert-manager.io -o yaml") {
		t.Errorf("import without the CRD: err = %v, want the hint to get the CRD\n%s", err, out)
	}

	out, err = run(t, dir, "import", "kro", "rgd.yaml", "crds.yaml", "-o", "webapp")
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	crdPath := filepath.Join("webapp", "crds", "certificates.cert-manager.io.yaml")
	for _, want := range []string{"with 2 children, using CRD certificates.cert-manager.io\n", crdPath + ": CRD certificates.cert-manager.io, copied"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	bp, err := os.ReadFile(filepath.Join(dir, "webapp", "blueprint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(bp), "uses:\n  - crd: crds/certificates.cert-manager.io.yaml\n") {
		t.Errorf("blueprint.yaml does not use the CRD:\n%s", bp)
	}
	copied, err := os.ReadFile(filepath.Join(dir, crdPath))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(copied), "uid:") {
		t.Errorf("the copy keeps the cluster's uid:\n%s", copied)
	}
	if out, err := run(t, dir, "check", filepath.Join("webapp", "blueprint.yaml")); err != nil {
		t.Errorf("check: %v\n%s", err, out)
	}

	// A field the CRD does not have is caught by check.
	bad := strings.Replace(string(bp), "secretName:", "secretNam:", 1)
	if err := os.WriteFile(filepath.Join(dir, "webapp", "blueprint.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, dir, "check", filepath.Join("webapp", "blueprint.yaml")); err == nil || !strings.Contains(err.Error(), "unknown field spec.secretNam in Certificate") {
		t.Errorf("check of a misspelt Certificate field: err = %v", err)
	}
}
