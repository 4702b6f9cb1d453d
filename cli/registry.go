package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/rbac"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/gate"
	"github.com/inrun/inrun/registry/stack"
)

// envKeysDir names the keys directory instead of the one in the user's
// config directory.
const envKeysDir = "INRUN_KEYS_DIR"

// registryNotYet is said wherever the pattern registry stops, for now.
const registryNotYet = `Patterns run by name with inrun run REGISTRY/[NAMESPACE/]NAME[@VERSION] or
inrun run --stack FILE; inrun --dev starts a local registry holding the
built-in patterns, and inrun init --pack registry walks through it all.
Where no registry is reachable, oci:DIR in place of REGISTRY/NAMESPACE
reads an OCI layout directory (oras cp -r ... --to-oci-layout DIR:VERSION
writes one). See docs/registry.md.`

func keysDir() (string, error) {
	if d := os.Getenv(envKeysDir); d != "" {
		return filepath.Abs(d)
	}
	cfg, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a config directory for keys (set %s): %w", envKeysDir, err)
	}
	return filepath.Join(cfg, "inrun", "keys"), nil
}

func newKeysCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Make and list the keys that sign and verify patterns' proofs",
		Long: `Patterns are pushed with a proof that they passed their tests, signed with an
ed25519 key the publisher holds (inrun push --key). Whoever pulls a pattern
verifies the proof with the publisher's public key.

Keys live in one directory: $` + envKeysDir + `, else inrun/keys in the user's
config directory. NAME.key is a private key (PKCS #8 PEM, mode 0600), NAME.pub
its public key (PKIX PEM). Every .pub file there is trusted when verifying:
to trust a publisher, copy their .pub file into it (or pass --key to inspect
and pull).`,
	}
	cmd.AddCommand(newKeysCreateCommand(), newKeysListCommand())
	return cmd
}

func newKeysCreateCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "create [NAME]",
		Short: "Make an ed25519 key pair, NAME.key and NAME.pub (NAME defaults to publisher)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := "publisher"
			if len(args) == 1 {
				name = args[0]
			}
			if dir == "" {
				var err error
				if dir, err = keysDir(); err != nil {
					return err
				}
			}
			priv, pub, err := registry.CreateKey(dir, name)
			if err != nil {
				return err
			}
			k, err := registry.LoadPublicKey(pub)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Private key: %s (keep it secret)\nPublic key:  %s (give it to those who pull your patterns)\nKey id:      %s\n", priv, pub, k.ID())
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "write the keys here instead of the keys directory")
	return cmd
}

func newKeysListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the keys directory: the public keys trusted, and which have their private key here",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := keysDir()
			if err != nil {
				return err
			}
			keys, err := registry.LoadPublicKeys(dir)
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Keys directory: %s\n", dir)
			if len(keys) == 0 && err == nil {
				fmt.Fprintln(out, "No keys yet: make one with inrun keys create.")
				return nil
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKEY ID\tSIGNS")
			for _, k := range keys {
				base := strings.TrimSuffix(k.Source, registry.PublicKeyExt)
				signs := "no (trusted only)"
				if _, err := os.Stat(base + registry.PrivateKeyExt); err == nil {
					signs = "yes"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", filepath.Base(base), k.ID(), signs)
			}
			w.Flush()
			return err
		},
	}
}

// trustedKeys returns the keys given with --key, or else every public key
// of the keys directory.
func trustedKeys(files []string) ([]registry.PublicKey, error) {
	if len(files) > 0 {
		var keys []registry.PublicKey
		for _, f := range files {
			k, err := registry.LoadPublicKey(f)
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
		return keys, nil
	}
	dir, err := keysDir()
	if err != nil {
		return nil, err
	}
	return registry.LoadPublicKeys(dir)
}

// signer reads the private key --key names: a file, or a name in the keys
// directory; with none, the keys directory's only private key.
func signer(key string) (*registry.Signer, error) {
	dir, err := keysDir()
	if err != nil {
		return nil, err
	}
	if key == "" {
		matches, _ := filepath.Glob(filepath.Join(dir, "*"+registry.PrivateKeyExt))
		switch len(matches) {
		case 0:
			return nil, fmt.Errorf("no private key in %s to sign the proof with; make one with inrun keys create, or pass --key FILE", dir)
		case 1:
			key = matches[0]
		default:
			return nil, fmt.Errorf("%s holds %d private keys; say which signs with --key NAME", dir, len(matches))
		}
	} else if !strings.ContainsRune(key, filepath.Separator) && !strings.HasSuffix(key, registry.PrivateKeyExt) {
		key = filepath.Join(dir, key+registry.PrivateKeyExt)
	}
	return registry.LoadSigner(key)
}

// registryFlags reach a registry.
type registryFlags struct {
	plainHTTP bool
}

func (f *registryFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.plainHTTP, "plain-http", false, "talk HTTP, not HTTPS, to the registry (the default for localhost and loopback addresses)")
}

