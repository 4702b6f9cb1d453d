package codegen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/inrun/inrun/ir"
)

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
