package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/inrun/inrun/rbac"
)

// controllerFile renders internal/controller/<kind>_controller.go: the
// reconciler with its RBAC markers, and the Renderer compiled from the
// Blueprint's expressions.
func (p *project) controllerFile() *jen.File {
	f := newFile(p.controllerPkg(), "controller")
	f.ImportAlias(p.apiPkg(), p.api.alias)
	for _, c := range p.reconcilerDecls() {
		f.Add(c)
	}
	for _, c := range rendererDecls(p.model, p.lowered) {
		f.Add(c)
	}
	return f
}

// reconcilerDecls declares <Kind>Reconciler, runtime-lib's reconciler with
// the generated Renderer, and its RBAC markers.
func (p *project) reconcilerDecls() []jen.Code {
	kind, renderer := p.kind(), p.model.renderer()
	rec := kind + "Reconciler"
	code := []jen.Code{
		jen.Comment(fmt.Sprintf("%s reconciles %s objects: runtime-lib's Blueprint reconciler", rec, kind)),
		jen.Comment("(server-side apply, prune, finalizers, status, conditions and events),"),
		jen.Comment(fmt.Sprintf("with the %s Blueprint's expressions compiled to Go in %s.", p.Blueprint.Name, renderer)),
		jen.Type().Id(rec).Struct(
			jen.Comment("Blueprint is the compiled Blueprint, from blueprint.Load."),
			jen.Id("Blueprint").Op("*").Qual(pkgIR, "Blueprint"),
			jen.Comment("Options tune the controller: workers, unavailable child kinds."),
			jen.Comment("Their Renderer is set by SetupWithManager."),
			jen.Id("Options").Qual(pkgController, "Options"),
		),
		jen.Line(),
	}
	for _, r := range rbac.Rules(p.Blueprint) {
		code = append(code, jen.Comment(rbac.Marker(r)))
	}
	return append(code,
		jen.Line(),
		jen.Comment("SetupWithManager sets up the controller with the Manager. Reconcile is"),
		jen.Comment("runtime-lib's: it watches the custom resource and every child kind, and"),
		jen.Comment(fmt.Sprintf("renders children and status with %s.", renderer)),
		jen.Func().Params(jen.Id("r").Op("*").Id(rec)).Id("SetupWithManager").Params(jen.Id("mgr").Qual(pkgCtrl, "Manager")).Error().Block(
			jen.List(jen.Id("renderer"), jen.Err()).Op(":=").Id("New"+renderer).Call(jen.Id("r").Dot("Blueprint")),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			jen.Id("opts").Op(":=").Id("r").Dot("Options"),
			jen.Id("opts").Dot("Renderer").Op("=").Id("renderer"),
			jen.Return(jen.Qual(pkgController, "Setup").Call(jen.Id("mgr"), jen.Id("r").Dot("Blueprint"), jen.Id("opts"))),
		),
		jen.Line(),
	)
}

// componentsFile renders ComponentsFile: a blank import of every package
// of the Go modules the operator links, whose init functions register
// the reconcilers and hooks the Blueprint names, as the main.go of an
// inrun built with --with does.
func (p *project) componentsFile() *jen.File {
	f := newFile(p.controllerPkg(), "controller")
	f.Comment("The Go modules this operator links (inrun build --operator --with), for")
	f.Comment("their init functions: they register in components.Default the Go code")
	f.Comment("the Blueprint names.")
	for _, pkg := range p.pkgs {
		f.Anon(pkg)
	}
	return f
}
