package operatortest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/conformance/operatortest"
	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// TestSimulateRefusedCR: a case that expects its CR refused by the CRD
// passes, as it does in inrun simulate, when the CR is refused (it failed
// the generated operator's TestSimulate), and fails when it is not.
func TestSimulateRefusedCR(t *testing.T) {
	dir := t.TempDir()
	if err := packs.Copy("declarative", dir, packs.CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	ex := filepath.Join(dir, "08-short-schema")
	bp, err := compiler.CompileFile(filepath.Join(ex, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	progs, err := expr.Compile(bp)
	if err != nil {
		t.Fatal(err)
	}
	cases := filepath.Join(ex, "test", "refused.yaml")
	if err := os.WriteFile(cases, []byte(`cases:
  - name: more than 10 replicas are refused by the CRD
    object:
      apiVersion: example.inrun.dev/v1
      kind: StaticSite
      metadata: {name: huge, namespace: default}
      spec: {replicas: 11}
    expect:
      refused: ["spec.replicas"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	operatortest.Simulate(t, bp, reconciler.CELRenderer{Programs: progs}, cases)
}
