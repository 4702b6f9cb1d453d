package codegen_test

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/packs"
)

var update = flag.Bool("update", false, "rewrite the golden files in ../golden")

// examples are the pack examples with a golden file each, by golden name.
func examples(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range packs.List() {
		for _, ex := range packs.Examples(p.Name) {
			if packs.GoModule(p.Name, ex) {
				continue // its Go is its own module's: TestTypedPack builds it
			}
			name := p.Name
			if ex != "." {
				name = filepath.Base(ex)
			}
			out[name] = filepath.Join("..", "packs", p.Name, filepath.FromSlash(ex), "blueprint.yaml")
		}
	}
	return out
}

// generate compiles the Blueprint at path and generates its operator, as
// inrun build does: with the chart of package install.
func generate(t testing.TB, path string) *codegen.Project {
	t.Helper()
	bp, err := compiler.CompileFile(path, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chart, err := install.Chart(install.Options{Blueprints: []*ir.Blueprint{bp}, Operator: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := codegen.Generate(bp, os.DirFS(filepath.Dir(path)), codegen.Options{Chart: chart})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func archive(p *codegen.Project) []byte {
	a := &txtar.Archive{Comment: []byte("inrun build of " + p.Blueprint.Name + ": the generated tree without third_party/ and go.sum.\n" +
		"Rewrite with: go test ./codegen -update\n")}
	for _, name := range p.Paths() {
		a.Files = append(a.Files, txtar.File{Name: name, Data: p.Files[name]})
	}
	return txtar.Format(a)
}

func TestGolden(t *testing.T) {
	for name, bp := range examples(t) {
		t.Run(name, func(t *testing.T) {
			got := archive(generate(t, bp))
			golden := filepath.Join("..", "golden", name+".txtar")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("no %s: a pack example needs its golden file; run go test ./codegen -update and review it", golden)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("generated tree differs from %s; run go test ./codegen -update and review the diff:\n%s", golden, firstDiff(string(want), string(got)))
			}
		})
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + itoa(i+1) + ":\n- " + w + "\n+ " + g
		}
	}
	return ""
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
