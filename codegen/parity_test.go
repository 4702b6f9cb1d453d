package codegen_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompiledMatchesInterpreter generates the operator of
// testdata/gadget, a Blueprint with every kind of expression codegen
// compiles or leaves to CEL, and runs its generated TestSimulate: each pass
// of each case of its simulate.yaml must write what the interpreter writes,
// errors included.
func TestCompiledMatchesInterpreter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a controller-runtime module")
	}
	p := generate(t, "testdata/gadget/blueprint.yaml")
	t.Logf("%d of %d expressions compiled to Go", p.Compiled, p.Total)
	dir := filepath.Join(t.TempDir(), p.Name)
	if err := p.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"test", "-short", "-count=1", "./internal/controller"}} {
		cmd := exec.CommandContext(context.Background(), "go", args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
