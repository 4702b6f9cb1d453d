package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

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

// loadBlueprint compiles the Blueprint at path, and those it uses. Its
// errors list every diagnostic, one per line.
func loadBlueprint(path string) (*ir.Blueprint, error) {
	return compiler.CompileFile(path, compiler.Options{})
}

// withUsed returns bps and the Blueprints they use (ir.WithUsed), and
// prints one line naming the used ones not among bps, and what is done with
// them: what is a format whose %s is "it" or "them" ("running %s too").
func withUsed(out io.Writer, bps []*ir.Blueprint, what string) []*ir.Blueprint {
	all := ir.WithUsed(bps)
	given := map[string]bool{}
	for _, bp := range bps {
		given[filepath.Clean(bp.File)] = true
	}
	var used []string
	for _, bp := range all {
		if !given[filepath.Clean(bp.File)] {
			used = append(used, fmt.Sprintf("%s (%s)", bp.Name, bp.File))
		}
	}
	if len(used) > 0 {
		var users []string
		for _, bp := range bps {
			if slices.ContainsFunc(bp.Uses, func(u *ir.Use) bool { return u.Compiled != nil }) {
				users = append(users, bp.Name)
			}
		}
		pronoun := "it"
		if len(used) > 1 {
			pronoun = "them"
		}
		fmt.Fprintf(out, "Blueprint %s uses %s: %s.\n", strings.Join(users, ", "), strings.Join(used, ", "), fmt.Sprintf(what, pronoun))
	}
	return all
}
