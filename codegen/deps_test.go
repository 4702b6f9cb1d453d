package codegen_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// notLinked are the Inrun packages, with those under them, that a
// generated operator must not link: it runs the IR codegen emitted, and
// its tests alone reach e2e, simulate and the local control plane.
var notLinked = []string{"compiler", "load", "codegen", "e2e", "simulate", "localcluster"}

// TestOperatorDoesNotLinkTheCompiler: third_party/inrun holds neither the
// compiler nor codegen, and the operator's binary links none of notLinked, as go list -deps
// ./cmd sees it in a generated project.
func TestOperatorDoesNotLinkTheCompiler(t *testing.T) {
	p := generate(t, "../packs/website/blueprint.yaml")
	third, err := p.ThirdParty()
	if err != nil {
		t.Fatal(err)
	}
	for name := range third {
		for _, dir := range []string{"compiler/", "load/", "codegen/"} {
			if strings.HasPrefix(name, dir) {
				t.Errorf("third_party/inrun holds %s", name)
			}
		}
	}
	if testing.Short() {
		t.Skip("go list needs go mod tidy, through the module proxy")
	}
	dir := filepath.Join(t.TempDir(), p.Name)
	if err := p.Write(dir); err != nil {
		t.Fatal(err)
	}
	var deps []string
	for _, args := range [][]string{{"mod", "tidy"}, {"list", "-deps", "./cmd"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		deps = strings.Fields(string(out))
	}
	linked := map[string]bool{}
	for _, d := range deps {
		linked[d] = true
		rest, ok := strings.CutPrefix(d, "github.com/inrun/inrun/")
		if !ok {
			continue
		}
		for _, n := range notLinked {
			if rest == n || strings.HasPrefix(rest, n+"/") {
				t.Errorf("the operator links %s", d)
			}
		}
	}
	// The list is the binary's: it must hold what the operator runs.
	for _, want := range []string{"github.com/inrun/inrun/ir", "github.com/inrun/inrun/runtime-lib/controller", p.Module + "/internal/blueprint"} {
		if !linked[want] {
			t.Errorf("go list -deps ./cmd does not list %s:\n%s", want, strings.Join(deps, "\n"))
		}
	}
}
