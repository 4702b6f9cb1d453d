package codegen_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompiledMatchesInterpreter generates the operators of Blueprints
// that exercise what codegen compiles or leaves to CEL, and runs their
// generated TestSimulate: each pass of each case of their simulate.yaml
// must write what the interpreter writes, errors included.
//
//   - testdata/gadget has every kind of expression codegen compiles or
//     leaves to CEL.
//   - testdata/fleet has collections: iterators over a list of objects and
//     a map combined, bound in includeWhen, readyWhen (with each) and the
//     template, a collection that reads another, status over both.
//   - the declarative pack's 05-collections is the collection users start
//     from.
func TestCompiledMatchesInterpreter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a controller-runtime module")
	}
	for _, path := range []string{
		"testdata/gadget/blueprint.yaml",
		"testdata/fleet/blueprint.yaml",
		"../packs/declarative/05-collections/blueprint.yaml",
	} {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			p := generate(t, path)
			t.Logf("%d of %d expressions compiled to Go", p.Compiled, p.Total)
			dir := filepath.Join(t.TempDir(), p.Name)
			if err := p.Write(dir); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"test", "-short", "-count=1", "-v", "./internal/controller"}} {
				cmd := exec.CommandContext(context.Background(), "go", args...)
				cmd.Dir = dir
				cmd.Env = append(cmd.Environ(), "GOWORK=off")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				if args[0] == "test" && !strings.Contains(string(out), "--- PASS: TestSimulate") {
					t.Fatalf("go %s did not pass TestSimulate:\n%s", strings.Join(args, " "), out)
				}
			}
		})
	}
}
