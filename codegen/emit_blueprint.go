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
	if p.usesBlueprints() {
		f.Line()
		f.Comment(UsesFile + " are the Blueprints this one uses (uses: blueprint:), as")
		f.Comment("ir.MarshalUsed encodes them. The operator does not run them; its tests do.")
		f.Comment("")
		f.Comment("//go:embed " + UsesFile)
		f.Var().Id("uses").Index().Byte()
		f.Line()
		f.Comment("LoadWithUsed returns the embedded Blueprint with the Blueprints it uses")
		f.Comment("(ir.Use.Compiled), which its tests run interpreted beside the operator, as")
		f.Comment("inrun run would: in production they need operators of their own.")
		f.Func().Id("LoadWithUsed").Params().Params(jen.Op("*").Qual(pkgIR, "Blueprint"), jen.Error()).Block(
			jen.Return(jen.Qual(pkgIR, "UnmarshalWithUsed").Call(jen.Id("compiled"), jen.Id("uses"))),
		)
	}
	return f
}

// usesBlueprints reports whether the Blueprint uses others (uses:
// blueprint:).
func (p *project) usesBlueprints() bool {
	for _, u := range p.Blueprint.Uses {
		if u.Compiled != nil {
			return true
		}
	}
	return false
}

// irFile writes internal/blueprint/blueprint.ir.json, the Blueprint the
// operator runs.
func (p *project) irFile() error {
	data, err := ir.Marshal(p.Blueprint)
	if err != nil {
		return fmt.Errorf("encoding the Blueprint's IR: %w", err)
	}
	p.Files["internal/blueprint/"+IRFile] = append(data, '\n')
	if !p.usesBlueprints() {
		return nil
	}
	used, err := ir.MarshalUsed(p.Blueprint)
	if err != nil {
		return fmt.Errorf("encoding the IR of the Blueprints it uses: %w", err)
	}
	p.Files["internal/blueprint/"+UsesFile] = append(used, '\n')
	return nil
}
