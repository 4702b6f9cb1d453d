package main

import (
	"github.com/spf13/cobra"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
)

// defaultBlueprint is the file commands read when not told otherwise.
const defaultBlueprint = "blueprint.yaml"

// addBlueprintFlag registers -f/--blueprint on cmd.
func addBlueprintFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVarP(path, "blueprint", "f", defaultBlueprint, "the Blueprint to use")
}

// loadBlueprint compiles the Blueprint at path. Its errors list every
// diagnostic, one per line.
func loadBlueprint(path string) (*ir.Blueprint, error) {
	return compiler.CompileFile(path, compiler.Options{})
}
