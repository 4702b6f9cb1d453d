package codegen

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/inrun/inrun"
)

// inrunModule is Inrun's module path.
const inrunModule = "github.com/inrun/inrun"

// ThirdPartyDir is where Write puts Inrun's source in a generated project.
const ThirdPartyDir = "third_party/inrun"

// moduleFile is the part of a go.mod codegen reads.
type moduleFile struct {
	goVersion string
	requires  map[string]string
}

// inrunGoMod reads Inrun's own go.mod, embedded.
func inrunGoMod() (*moduleFile, error) {
	data, err := inrun.Source.ReadFile("go.mod")
	if err != nil {
		return nil, err
	}
	return parseGoMod(data)
}

// parseGoMod reads the go directive and the requirements of a go.mod.
func parseGoMod(data []byte) (*moduleFile, error) {
	m := &moduleFile{requires: map[string]string{}}
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case inBlock && f[0] == ")":
			inBlock = false
		case inBlock && len(f) >= 2:
			m.requires[f[0]] = f[1]
		case f[0] == "go" && len(f) == 2:
			m.goVersion = f[1]
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			inBlock = true
		case f[0] == "require" && len(f) == 3:
			m.requires[f[1]] = f[2]
		}
	}
	if m.goVersion == "" {
		return nil, fmt.Errorf("Inrun's go.mod has no go directive")
	}
	return m, sc.Err()
}

// imports returns the import paths of Go source files.
func imports(files map[string][]byte) ([]string, error) {
	set := map[string]bool{}
	fset := token.NewFileSet()
	for name, src := range files {
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// ThirdParty returns the files of third_party/inrun for p: Inrun's go.mod,
// and the source, without tests, of every Inrun package p's Go files
// import, directly or through one another.
//
// A typed operator's (Options.Typed) holds all of Inrun's source but
// tests, as an inrun built with --with does: its Go modules may import any
// of Inrun's packages.
func (p *Project) ThirdParty() (map[string][]byte, error) {
	if p.Typed {
		return inrun.Files()
	}
	goFiles := map[string][]byte{}
	for name, data := range p.Files {
		if strings.HasSuffix(name, ".go") {
			goFiles[name] = data
		}
	}
	roots, err := imports(goFiles)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	mod, err := inrun.Source.ReadFile("go.mod")
	if err != nil {
		return nil, err
	}
	out["go.mod"] = mod
	seen := map[string]bool{}
	var visit func(pkg, from string) error
	visit = func(pkg, from string) error {
		if seen[pkg] {
			return nil
		}
		seen[pkg] = true
		dir := strings.TrimPrefix(strings.TrimPrefix(pkg, inrunModule), "/")
		if dir == "" {
			dir = "."
		}
		entries, err := fs.ReadDir(inrun.Source, dir)
		if err != nil {
			return fmt.Errorf("%s imports %s, whose source the inrun binary does not embed: add it to embed.go", from, pkg)
		}
		pkgFiles := map[string][]byte{}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || strings.HasSuffix(name, "_test.go") {
				continue
			}
			data, err := fs.ReadFile(inrun.Source, path.Join(dir, name))
			if err != nil {
				return err
			}
			out[path.Join(dir, name)] = data
			if strings.HasSuffix(name, ".go") {
				pkgFiles[name] = data
			}
		}
		deps, err := imports(pkgFiles)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if d == inrunModule || strings.HasPrefix(d, inrunModule+"/") {
				if err := visit(d, pkg); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, r := range roots {
		if r == inrunModule || strings.HasPrefix(r, inrunModule+"/") {
			if err := visit(r, p.Name); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// GoSum returns Inrun's go.sum, which the generated module starts from so
// that go mod tidy verifies what Inrun already verified.
func GoSum() []byte {
	data, _ := inrun.Source.ReadFile("go.sum")
	return data
}
