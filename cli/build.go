package cli

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

	"github.com/inrun/inrun/builder"
	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/ir"
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
  chart/                 a Helm chart of the operator: what inrun install
                         chart --operator writes (docs/install.md), running
                         --image
  third_party/inrun/     the source of the Inrun packages the operator links

Then, in --out: go mod tidy (through the Go module proxy), go vet ./..., the
generated tests unless --skip-tests (test/simulate.yaml in memory against
the interpreter, test/e2e.yaml on a local control plane when its binaries
are built), and go build into -o. Each step prints its duration.

An earlier inrun build output in --out is replaced: the files it wrote
(listed in its .inrun-build-files) are written again or removed, and files
you added there are kept. Any other non-empty directory is refused.

A Blueprint that names Go code (reconcile.go, go.transform) is typed: its
operator must link the Go modules that register that code, and plain inrun
build refuses it, naming where it names Go. Build it with

  inrun build --operator --with MODULE[@VERSION][=PATH]

The modules' versions are checked first (as below, before anything is
written), then the project is generated as above with the modules
required in its go.mod (a local module replaced by its directory, its own
replace directives kept), internal/controller/components.go importing
their packages, and cmd/main.go passing what they registered
(components.Default) to the runtime; the versions go mod tidy resolved are
checked again before go vet, the tests and go build.

With --with MODULE[@VERSION][=PATH] (repeatable) and no --operator, build
builds something else: an inrun with those Go modules compiled in, whose
reconcilers and hooks Blueprints name with reconcile.go and go.transform
(docs/typed.md). No Blueprint is read. MODULE@VERSION comes through the Go
module proxy (the default version is latest); MODULE=PATH is a local
directory.

  1. Every module's go.mod is read, and a module that requires
     controller-runtime or a Kubernetes module at another minor than this
     inrun is refused, naming both versions and the go get that fixes it,
     before anything is written or compiled.
  2. --out (default ./build/inrun) becomes a main module: main.go imports
     every package of the modules (but main and internal ones) and calls
     Inrun's command line; go.mod requires them, replaces a local module by
     its directory and keeps the replace directives of its go.mod (which is
     read, never written); third_party/inrun holds this inrun's source.
  3. go mod tidy; the versions it resolved are checked again (a module's
     dependencies may raise them); then go build -trimpath -buildvcs=false
     with CGO_ENABLED=0 into -o (default ./bin/inrun): the same inputs give
     the same binary.

inrun version --components of the result lists what was compiled in.

--no-compile stops before compiling: the version checks, the generated
module and go mod tidy, in seconds, but no go vet, tests or go build (a
typed pack's make registry; make build then builds).`

func newBuildCommand() *cobra.Command {
	var (
		path      string
		opts      codegen.BuildOptions
		skipTests bool
		with      []string
		operator  bool
		image     string
	)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Generate a standalone operator from the Blueprint, test it and build it",
		Long:  buildLong,
		Example: `  inrun build
  inrun build -o /usr/local/bin/website-operator
  inrun build --out ../website-operator --skip-tests
  inrun build --with example.com/webapp=../webapp
  inrun build --with example.com/webapp@v1.2.0 -o /usr/local/bin/inrun
  inrun build --with example.com/webapp=../webapp --no-compile
  inrun build --operator --with example.com/webapp=../webapp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if len(with) > 0 && !operator {
				return buildWith(ctx, cmd.OutOrStdout(), with, opts)
			}
			var mods []builder.With
			if len(with) > 0 {
				var err error
				if mods, err = parseWith(with); err != nil {
					return err
				}
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
			if opts.Chart, err = operatorChart(bp, image); err != nil {
				return err
			}
			files := os.DirFS(filepath.Dir(path))
			if len(mods) > 0 {
				_, err = builder.Operator(ctx, bp, files, mods, opts)
				return err
			}
			_, err = codegen.Build(ctx, bp, files, opts)
			return err
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringVarP(&opts.Binary, "output", "o", "", "the operator binary (default ./bin/<name>-operator; with --with, ./bin/inrun)")
	cmd.Flags().StringVar(&opts.Out, "out", "", "the directory of the generated project (default ./build/<name>-operator; with --with, ./build/inrun)")
	cmd.Flags().StringVar(&opts.Module, "module", "", "the generated project's Go module path (default <name>-operator)")
	cmd.Flags().BoolVar(&skipTests, "skip-tests", false, "do not run the generated project's tests")
	cmd.Flags().StringArrayVar(&with, "with", nil, "MODULE[@VERSION][=PATH]: build an inrun with this Go module compiled in, or with --operator link it into the operator (repeatable; docs/typed.md)")
	cmd.Flags().BoolVar(&operator, "operator", false, "with --with: build the Blueprint's operator with the modules linked, not an inrun (a typed Blueprint needs it)")
	cmd.Flags().StringVar(&image, "image", "", "the operator's image the chart in chart/ runs, REPOSITORY:TAG (default <name>-operator:"+install.DefaultImageTag+")")
	cmd.Flags().BoolVar(&opts.NoCompile, "no-compile", false, "stop before compiling: check versions, generate, go mod tidy, check again (make registry)")
	return cmd
}

// operatorChart is the Helm chart of bp's operator, running image
// (REPOSITORY:TAG, or "" for the default), that inrun build writes into
// the project: the one inrun install chart --operator writes.
func operatorChart(bp *ir.Blueprint, image string) (map[string][]byte, error) {
	repo, tag, err := parseImage(image)
	if err != nil {
		return nil, err
	}
	return install.Chart(install.Options{Blueprints: []*ir.Blueprint{bp}, Operator: true, ImageRepository: repo, ImageTag: tag})
}

// buildWith builds an inrun with the modules --with names compiled in:
// their versions checked first, then a main module generated in --out and
// built into -o (package builder).
func buildWith(ctx context.Context, progress io.Writer, args []string, o codegen.BuildOptions) error {
	with, err := parseWith(args)
	if err != nil {
		return err
	}
	_, err = builder.Build(ctx, builder.Options{With: with, Dir: o.Out, Binary: o.Binary, Progress: progress, NoCompile: o.NoCompile})
	return err
}

// parseWith reads every --with, reporting every mistake at once.
func parseWith(args []string) ([]builder.With, error) {
	var (
		with []builder.With
		errs []error
	)
	for _, a := range args {
		w, err := builder.ParseWith(a)
		errs = append(errs, err)
		with = append(with, w)
	}
	return with, errors.Join(errs...)
}
