package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/rbac"
)

const (
	pkgIR         = "github.com/inrun/inrun/ir"
	pkgController = "github.com/inrun/inrun/runtime-lib/controller"
	pkgCtrl       = "sigs.k8s.io/controller-runtime"
)

// controllerFile renders internal/controller/<kind>_controller.go: the
// reconciler with its RBAC markers, and the Renderer compiled from the
// Blueprint's expressions.
func (p *project) controllerFile() *jen.File {
	bp := p.Blueprint
	kind := p.kind()
	f := newFile(p.controllerPkg(), "controller")
	f.ImportAlias(p.apiPkg(), p.api.alias)
	rec := kind + "Reconciler"

	f.Comment(fmt.Sprintf("%s reconciles %s objects: runtime-lib's Blueprint reconciler", rec, kind))
	f.Comment("(server-side apply, prune, finalizers, status, conditions and events),")
	f.Comment(fmt.Sprintf("with the %s Blueprint's expressions compiled to Go in %s.", bp.Name, p.gen.renderer()))
	f.Type().Id(rec).Struct(
		jen.Comment("Blueprint is the compiled Blueprint, from blueprint.Load."),
		jen.Id("Blueprint").Op("*").Qual(pkgIR, "Blueprint"),
		jen.Comment("Options tune the controller: workers, unavailable child kinds."),
		jen.Comment("Their Renderer is set by SetupWithManager."),
		jen.Id("Options").Qual(pkgController, "Options"),
	)
	f.Line()
	for _, r := range rbac.Rules(bp) {
		f.Comment(rbac.Marker(r))
	}
	f.Line()
	f.Comment("SetupWithManager sets up the controller with the Manager. Reconcile is")
	f.Comment("runtime-lib's: it watches the custom resource and every child kind, and")
	f.Comment(fmt.Sprintf("renders children and status with %s.", p.gen.renderer()))
	f.Func().Params(jen.Id("r").Op("*").Id(rec)).Id("SetupWithManager").Params(jen.Id("mgr").Qual(pkgCtrl, "Manager")).Error().Block(
		jen.List(jen.Id("renderer"), jen.Err()).Op(":=").Id("New"+p.gen.renderer()).Call(jen.Id("r").Dot("Blueprint")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.Id("opts").Op(":=").Id("r").Dot("Options"),
		jen.Id("opts").Dot("Renderer").Op("=").Id("renderer"),
		jen.Return(jen.Qual(pkgController, "Setup").Call(jen.Id("mgr"), jen.Id("r").Dot("Blueprint"), jen.Id("opts"))),
	)
	f.Line()
	for _, c := range p.gen.rendererCode() {
		f.Add(c)
	}
	return f
}

// blueprintFile renders internal/blueprint/blueprint.go, which embeds the
// compiled Blueprint.
func (p *project) blueprintFile() *jen.File {
	f := newFile(p.blueprintPkg(), "blueprint")
	f.PackageComment(fmt.Sprintf("Package blueprint holds the %s Blueprint this operator was generated from,", p.Blueprint.Name))
	f.PackageComment("compiled: inrun build wrote its IR to " + IRFile + ", which is embedded, so")
	f.PackageComment("that the operator runs the IR inrun check and inrun run see without linking")
	f.PackageComment("the compiler, and parses no CEL at start.")
	f.Anon("embed")
	f.Comment(IRFile + " is the Blueprint as ir.Marshal encodes it.")
	f.Comment("")
	f.Comment("//go:embed " + IRFile)
	f.Var().Id("compiled").Index().Byte()
	f.Line()
	f.Comment("Load returns the embedded Blueprint. Positions in its messages are relative")
	f.Comment("to the directory of the Blueprint inrun build read: blueprint.yaml:12:5.")
	f.Func().Id("Load").Params().Params(jen.Op("*").Qual(pkgIR, "Blueprint"), jen.Error()).Block(
		jen.Return(jen.Qual(pkgIR, "Unmarshal").Call(jen.Id("compiled"))),
	)
	return f
}

// irFile writes internal/blueprint/blueprint.ir.json, the Blueprint the
// operator runs.
func (p *project) irFile() error {
	data, err := ir.Marshal(p.Blueprint)
	if err != nil {
		return fmt.Errorf("encoding the Blueprint's IR: %w", err)
	}
	p.Files["internal/blueprint/"+IRFile] = append(data, '\n')
	return nil
}

// suiteTestFile renders internal/controller/suite_test.go: one local
// control plane for the package's tests, as envtest suites have.
func (p *project) suiteTestFile() *jen.File {
	f := newFile(p.controllerPkg(), "controller")
	f.Comment("TestMain shares one local control plane, started by the first test that")
	f.Comment("needs it: kube-apiserver, etcd, kube-controller-manager, kube-scheduler")
	f.Comment("and kwok, so that Deployments get Pods that become Ready. Build its")
	f.Comment("binaries once with `inrun cluster assets`; without them the cluster tests")
	f.Comment("are skipped.")
	f.Func().Id("TestMain").Params(jen.Id("m").Op("*").Qual("testing", "M")).Block(
		jen.Qual("github.com/inrun/inrun/localcluster/clustertest", "Main").Call(jen.Id("m"),
			jen.Qual("github.com/inrun/inrun/localcluster", "Options").Values(jen.Dict{jen.Id("Mode"): jen.Qual("github.com/inrun/inrun/localcluster", "Full")})),
	)
	return f
}

// controllerTestFile renders internal/controller/<kind>_controller_test.go.
func (p *project) controllerTestFile() *jen.File {
	kind := p.kind()
	f := newFile(p.controllerPkg(), "controller")
	f.ImportAlias("github.com/inrun/inrun/conformance/operatortest", "operatortest")
	t := jen.Id("t")
	load := func() []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("bp"), jen.Err()).Op(":=").Qual(p.blueprintPkg(), "Load").Call(),
			jen.If(jen.Err().Op("!=").Nil()).Block(t.Clone().Dot("Fatal").Call(jen.Err())),
			jen.List(jen.Id("renderer"), jen.Err()).Op(":=").Id("New" + p.gen.renderer()).Call(jen.Id("bp")),
			jen.If(jen.Err().Op("!=").Nil()).Block(t.Clone().Dot("Fatal").Call(jen.Err())),
		}
	}
	testingT := jen.Id("t").Op("*").Qual("testing", "T")

	if _, ok := p.Files["internal/blueprint/test/simulate.yaml"]; ok {
		f.Comment(fmt.Sprintf("TestSimulate runs the cases of the Blueprint's test/simulate.yaml in memory with %s,", p.gen.renderer()))
		f.Comment("and checks that every pass writes what the interpreter's CEL Renderer")
		f.Comment("writes: the same children, the same status, the same number of writes.")
		f.Func().Id("TestSimulate").Params(testingT).Block(append(load(),
			jen.Qual("github.com/inrun/inrun/conformance/operatortest", "Simulate").Call(t, jen.Id("bp"), jen.Id("renderer"), jen.Lit("../blueprint/test/simulate.yaml")),
		)...)
		f.Line()
	}
	if _, ok := p.Files["internal/blueprint/test/e2e.yaml"]; ok {
		f.Comment(fmt.Sprintf("TestE2E runs the cases of the Blueprint's test/e2e.yaml on a local control plane, with %sReconciler", kind))
		f.Comment("in a manager of its own.")
		f.Func().Id("TestE2E").Params(testingT).Block(append(append([]jen.Code{
			jen.If(jen.Qual("testing", "Short").Call()).Block(t.Clone().Dot("Skip").Call(jen.Lit("a local control plane is not short"))),
			jen.Id("cluster").Op(":=").Qual("github.com/inrun/inrun/localcluster/clustertest", "Shared").Call(t),
		}, load()[:2]...),
			jen.Qual("github.com/inrun/inrun/conformance/operatortest", "E2E").Call(t, jen.Id("cluster").Dot("RESTConfig").Call(), jen.Id("bp"), jen.Lit("../blueprint/test/e2e.yaml"),
				jen.Func().Params(jen.Id("mgr").Qual(pkgCtrl, "Manager")).Error().Block(
					jen.Id("r").Op(":=").Op("&").Id(kind+"Reconciler").Values(jen.Dict{jen.Id("Blueprint"): jen.Id("bp")}),
					jen.Id("r").Dot("Options").Dot("SkipNameValidation").Op("=").True(),
					jen.Return(jen.Id("r").Dot("SetupWithManager").Call(jen.Id("mgr"))),
				)),
		)...)
	}
	return f
}

// hasRemote reports whether bp calls a remote reconciler.
func hasRemote(bp *ir.Blueprint) bool {
	return bp.Reconcile != nil && bp.Reconcile.Remote != nil
}
