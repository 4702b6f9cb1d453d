package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	var list bool
	cmd := &cobra.Command{
		Use:   "version [--components]",
		Short: "Print inrun's version, and the Go code compiled into it",
		Long: `Version prints the version of this inrun and of the Go it was built with.

With --components it lists the Go code compiled into it, by module:
module@version, then each reconciler and hook a package of the module
registered (the names reconcile.go and a child's go.transform refer to).
A plain inrun has none.

Building an inrun with modules compiled in (inrun build --with, the typed
pack's make registry) is not implemented yet: see docs/typed.md.`,
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
				for _, r := range m.Reconcilers {
					fmt.Fprintf(out, "  reconciler %s (%s)\n", r.Name, r.Package)
				}
				for _, r := range m.Transforms {
					fmt.Fprintf(out, "  transform %s (%s)\n", r.Name, r.Package)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "components", false, "list the Go code compiled in, by module")
	return cmd
}