// open returns the registry of ref, checked to answer.
func (f *registryFlags) open(ctx context.Context, host string) (registry.Registry, error) {
	if dir, ok := registry.IsLayoutRegistry(host); ok {
		return registry.OpenLayoutDir(ctx, dir)
	}
	reg := registry.NewRemote(host)
	reg.PlainHTTP = reg.PlainHTTP || f.plainHTTP
	return reg, reg.Reachable(ctx)
}

func newPushCommand() *cobra.Command {
	var (
		path, key, description string
		assetsDir              string
		buildAssets, verbose   bool
		reg                    registryFlags
	)
	cmd := &cobra.Command{
		Use:   "push REGISTRY/[NAMESPACE/]NAME:VERSION",
		Short: "Test a Blueprint, then push it as a pattern with the signed proof that it passed",
		Long: `Push shares a Blueprint as a pattern: an OCI artifact that carries the
Blueprint, the files it names, its tests (test/) and its README, and beside
it, as an OCI referrer, a signed proof that those tests passed.

Push is gated. It first collects the pattern's files (the Blueprint, the
files it names, and the rest of its directory but hidden files and what
inrun build and inrun install generated there), then runs its simulate
cases (test/simulate.yaml) and its e2e cases (test/e2e.yaml, on a local
control plane started for the run) on exactly those files, in a fresh
directory. Without both passing, with at least one case each, nothing is
pushed. The proof is an in-toto Statement whose subject is the pattern's
digest and whose predicate records the results (cases, passes, the Inrun
and Kubernetes versions, durations), in a DSSE envelope signed with your
ed25519 key (inrun keys create; --key).

Everything is pushed by digest first; the version tag comes last, so a push
that fails part way leaves nothing that is found by its version. A version
that already names another pattern is refused: publish a new version. The
namespace's index (NAMESPACE/` + registry.IndexRepository + `:` + registry.IndexTag + `), which inrun patterns reads, is
updated last.

Registry credentials are those of docker login or oras login. The format is
in docs/registry.md; plain oras and crane can read and copy patterns.

` + registryNotYet,
		Example: `  inrun keys create
  inrun push localhost:5000/patterns/website:1.0.0
  inrun push localhost:5000/team/website:1.1.0 --key team --description "A Website"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			ref, err := registry.ParseReference(args[0])
			if err != nil {
				return err
			}
			if ref.Reference == "" || strings.Contains(ref.Reference, ":") {
				return fmt.Errorf("%s names no version; push it as %s:VERSION, such as %s:1.0.0", args[0], ref, ref)
			}
			sign, err := signer(key)
			if err != nil {
				return err
			}
			// Before any test runs: a wrong host should not cost a
			// cluster's start.
			r, err := reg.open(ctx, ref.Registry)
			if err != nil {
				return err
			}
			files, err := gate.Collect(path)
			if err != nil {
				return err
			}
			p := &registry.Pattern{Name: ref.Name(), Version: ref.Reference, Description: description, InrunVersion: registry.InrunVersion(), Files: files}
			// Collect compiled it already; this reads its lifecycle.
			bp, err := compiler.Compile(p.Source(ref.String()), compiler.Options{})
			if err != nil {
				return err
			}
			p.Deprecation = registry.DeprecationOf(bp)
			if err := p.Validate(); err != nil {
				return err
			}
			// A version taken is refused before the tests, not after.
			if err := registry.VersionFree(ctx, r, ref, p); err != nil {
				return err
			}
			fmt.Fprintf(out, "Pattern %s: %s\n", ref, strings.Join(slices.Sorted(maps.Keys(files)), ", "))
			if d := p.Deprecation; d != nil {
				fmt.Fprintf(out, "Deprecated %s: %s\n", deprecationScope(d), d)
			}

			log := logr.Discard()
			if verbose {
				log = zap.New(zap.UseDevMode(true), zap.WriteTo(cmd.ErrOrStderr()))
			}
			ctrllog.SetLogger(log)
			results, err := gate.Test(ctx, files, gate.Options{Out: out, AssetsDir: assetsDir, BuildAssets: buildAssets, Log: log})
			if assets.IsMissing(err) {
				return fmt.Errorf("%w\nor let inrun push build them first: inrun push --build-assets", err)
			}
			if err != nil {
				return err
			}
			if err := results.Check(); err != nil {
				return fmt.Errorf("not pushing %s: %v; fix the failing cases and push again", ref, err)
			}
			pushed, err := registry.Push(ctx, r, ref, p, registry.PushOptions{Signer: sign, Results: results})
			if err != nil {
				// The tag goes last: nothing is found by the version yet.
				return fmt.Errorf("%w\nnothing is found by %s yet (the version is tagged last): push it again, which tests again and sends only what the registry lacks", err, ref)
			}
			fmt.Fprintf(out, "Pushed %s\n  pattern %s\n  proof   %s (simulate %d/%d, e2e %d/%d, key %s)\n",
				pushed.Reference, pushed.Pattern.Digest, pushed.Proof.Digest,
				results.Simulate.Passed, results.Simulate.Cases, results.E2E.Passed, results.E2E.Cases, sign.Public().ID())
			if pushed.IndexErr != nil {
				return fmt.Errorf("the pattern is pushed and verifies, but the index was not updated, so inrun patterns does not list it yet: %w; push it again to retry", pushed.IndexErr)
			}
			return nil
		},
	}
	addBlueprintFlag(cmd, &path)
	fl := cmd.Flags()
	fl.StringVar(&key, "key", "", "the private key that signs the proof: a file, or a NAME in the keys directory (default: its only key)")
	fl.StringVar(&description, "description", "", "one line saying what the pattern makes")
	fl.StringVar(&assetsDir, "assets-dir", "", "the local control plane's binaries (default: the per-version cache directory)")
	fl.BoolVar(&buildAssets, "build-assets", false, "build the local control plane's binaries first when they are missing (about 10 minutes the first time)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "print the runtime's logs during e2e on stderr")
	reg.register(cmd)
	return cmd
}

func newPatternsCommand() *cobra.Command {
	var (
		f         fetchFlags
		stackFile string
	)
	cmd := &cobra.Command{
		Use:   "patterns REGISTRY[/NAMESPACE] | --stack FILE",
		Short: "List the patterns of a registry namespace, or resolve a Stack's",
		Long: `Patterns lists what inrun push pushed to a registry namespace, newest version
first, from the index push keeps there (NAMESPACE/` + registry.IndexRepository + `:` + registry.IndexTag + `): registries
often turn their _catalog off. A version that lifecycle.deprecation covers
is marked [deprecated], and the deprecation is printed below the list. The
index only lists; inspect and pull verify what they read.

With --stack, patterns resolves a Stack instead: for each of its patterns,
the newest version in its registry namespace that meets its constraint,
read by digest and verified (its proof, signed by a trusted key), and
judged against its deprecation. A deprecated version that the Stack does
not accept, whose acceptance has lapsed, or whose publisher's after date
has passed is refused, naming the replacement. Every problem is listed at
once, and patterns exits 1. The Stack format is in docs/registry.md.

` + registryNotYet,
		Example: `  inrun patterns localhost:5000/patterns
  inrun patterns --stack stack.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if stackFile != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if stackFile != "" {
				return resolveStack(cmd, stackFile, &f)
			}
			host, namespace, _ := strings.Cut(strings.TrimSuffix(args[0], "/"), "/")
			if _, ok := registry.IsLayoutRegistry(args[0]); ok {
				host, namespace = args[0], ""
			}
			r, err := f.open(cmd.Context(), host)
			if err != nil {
				return err
			}
			idx, err := registry.ReadIndex(cmd.Context(), r, namespace)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(idx.Patterns) == 0 {
				fmt.Fprintf(out, "No patterns in %s yet: push one with inrun push %s/NAME:VERSION.\n", args[0], strings.TrimSuffix(args[0], "/"))
				return nil
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tVERSIONS\tDESCRIPTION")
			var notes []string
			for _, p := range idx.Patterns {
				var versions []string
				for _, v := range p.NewestFirst() {
					s := v.Version
					if d := p.Deprecation(v.Version); d != nil {
						s += " [deprecated]"
						notes = append(notes, fmt.Sprintf("%s %s is deprecated: %s", p.Name, v.Version, d))
					}
					versions = append(versions, s)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", p.Name, strings.Join(versions, ", "), p.Description)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(notes) > 0 {
				fmt.Fprintf(out, "\n%s\n", strings.Join(notes, "\n"))
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&stackFile, "stack", "", "resolve the patterns of this Stack file instead: each to a verified version")
	cmd.Flags().BoolVar(&f.allowUnverified, "allow-unverified", false, "with --stack, resolve a pattern whose proof does not verify, with a warning")
	return cmd
}

// resolveStack prints what each pattern of the Stack at file resolves to.
func resolveStack(cmd *cobra.Command, file string, f *fetchFlags) error {
	s, err := stack.ReadFile(file)
	if err != nil {
		return err
	}
	trusted, err := trustedKeys(f.keys)
	if err != nil {
		return err
	}
	resolved, err := stack.Resolve(cmd.Context(), s, stack.Options{
		Open:            f.open,
		Trusted:         trusted,
		AllowUnverified: f.allowUnverified,
	})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tCONSTRAINT\tVERSION\tDIGEST\tPROOF")
	var notes []string
	for _, r := range resolved {
		proof := "verified, key " + shortID(r.Fetched)
		if r.Fetched.Unverified != nil {
			proof = "NOT VERIFIED"
			notes = append(notes, fmt.Sprintf("WARNING: %s %s: %v", r.Entry.Name, r.Version, r.Fetched.Unverified))
		}
		version := r.Version
		if d := r.Deprecation; d != nil {
			version += " [deprecated]"
			notes = append(notes, fmt.Sprintf("%s %s is deprecated: %s; the Stack accepts it until %s", r.Entry.Name, r.Version, d, r.Until.Format(time.DateOnly)))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Entry.Name, r.Entry.Version, version, r.Fetched.Descriptor.Digest, proof)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintf(out, "\n%s\n", strings.Join(notes, "\n"))
	}
	return nil
}

func shortID(f *registry.Fetched) string {
	if f.Proof == nil {
		return ""
	}
	id := f.Proof.Key.ID()
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// fetchFlags read and verify a pattern.
type fetchFlags struct {
	registryFlags
	keys            []string
	allowUnverified bool
}

func (f *fetchFlags) register(cmd *cobra.Command) {
	f.registryFlags.register(cmd)
	cmd.Flags().StringSliceVar(&f.keys, "key", nil, "verify the proof with this public key file (repeatable; default: every .pub in the keys directory)")
}

func (f *fetchFlags) fetch(ctx context.Context, arg string) (*registry.Fetched, error) {
	fetched, _, err := f.fetchFrom(ctx, arg)
	return fetched, err
}

// fetchFrom is fetch, with the registry (or layout) the pattern came from.
func (f *fetchFlags) fetchFrom(ctx context.Context, arg string) (*registry.Fetched, registry.Registry, error) {
	trusted, err := trustedKeys(f.keys)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := registry.IsLayoutRegistry(arg); ok {
		e, _, err := patternRef(arg)
		if err != nil {
			return nil, nil, err
		}
		dir, _ := registry.IsLayoutRegistry(e.Registry)
		l, err := registry.OpenLayoutDir(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		version := e.Digest
		if version == "" {
			version = e.Version
		}
		if version == "*" {
			return nil, nil, fmt.Errorf("%s names no version; write %s@VERSION (inrun patterns oci:%s lists them)", arg, arg, dir)
		}
		ref, err := l.Reference(ctx, e.Name, version)
		if err != nil {
			return nil, nil, err
		}
		fetched, err := registry.Fetch(ctx, l, ref, registry.FetchOptions{Trusted: trusted})
		return fetched, l, err
	}
	ref, err := registry.ParseReference(arg)
	if err != nil {
		return nil, nil, err
	}
	r, err := f.open(ctx, ref.Registry)
	if err != nil {
		return nil, nil, err
	}
	fetched, err := registry.Fetch(ctx, r, ref, registry.FetchOptions{Trusted: trusted})
	return fetched, r, err
}

func newInspectCommand() *cobra.Command {
	var f fetchFlags
	cmd := &cobra.Command{
		Use:   "inspect REGISTRY/[NAMESPACE/]NAME:VERSION",
		Short: "Show a pattern: its Blueprint, the fields it serves, the RBAC it needs, and its verified proof",
		Long: `Inspect reads a pattern by version or digest (NAME:VERSION or NAME@VERSION,
as inrun run takes it; NAME@sha256:DIGEST), verifies its proof (the
signature by a trusted key, the subject digest, a passing result) and shows
what it holds: its files, the kind its Blueprint reconciles, the fields
callers set, the least-privilege RBAC the runtime needs for it, and the
proof. A pattern that does not verify is shown with the reason, and inspect
exits 1.

` + registryNotYet,
		Example: `  inrun inspect localhost:5000/patterns/website:1.0.0
  inrun inspect localhost:5000/patterns/website:1.0.0 --key publisher.pub`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fetched, reg, err := f.fetchFrom(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			p := fetched.Pattern
			fmt.Fprintf(out, "Pattern:     %s\nDigest:      %s\nName:        %s\nVersion:     %s\n", fetched.Reference, fetched.Descriptor.Digest, p.Name, p.Version)
			if p.Description != "" {
				fmt.Fprintf(out, "Description: %s\n", p.Description)
			}
			fmt.Fprintf(out, "Pushed by:   Inrun %s\nFiles:       %s\n", p.InrunVersion, strings.Join(slices.Sorted(maps.Keys(p.Files)), ", "))
			// A later push may deprecate this version: inrun run judges
			// what the index says too.
			var ip *registry.IndexPattern
			if idx, err := registry.ReadIndex(cmd.Context(), reg, fetched.Reference.Namespace()); err == nil {
				if i := slices.IndexFunc(idx.Patterns, func(x registry.IndexPattern) bool { return x.Name == p.Name }); i >= 0 {
					ip = &idx.Patterns[i]
				}
			}
			if d := registry.Covering(ip, p, p.Version); d != nil {
				fmt.Fprintf(out, "Deprecated:  %s (%s)\n", d, deprecationScope(d))
			}
			bp, err := compiler.Compile(p.Source(fetched.Reference.String()), compiler.Options{})
			if err != nil {
				fmt.Fprintf(out, "Blueprint:   does not compile with this Inrun:\n%v\n", err)
			} else {
				fmt.Fprintf(out, "Blueprint:   %s reconciles %s (%s)\n", bp.Name, bp.Resource.GroupVersionKind, bp.Resource.Plural)
				printFields(out, bp.Resource.Schema)
				if bp.Serve != nil {
					fmt.Fprintf(out, "Intent fields (inrun serve, target %s):\n", bp.Serve.Target)
					for _, sf := range bp.Serve.Fields {
						req := ""
						if sf.Required {
							req = ", required"
						}
						fmt.Fprintf(out, "  %s (%v%s)\n", sf.Name, sf.Type, req)
					}
				}
				fmt.Fprintln(out, "RBAC it needs:")
				for _, r := range rbac.Rules(bp) {
					fmt.Fprintf(out, "  %s\n", rbac.Marker(r))
				}
			}
			if fetched.Unverified != nil {
				fmt.Fprintf(out, "Proof:       NOT VERIFIED: %v\n", fetched.Unverified)
				return errReported
			}
			res := fetched.Proof.Results
			fmt.Fprintf(out, "Proof:       verified, %s\n  signed by   %s (%s)\n  simulate    %d/%d cases passed in %s (%s)\n  e2e         %d/%d cases passed in %s (%s) on Kubernetes %s\n  tested by   Inrun %s, %s\n",
				fetched.Proof.Descriptor.Digest, fetched.Proof.Key.ID(), fetched.Proof.Key.Source,
				res.Simulate.Passed, res.Simulate.Cases, res.Simulate.Duration, res.Simulate.File,
				res.E2E.Passed, res.E2E.Cases, res.E2E.Duration, res.E2E.File, res.KubernetesVersion,
				res.InrunVersion, res.Finished.Format("2006-01-02 15:04:05 MST"))
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// deprecationScope says which versions a deprecation covers.
func deprecationScope(d *registry.Deprecation) string {
	switch d.Versions {
	case "":
		return "this version"
	case "*":
		return "every version of the pattern"
	}
	return "versions " + d.Versions
}

// printFields lists the spec fields of a custom resource's schema: what a
// user of the pattern writes.
func printFields(out io.Writer, schema *apiextensionsv1.JSONSchemaProps) {
	if schema == nil {
		return
	}
	spec, ok := schema.Properties["spec"]
	if !ok || len(spec.Properties) == 0 {
		return
	}
	required := map[string]bool{}
	for _, r := range spec.Required {
		required[r] = true
	}
	fmt.Fprintln(out, "Spec fields:")
	for _, name := range slices.Sorted(maps.Keys(spec.Properties)) {
		f := spec.Properties[name]
		note := f.Type
		if required[name] {
			note += ", required"
		}
		if f.Default != nil {
			note += ", default " + string(f.Default.Raw)
		}
		fmt.Fprintf(out, "  spec.%s (%s)", name, note)
		if f.Description != "" {
			fmt.Fprintf(out, ": %s", f.Description)
		}
		fmt.Fprintln(out)
	}
}

func newPullCommand() *cobra.Command {
	var (
		f   fetchFlags
		dir string
	)
	cmd := &cobra.Command{
		Use:   "pull REGISTRY/[NAMESPACE/]NAME:VERSION",
		Short: "Verify a pattern and write its files to a directory",
		Long: `Pull reads a pattern by version or digest (NAME:VERSION or NAME@VERSION,
as inrun run takes it; NAME@sha256:DIGEST), verifies its proof (the signature
by a trusted key, the subject digest, a passing result) and writes its
files, the Blueprint, the files it names, test/ and README.md, to a new
directory (default: the pattern's name). A pattern that does not verify is
refused unless --allow-unverified. Nothing is written over an existing
file.

` + registryNotYet,
		Example: `  inrun pull localhost:5000/patterns/website:1.0.0
  inrun pull localhost:5000/patterns/website@sha256:... -o website`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fetched, err := f.fetch(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if fetched.Unverified != nil && !f.allowUnverified {
				return fmt.Errorf("refusing %s: %w\n(--allow-unverified writes it anyway)", fetched.Reference, fetched.Unverified)
			}
			if dir == "" {
				dir = fetched.Pattern.Name
			}
			if err := writeFiles(dir, fetched.Pattern.Files); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if fetched.Unverified != nil {
				fmt.Fprintf(out, "WARNING: %v\n", fetched.Unverified)
			} else {
				fmt.Fprintf(out, "Verified %s (%s), signed by %s\n", fetched.Reference, fetched.Descriptor.Digest, fetched.Proof.Key.ID())
			}
			fmt.Fprintf(out, "Wrote %d files to %s\n", len(fetched.Pattern.Files), dir)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVarP(&dir, "output", "o", "", "the directory to write (default: the pattern's name)")
	cmd.Flags().BoolVar(&f.allowUnverified, "allow-unverified", false, "write a pattern whose proof does not verify, with a warning")
	return cmd
}

// writeFiles writes files under dir, refusing to replace any.
func writeFiles(dir string, files map[string][]byte) error {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s already exists; pull into another directory with -o", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
