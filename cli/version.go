package cli

import (
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/builder"
)

// builtWith is the modules inrun build --with compiled in, comma-separated,
// as the builder sets it with the linker (builder.BuiltWith); empty in a
// plain inrun.
var builtWith string

func newVersionCommand() *cobra.Command {
	var list bool
	cmd := &cobra.Command{
		Use:   "version [--components]",
		Short: "Print inrun's version, and the Go code compiled into it",
		Long: `Version prints the version of this inrun and of the Go it was built with.

With --components it lists the Go code compiled into it, by module:
module@version, then each reconciler, controller, hook and scheme a
package of the module registered (the names reconcile.go, go: and a
child's go.transform refer to), and under a scheme the group/version/kinds
it adds.
A plain inrun has none. It first names the versions of controller-runtime
and the Kubernetes modules such a module must require (the same minor).

An inrun built with inrun build --with also names the modules it was built
with (docs/typed.md).`,
		Example: `  inrun version
  inrun version --components`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			info, _ := debug.ReadBuildInfo()
			version := "unknown"
			goVersion := "unknown"
			if info != nil {
				version, goVersion = info.Main.Version, info.GoVersion
			}
			fmt.Fprintf(out, "inrun %s (%s)\n", version, goVersion)
			if !list {
				return nil
			}
			if builtWith != "" {
				fmt.Fprintf(out, "Built with: %s\n", strings.Join(strings.Split(builtWith, ","), " "))
			}
			// What a module built in must require at the same minor.
			if pins, err := builder.OwnPins(); err == nil {
				var shared []string
				for _, path := range slices.Sorted(maps.Keys(pins)) {
					shared = append(shared, path+" "+pins[path])
				}
				fmt.Fprintf(out, "Modules compiled in share: %s\n", strings.Join(shared, ", "))
			}
			mods := compiledIn.Modules(info)
			if len(mods) == 0 {
				fmt.Fprintln(out, "No Go code is compiled in.")
				return nil
			}
			for _, m := range mods {
				line := m.Path + "@" + m.Version
				if m.Replace != "" {
					line += " => " + m.Replace
				}
				fmt.Fprintln(out, line)
				for _, r := range m.Registrations {
					fmt.Fprintf(out, "  %s %s (%s)\n", r.What, r.Name, r.Package)
					for _, k := range r.Kinds {
						fmt.Fprintf(out, "    %s\n", k)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "components", false, "list the Go code compiled in, by module")
	return cmd
}
