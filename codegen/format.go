package codegen

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// formatImports lays out the imports of a generated file as goimports and
// Kubernetes projects do: the standard library, then other modules, then
// Inrun, then the project's own packages, each group sorted, and no alias
// that only repeats the package's name.
func formatImports(src []byte, module string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var decl *ast.GenDecl
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			decl = g
			break
		}
	}
	if decl == nil {
		return src, nil
	}
	groups := make([][]string, 4)
	for _, s := range decl.Specs {
		spec := s.(*ast.ImportSpec)
		p, _ := strconv.Unquote(spec.Path.Value)
		line := strconv.Quote(p)
		if spec.Name != nil && spec.Name.Name != path.Base(p) {
			line = spec.Name.Name + " " + line
		}
		first, _, _ := strings.Cut(p, "/")
		switch {
		case p == module || strings.HasPrefix(p, module+"/"):
			groups[3] = append(groups[3], line)
		case p == inrunModule || strings.HasPrefix(p, inrunModule+"/"):
			groups[2] = append(groups[2], line)
		case !strings.Contains(first, "."):
			groups[0] = append(groups[0], line)
		default:
			groups[1] = append(groups[1], line)
		}
	}
	var b bytes.Buffer
	b.WriteString("import (\n")
	n := 0
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		if n > 0 {
			b.WriteString("\n")
		}
		n++
		sort.Slice(g, func(i, j int) bool { return importPath(g[i]) < importPath(g[j]) })
		for _, l := range g {
			b.WriteString("\t" + l + "\n")
		}
	}
	b.WriteString(")")
	start, end := fset.Position(decl.Pos()).Offset, fset.Position(decl.End()).Offset
	out := append(append(append([]byte{}, src[:start]...), b.Bytes()...), src[end:]...)
	return format.Source(out)
}

func importPath(line string) string {
	if i := strings.IndexByte(line, '"'); i >= 0 {
		return line[i:]
	}
	return line
}
