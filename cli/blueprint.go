package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
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
	return compiler.CompileFile(path, compileOptions())
}

// compiledIn is the Go compiled into this inrun (components.Default); tests
// give one of their own.
var compiledIn = components.Default

// compileOptions are the compiler's options in this inrun: an inrun with
// Go compiled in checks the names Blueprints give against it (E0023); a
// plain one checks their form only, and refuses to run them (goNote,
// refuseMissingGo).
func compileOptions() compiler.Options {
	if compiledIn.Empty() {
		return compiler.Options{}
	}
	return compiler.Options{Components: compiledIn}
}

// refuseMissingGo returns an error naming, for every Blueprint of bps, the
// Go code it names that this inrun does not have compiled in.
func refuseMissingGo(bps []*ir.Blueprint) error {
	var errs []error
	for _, bp := range bps {
		errs = append(errs, compiledIn.Check(bp))
	}
	return errors.Join(errs...)
}

// goNote says, for check's line, which Go code bp names and whether this
// inrun has it.
func goNote(bp *ir.Blueprint) string {
	needs := components.Needs(bp)
	if len(needs) == 0 {
		return ""
	}
	var names []string
	for _, n := range needs {
		names = append(names, fmt.Sprintf("%s %s", n.What, n.Name))
	}
	if len(compiledIn.Missing(bp)) > 0 {
		return fmt.Sprintf("; names Go %s, not compiled into this inrun: it cannot run here (docs/typed.md)", strings.Join(names, ", "))
	}
	return fmt.Sprintf("; names Go %s, compiled in", strings.Join(names, ", "))
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

// casesArg takes the file of cases that simulate and e2e may be given as
// their argument, in place of --file. Given neither, the file is the
// default one beside the Blueprint -f names.
func casesArg(cmd *cobra.Command, args []string, file *string, blueprint string) error {
	switch {
	case len(args) == 0 && !cmd.Flags().Changed("file") && cmd.Flags().Changed("blueprint"):
		*file = filepath.Join(filepath.Dir(blueprint), *file)
	case len(args) == 0:
	case cmd.Flags().Changed("file") && *file != args[0]:
		return fmt.Errorf("the cases are given twice, as %s and --file %s: keep one", args[0], *file)
	default:
		*file = args[0]
	}
	return nil
}
