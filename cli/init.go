package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/inrun/inrun/packs"
)

func newInitCommand() *cobra.Command {
	var (
		pack  string
		force bool
		list  bool
	)
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Create a project from an example pack",
		Long: `Init copies one of the packs embedded in inrun into DIR (default: the current
directory), ready to check and run. With no --pack it copies the canonical
pack: a Website CRD that becomes a Deployment and a Service.

Each example in a pack has the same layout:

  blueprint.yaml        the operator
  manifests/crd.yaml    the CRD it reconciles (none when the Blueprint's
                        schema: section describes it: inrun crd prints it)
  manifests/cr.yaml     one custom resource
  test/simulate.yaml    checks without a cluster
  test/e2e.yaml         checks on a real API server

DIR must be empty or not exist yet, unless --force is given; then files of
the pack replace files of the same name and other files are left alone.`,
		Example: `  # The canonical Website pack, in a new directory
  inrun init my-operator

  # Which packs there are
  inrun init --list

  # Nine Blueprints with no code, in a new directory
  inrun init my-website --pack declarative

  # A custom resource as a durable state machine (reconcile.workflow)
  inrun init my-orders --pack workflow

  # Into the current directory, even though it holds files
  inrun init --force`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if list {
				if len(args) > 0 || cmd.Flags().Changed("pack") || force {
					return fmt.Errorf("--list takes no directory, --pack or --force")
				}
				printPacks(out)
				return nil
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if err := packs.Copy(pack, dir, packs.CopyOptions{Force: force}); err != nil {
				return err
			}
			printCreated(out, pack, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&pack, "pack", packs.Default, "the pack to copy; see --list")
	cmd.Flags().BoolVar(&force, "force", false, "write into DIR even if it is not empty")
	cmd.Flags().BoolVar(&list, "list", false, "list the packs, one a line, and exit")
	return cmd
}

func printPacks(w io.Writer) {
	list := packs.List()
	width := 0
	for _, p := range list {
		width = max(width, len(p.Name))
	}
	for _, p := range list {
		fmt.Fprintf(w, "%-*s  %s\n", width, p.Name, p.Description)
	}
}

// printCreated lists what Copy wrote and what to run next. A pack with
// several examples is listed by example, not file by file: the layout of
// each is the same, and thirty paths would hide the next steps.
func printCreated(w io.Writer, pack, dir string) {
	examples := packs.Examples(pack)
	where := dir
	if filepath.Clean(dir) == "." {
		where = "the current directory"
	}
	fmt.Fprintf(w, "Created the %s pack in %s:\n", pack, where)
	seen := map[string]bool{}
	for _, f := range packs.Files(pack) {
		entry := f
		if ex := exampleOf(f, examples); ex != "." && ex != "" {
			entry = ex + "/"
		}
		if !seen[entry] {
			seen[entry] = true
			fmt.Fprintf(w, "  %s\n", entry)
		}
	}

	// The next steps run inside an example: the pack's root when it is one,
	// otherwise the first example, which is where its README starts.
	start := dir
	if len(examples) > 0 && examples[0] != "." {
		start = filepath.Join(dir, filepath.FromSlash(examples[0]))
	}
	fmt.Fprintln(w, "\nNext:")
	if filepath.Clean(start) != "." {
		fmt.Fprintf(w, "  cd %s\n", start)
	}
	next := []string{
		"inrun simulate      # check it without a cluster",
		"inrun --dev         # run it; makes a local cluster if none is reachable",
	}
	for _, p := range packs.List() {
		if p.Name == pack && len(p.Next) > 0 {
			next = p.Next
		}
	}
	for _, line := range next {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintln(w, "\nREADME.md walks through the rest.")
}

// exampleOf returns the example directory that holds file, or "" when the
// file is outside every example (a pack's top-level README).
func exampleOf(file string, examples []string) string {
	for _, ex := range examples {
		if ex == "." || strings.HasPrefix(file, ex+"/") {
			return ex
		}
	}
	return ""
}
