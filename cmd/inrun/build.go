package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	inrun "github.com/inrun/inrun"
	"github.com/inrun/inrun/builder"
	"github.com/inrun/inrun/codegen"
)

const buildLong = `Build compiles the Blueprint into a standalone operator: a Go module in
kubebuilder's layout that links Inrun's runtime library, then builds it.

First the Blueprint is compiled exactly as inrun check compiles it; a
Blueprint with mistakes is reported the same way and nothing is written.
Then the project is generated into --out:

  api/<version>/         the custom resource's Go types, from the CRD's schema
  internal/controller/   the reconciler, its +kubebuilder:rbac markers, and the
                         Blueprint's expressions compiled to Go; only those Go
                         cannot express stay CEL
  internal/blueprint/    the compiled Blueprint (its IR), embedded: the operator
                         links no compiler; and the Blueprint's test files
  cmd/main.go            the manager: metrics, probes, leader election
  config/                the CRD, RBAC (as inrun rbac prints it), the manager
  third_party/inrun/     the source of the Inrun packages the operator links

Then, in --out: go mod tidy (through the Go module proxy), go vet ./..., the
generated tests unless --skip-tests (test/simulate.yaml in memory against
the interpreter, test/e2e.yaml on a local control plane when its binaries
are built), and go build into -o. Each step prints its duration.

An earlier inrun build output in --out is replaced; any other non-empty
directory is refused.

--with MODULE[@VERSION][=PATH] (repeatable) names Go modules to compile
into an inrun (docs/typed.md). Only its first stage is implemented: every
module's go.mod is read (a local directory, or the version through the Go
module proxy) and one that requires controller-runtime or a Kubernetes
module at another minor than this inrun is refused, naming both versions
and the go get that fixes it. Generating and building the inrun with the
modules compiled in is not implemented yet: with versions that agree,
--with stops there and says so.`

func newBuildCommand() *cobra.Command {
	var (
		path      string
		opts      codegen.BuildOptions
		skipTests bool
		with      []string
	)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Generate a standalone operator from the Blueprint, test it and build it",
		Long:  buildLong,
		Example: `  inrun build
  inrun build -o /usr/local/bin/website-operator
  inrun build --out ../website-operator --skip-tests`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if len(with) > 0 {
				return buildWith(ctx, cmd.OutOrStdout(), with)
			}
			opts.SkipTests = skipTests
			opts.Progress = cmd.OutOrStdout()
			// Compiled as inrun check compiles it, before anything is
			// written; codegen copies the rest from its directory.
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			// A directory named for the binary must exist: a mistyped path
			// is refused now, not created, and not after minutes of tests.
			if opts.Binary != "" {
				dir := filepath.Dir(opts.Binary)
				if info, err := os.Stat(dir); err != nil || !info.IsDir() {
					return fmt.Errorf("-o %s: the directory %s does not exist; create it first, or name a binary in an existing directory", opts.Binary, dir)
				}
			}
			_, err = codegen.Build(ctx, bp, os.DirFS(filepath.Dir(path)), opts)
			return err
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringVarP(&opts.Binary, "output", "o", "", "the operator binary (default ./bin/<name>-operator)")
	cmd.Flags().StringVar(&opts.Out, "out", "", "the directory of the generated project (default ./build/<name>-operator)")
	cmd.Flags().StringVar(&opts.Module, "module", "", "the generated project's Go module path (default <name>-operator)")
	cmd.Flags().BoolVar(&skipTests, "skip-tests", false, "do not run the generated project's tests")
	cmd.Flags().StringArrayVar(&with, "with", nil, "MODULE[@VERSION][=PATH]: a Go module to compile into an inrun; so far only its versions are checked (docs/typed.md)")
	return cmd
}

// buildWith checks the modules --with names against this inrun's versions,
// the first stage of building an inrun with them; the rest is to come.
func buildWith(ctx context.Context, out io.Writer, args []string) error {
	var (
		mods []*builder.GoMod
		errs []error
	)
	for _, a := range args {
		w, err := builder.ParseWith(a)
		if err == nil {
			var m *builder.GoMod
			if m, err = builder.ReadGoMod(ctx, w); err == nil {
				mods = append(mods, m)
			}
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	gomod, err := inrun.Source.ReadFile("go.mod")
	if err != nil {
		return err
	}
	pins, err := builder.Pinned(gomod)
	if err != nil {
		return err
	}
	if err := builder.CheckVersions(pins, mods); err != nil {
		return err
	}
	fmt.Fprintf(out, "The modules agree with this inrun's controller-runtime %s and Kubernetes %s.\n", pins["sigs.k8s.io/controller-runtime"], pins["k8s.io/api"])
	return errors.New("inrun build --with: building an inrun with modules compiled in is not implemented yet (docs/typed.md); only the version check is")
}
