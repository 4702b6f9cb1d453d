package codegen

import (
	"bytes"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"text/template"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/templates"
)

// templateData is what the templates of package templates see.
type templateData struct {
	Name, Project, Module     string
	Group, GroupShort, Domain string
	Version, Kind, LowerKind  string
	Namespaced                bool
	// APIPackage is the import path of api/<version>, APIAlias its name.
	APIPackage, APIAlias string
	// Remote is set when the Blueprint calls a reconciler over HTTP.
	Remote bool
	// Typed is set when the operator links Go modules (Options.Typed).
	Typed              bool
	GoVersion, GoMinor string
	Requires           []require
	CRDFile, Sample    string
	// Chart: the project has a Helm chart (Options.Chart).
	Chart bool
	// CRDGenerated: the CRD comes from the Blueprint's schema section.
	CRDGenerated bool
	Children     []*ir.Child
	// UsedBlueprints are the Blueprints this one uses (uses: blueprint:),
	// whose custom resources its children may be: this operator does not
	// run them.
	UsedBlueprints  []*ir.Use
	Compiled, Total int
	CEL             []*ir.Expr
}

type require struct{ Path, Version string }

// directRequires are the modules generated code imports.
var directRequires = []string{
	"k8s.io/api",
	"k8s.io/apiextensions-apiserver",
	"k8s.io/apimachinery",
	"k8s.io/client-go",
	"k8s.io/utils",
	"sigs.k8s.io/controller-runtime",
}

// templates renders every template into p.Files: the files that are the
// same for every operator but for a few names, cmd/main.go among them.
func (p *project) templates() error {
	d, err := p.templateData()
	if err != nil {
		return err
	}
	return fs.WalkDir(templates.Project, "project", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(name, ".tmpl") {
			return err
		}
		return p.render(name, d)
	})
}

// templateData is what the templates see of p.
func (p *project) templateData() (*templateData, error) {
	mod, err := inrunGoMod()
	if err != nil {
		return nil, err
	}
	r := p.Blueprint.Resource
	group, domain, _ := strings.Cut(r.Group, ".")
	minor := mod.goVersion
	if parts := strings.Split(minor, "."); len(parts) > 2 {
		minor = strings.Join(parts[:2], ".")
	}
	d := &templateData{
		Name: p.Blueprint.Name, Project: p.Name, Module: p.Module,
		Group: r.Group, GroupShort: group, Domain: domain,
		Version: r.Version, Kind: r.Kind, LowerKind: p.lowerKind(),
		Namespaced: r.Namespaced,
		APIPackage: p.apiPkg(), APIAlias: p.api.alias,
		Remote:    hasRemote(p.Blueprint) && p.Blueprint.Reconcile.Remote.Go == nil,
		Typed:     p.Typed,
		GoVersion: mod.goVersion, GoMinor: minor,
		Children: p.Blueprint.Children,
		Chart:    p.Files[ChartDir+"/Chart.yaml"] != nil,
		Total:    len(p.model.exprs),
		Compiled: len(p.model.exprs) - len(p.lowered.cel),
	}
	for _, u := range p.Blueprint.Uses {
		if u.Blueprint != "" {
			d.UsedBlueprints = append(d.UsedBlueprints, u)
		}
	}
	for i, x := range p.model.exprs {
		if p.lowered.cel[i] {
			d.CEL = append(d.CEL, x)
		}
	}
	if r.CRDFile != "" || r.CRD != nil {
		d.CRDFile = fmt.Sprintf("%s_%s.yaml", r.Group, r.Plural)
		d.CRDGenerated = r.CRDFile == ""
	}
	if _, ok := p.Files[p.samplePath()]; ok {
		d.Sample = strings.TrimPrefix(p.samplePath(), "config/samples/")
	}
	d.Requires = append(d.Requires, require{inrunModule, "v0.0.0-00010101000000-000000000000"})
	for _, path := range directRequires {
		v, ok := mod.requires[path]
		if !ok {
			return nil, fmt.Errorf("Inrun's go.mod does not require %s", path)
		}
		d.Requires = append(d.Requires, require{path, v})
	}
	sort.Slice(d.Requires, func(i, j int) bool { return d.Requires[i].Path < d.Requires[j].Path })
	return d, nil
}

// render renders the template name into p.Files, unless it renders to
// nothing.
func (p *project) render(name string, d *templateData) error {
	src, err := fs.ReadFile(templates.Project, name)
	if err != nil {
		return err
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return err
	}
	if strings.TrimSpace(buf.String()) == "" {
		return nil
	}
	out := strings.TrimSuffix(strings.TrimPrefix(name, "project/"), ".tmpl")
	data := buf.Bytes()
	if strings.HasSuffix(out, ".go") {
		// Laid out as the generated Go files are, gofmt-clean.
		if data, err = formatImports(data, p.Module); err != nil {
			return fmt.Errorf("formatting %s: %w", out, err)
		}
	}
	p.Files[out] = data
	return nil
}
