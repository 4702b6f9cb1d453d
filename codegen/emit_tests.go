package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// The generated tests run the Blueprint's own test files against the
// generated controller, with conformance/operatortest.

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
		jen.Qual(pkgClusterTest, "Main").Call(jen.Id("m"),
			jen.Qual(pkgLocalCluster, "Options").Values(jen.Dict{jen.Id("Mode"): jen.Qual(pkgLocalCluster, "Full")})),
	)
	return f
}

// controllerTestFile renders internal/controller/<kind>_controller_test.go.
func (p *project) controllerTestFile() *jen.File {
	kind := p.kind()
	f := newFile(p.controllerPkg(), "controller")
	f.ImportAlias(pkgOperatorTest, "operatortest")
	t := jen.Id("t")
	// A Blueprint that uses others is tested with them running beside it.
	loadFn := "Load"
	if p.usesBlueprints() {
		loadFn = "LoadWithUsed"
	}
	load := func() []jen.Code {
		return []jen.Code{
			jen.List(jen.Id("bp"), jen.Err()).Op(":=").Qual(p.blueprintPkg(), loadFn).Call(),
			jen.If(jen.Err().Op("!=").Nil()).Block(t.Clone().Dot("Fatal").Call(jen.Err())),
			jen.List(jen.Id("renderer"), jen.Err()).Op(":=").Id("New" + p.model.renderer()).Call(jen.Id("bp")),
			jen.If(jen.Err().Op("!=").Nil()).Block(t.Clone().Dot("Fatal").Call(jen.Err())),
		}
	}
	testingT := jen.Id("t").Op("*").Qual("testing", "T")

	if _, ok := p.Files["internal/blueprint/test/simulate.yaml"]; ok {
		f.Comment(fmt.Sprintf("TestSimulate runs the cases of the Blueprint's test/simulate.yaml in memory with %s,", p.model.renderer()))
		f.Comment("and checks that every pass writes what the interpreter's CEL Renderer")
		f.Comment("writes: the same children, the same status, the same number of writes.")
		f.Func().Id("TestSimulate").Params(testingT).Block(append(load(),
			jen.Qual(pkgOperatorTest, "Simulate").Call(t, jen.Id("bp"), jen.Id("renderer"), jen.Lit("../blueprint/test/simulate.yaml")),
		)...)
		f.Line()
	}
	if _, ok := p.Files["internal/blueprint/test/e2e.yaml"]; ok {
		f.Comment(fmt.Sprintf("TestE2E runs the cases of the Blueprint's test/e2e.yaml on a local control plane, with %sReconciler", kind))
		f.Comment("in a manager of its own.")
		f.Func().Id("TestE2E").Params(testingT).Block(append(append([]jen.Code{
			jen.If(jen.Qual("testing", "Short").Call()).Block(t.Clone().Dot("Skip").Call(jen.Lit("a local control plane is not short"))),
			jen.Id("cluster").Op(":=").Qual(pkgClusterTest, "Shared").Call(t),
		}, load()[:2]...),
			jen.Qual(pkgOperatorTest, "E2E").Call(t, jen.Id("cluster").Dot("RESTConfig").Call(), jen.Id("bp"), jen.Lit("../blueprint/test/e2e.yaml"),
				jen.Func().Params(jen.Id("mgr").Qual(pkgCtrl, "Manager")).Error().Block(
					jen.Id("r").Op(":=").Op("&").Id(kind+"Reconciler").Values(jen.Dict{jen.Id("Blueprint"): jen.Id("bp")}),
					jen.Id("r").Dot("Options").Dot("SkipNameValidation").Op("=").True(),
					jen.Return(jen.Id("r").Dot("SetupWithManager").Call(jen.Id("mgr"))),
				)),
		)...)
	}
	return f
}
