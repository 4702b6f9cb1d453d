package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"

	"github.com/inrun/inrun/codegen"
)

func newGenerateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Generate Go code from a Blueprint for Go modules beside it",
		Long: `Generate writes Go code that Go modules of hooks and reconcilers use
(docs/typed.md). Its one generator so far is api.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newGenerateAPICommand())
	return cmd
}

const generateAPILong = `Generate api writes the Go API types of the Blueprint's custom resource,
exactly as inrun build generates them into an operator's api/, so that the
hooks of a Go module beside the Blueprint are type-checked against its CRD
when the module compiles:

  <out>/<version>/groupversion_info.go     GroupVersion, SchemeBuilder, AddToScheme
  <out>/<version>/<kind>_types.go          the kind, its spec and status, its List
  <out>/<version>/zz_generated.deepcopy.go DeepCopy and DeepCopyObject

The types come from the CRD's OpenAPI schema (crd.file, or the schema:
section), with json tags and +kubebuilder markers; status has Conditions
and ObservedGeneration, which the runtime writes. A hook converts the
custom resource it is given with components.Decode:

  app, err := components.Decode[v1.WebApp](req.Object)

and a module registers the types with components.RegisterScheme(name,
v1.AddToScheme) when its controllers read them typed.

--out is a directory of the Go module (default api): the package is the
module path of the nearest go.mod above it, joined with the path to it. A
file there that inrun did not generate is never overwritten (the command
fails naming it); a generated file of that version no longer generated
(the kind was renamed) is removed.

With --check nothing is written: the command fails, naming each file, when
what is on disk differs from what the Blueprint's CRD gives now, so that
make registry catches a CRD changed without regenerating.`

func newGenerateAPICommand() *cobra.Command {
	var path, out string
	var check bool
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Write the Go types of the Blueprint's custom resource (api/<version>), or --check them",
		Long:  generateAPILong,
		Example: `  inrun generate api
  inrun generate api -f ../blueprint.yaml -o api
  inrun generate api --check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bp, err := loadBlueprint(path)
			if err != nil {
				return err
			}
			pkg, err := goPackage(out)
			if err != nil {
				return err
			}
			files, err := codegen.API(bp, pkg+"/"+bp.Resource.Version)
			if err != nil {
				return err
			}
			version := filepath.Join(out, bp.Resource.Version)
			if check {
				return checkGenerated(cmd.OutOrStdout(), version, files, bp.Resource.Version)
			}
			return writeGenerated(cmd.OutOrStdout(), version, files, bp.Resource.Version)
		},
	}
	addBlueprintFlag(cmd, &path)
	cmd.Flags().StringVarP(&out, "out", "o", "api", "the directory of the API packages, in a Go module")
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; fail naming each file that differs from what the CRD gives")
	return cmd
}

// generatedHeader starts every file inrun generates.
var generatedHeader = []byte("// " + codegen.Header)

// goPackage is the import path of dir: the module path of the nearest
// go.mod at or above it, joined with the path from there. Without a
// go.mod it is dir's slash path.
func goPackage(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var rel []string
	for d := abs; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			mod := modfile.ModulePath(data)
			if mod == "" {
				return "", fmt.Errorf("%s: no module directive", filepath.Join(d, "go.mod"))
			}
			for i, j := 0, len(rel)-1; i < j; i, j = i+1, j-1 {
				rel[i], rel[j] = rel[j], rel[i]
			}
			return path.Join(append([]string{mod}, rel...)...), nil
		}
		if filepath.Dir(d) == d {
			return filepath.ToSlash(filepath.Clean(dir)), nil
		}
		rel = append(rel, filepath.Base(d))
	}
}

// generatedIn lists the files of dir that inrun generated (they start with
// codegen.Header), by name.
func generatedIn(dir string) (map[string]bool, error) {
	out := map[string]bool{}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = bytes.HasPrefix(data, generatedHeader)
	}
	return out, nil
}

// names are the file names of files (version/NAME), sorted.
func names(files map[string][]byte, version string) []string {
	var out []string
	for p := range files {
		out = append(out, strings.TrimPrefix(p, version+"/"))
	}
	sort.Strings(out)
	return out
}

// writeGenerated writes files (by version/NAME) into dir, the version's
// directory: every file it would overwrite must be inrun's, and inrun's
// files it no longer generates are removed.
func writeGenerated(w io.Writer, dir string, files map[string][]byte, version string) error {
	have, err := generatedIn(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names(files, version) {
		if ours, ok := have[name]; ok && !ours {
			errs = append(errs, fmt.Errorf("%s: not generated by inrun, so not overwritten; move it away, or choose another --out", filepath.Join(dir, name)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range names(files, version) {
		if err := os.WriteFile(filepath.Join(dir, name), files[version+"/"+name], 0o644); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s\n", filepath.Join(dir, name))
	}
	for _, name := range sortedKeys(have) {
		if _, still := files[version+"/"+name]; have[name] && !still {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
			fmt.Fprintf(w, "removed %s, no longer generated\n", filepath.Join(dir, name))
		}
	}
	return nil
}

// checkGenerated reports every file of dir that differs from files: one
// that differs or is missing, and one of inrun's no longer generated.
func checkGenerated(w io.Writer, dir string, files map[string][]byte, version string) error {
	have, err := generatedIn(dir)
	if err != nil {
		return err
	}
	const fix = "run inrun generate api to regenerate, and rebuild"
	var errs []error
	for _, name := range names(files, version) {
		file := filepath.Join(dir, name)
		got, err := os.ReadFile(file)
		switch {
		case errors.Is(err, os.ErrNotExist):
			errs = append(errs, fmt.Errorf("%s: missing; %s", file, fix))
		case err != nil:
			errs = append(errs, err)
		case !bytes.Equal(got, files[version+"/"+name]):
			errs = append(errs, fmt.Errorf("%s: differs from what the Blueprint's CRD gives at line %d; %s", file, firstDiffLine(got, files[version+"/"+name]), fix))
		}
	}
	for _, name := range sortedKeys(have) {
		if _, still := files[version+"/"+name]; have[name] && !still {
			errs = append(errs, fmt.Errorf("%s: generated for a kind the Blueprint no longer has; %s", filepath.Join(dir, name), fix))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: the Go types match the Blueprint's CRD\n", dir)
	return nil
}

// firstDiffLine is the first line, from 1, where a and b differ.
func firstDiffLine(a, b []byte) int {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(al) && i < len(bl); i++ {
		if !bytes.Equal(al[i], bl[i]) {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
