package codegen

import (
	"os"
	"path/filepath"

	"github.com/inrun/inrun/internal/outdir"
)

// generatedRoots are the paths a generated project consists of: Write
// replaces them when it writes over an earlier generation.
var generatedRoots = []string{
	"api", ChartDir, "cmd", "config", "internal", ThirdPartyDir,
	".gitignore", "Dockerfile", "Makefile", "PROJECT", "README.md", "go.mod", "go.sum",
}

// Write writes p into dir: its Files, Inrun's source under
// third_party/inrun, and a go.sum started from Inrun's. dir must be empty,
// missing, or an earlier generation, whose files Write replaces (those
// its user added are kept, ManifestFile); any other
// directory is refused, so that a mistyped --out cannot overwrite a
// project.
func (p *Project) Write(dir string) error {
	third, err := p.ThirdParty()
	if err != nil {
		return err
	}
	if err := prepare(dir); err != nil {
		return err
	}
	var written []string
	write := func(name string, data []byte) error {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		written = append(written, name)
		return os.WriteFile(path, data, 0o644)
	}
	for _, name := range p.Paths() {
		if err := write(name, p.Files[name]); err != nil {
			return err
		}
	}
	for name, data := range third {
		if err := write(ThirdPartyDir+"/"+name, data); err != nil {
			return err
		}
	}
	if err := write("go.sum", GoSum()); err != nil {
		return err
	}
	return output.WriteManifest(dir, written)
}

// output is how Write recognises an earlier generation, and what of it
// it replaces.
var output = outdir.Output{
	Marker: "internal/blueprint/blueprint.go",
	Header: "// " + Header,
	Roots:  generatedRoots,
	What:   "inrun build output",
	// What the project's user adds beside the generated files is kept.
	Manifest: ManifestFile,
}

// ManifestFile lists the files of a generated project, so that building
// again replaces those and keeps the ones its user added.
const ManifestFile = ".inrun-build-files"

func prepare(dir string) error { return output.Prepare(dir) }

// HoldsOutput reports whether dir holds a project inrun build generated.
func HoldsOutput(dir string) bool { return output.Holds(dir) }
