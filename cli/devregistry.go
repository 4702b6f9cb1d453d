package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"

	"oras.land/oras-go/v2/content/memory"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localregistry"
	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/registry"
	"github.com/inrun/inrun/registry/gate"
)

const (
	// devRegistryAddress is where inrun --dev's registry listens when the
	// port is free, so that the addresses in a Stack or a README hold
	// from one run to the next.
	devRegistryAddress = "127.0.0.1:5000"
	// devRegistryDir keeps its content in the project, beside the
	// kubeconfig: what you push survives a restart.
	devRegistryDir = ".inrun/registry"
	// BuiltinNamespace is the namespace the built-in patterns are
	// published to.
	builtinNamespace = "inrun"
	// builtinVersion is a built-in pattern's version when its directory
	// does not name one.
	builtinVersion = "1.0.0"
)

// startDevRegistry starts inrun --dev's local registry, with its content
// in dir, and publishes the built-in patterns to it. A missing registry
// binary is built when build is set (the local control plane is about to
// be built anyway); otherwise the registry is left out, with a note.
// stop is never nil.
func startDevRegistry(ctx context.Context, out io.Writer, dir string, build bool) (reg *localregistry.Registry, stop func(), err error) {
	stop = func() {}
	storage, err := filepath.Abs(dir)
	if err != nil {
		return nil, stop, err
	}
	opts := localregistry.Options{StorageDir: storage, Address: devRegistryAddress}
	reg, err = localregistry.Start(ctx, opts)
	if assets.IsMissing(err) && build {
		if _, err = assets.Ensure(ctx, assets.Options{Progress: out}); err == nil {
			reg, err = localregistry.Start(ctx, opts)
		}
	}
	if assets.IsMissing(err) {
		fmt.Fprintf(out, "No local pattern registry: %v\n", err)
		return nil, stop, nil
	}
	if err != nil {
		return nil, stop, fmt.Errorf("starting the local pattern registry: %w", err)
	}
	stop = func() { _ = reg.Stop() }
	sign, made, err := devSigner()
	if err != nil {
		stop()
		return nil, func() {}, err
	}
	if made != "" {
		fmt.Fprintf(out, "Made a key to sign proofs with: %s (inrun keys list shows it).\n", made)
	}
	n, err := publishBuiltins(ctx, registry.NewRemote(reg.Host), reg.Host, sign, out)
	if err != nil {
		stop()
		return nil, func() {}, err
	}
	fmt.Fprintf(out, "Local pattern registry at %s (its content in %s); %d built-in patterns in %s/%s, with proofs of simulate only (inrun run needs --allow-unverified for them).\n",
		reg.Host, dir, n, reg.Host, builtinNamespace)
	fmt.Fprintf(out, "\n  export INRUN_REGISTRY=%s\n  inrun patterns %s/%s\n\n", reg.Host, reg.Host, builtinNamespace)
	return reg, stop, nil
}

// devSigner returns the key the built-in patterns' proofs are signed
// with: the keys directory's own (publisher when there are several), or
// a new publisher key when it has none, whose path it returns.
func devSigner() (s *registry.Signer, made string, err error) {
	dir, err := keysDir()
	if err != nil {
		return nil, "", err
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*"+registry.PrivateKeyExt))
	switch len(matches) {
	case 0:
		if made, _, err = registry.CreateKey(dir, "publisher"); err != nil {
			return nil, "", err
		}
		s, err = registry.LoadSigner(made)
		return s, made, err
	case 1:
		s, err = registry.LoadSigner(matches[0])
		return s, "", err
	}
	s, err = registry.LoadSigner(filepath.Join(dir, "publisher"+registry.PrivateKeyExt))
	if errors.Is(err, os.ErrNotExist) {
		s, err = registry.LoadSigner(matches[0])
	}
	return s, "", err
}

// versioned reads an example directory named NAME-VERSION, such as the
// registry pack's homepage-1.0.0.
var versioned = regexp.MustCompile(`^(.+)-(\d+\.\d+\.\d+)$`)

// builtinPattern names the pattern an example is published as: its
// directory's name (the pack's, for a pack that is one example), and
// version builtinVersion unless the directory names one.
func builtinPattern(pack, example string) (name, version string) {
	name, version = pack, builtinVersion
	if example != "." {
		name = path.Base(example)
	}
	if m := versioned.FindStringSubmatch(name); m != nil {
		name, version = m[1], m[2]
	}
	return name, version
}

// publishBuiltins pushes every example of every pack to namespace
// builtinNamespace of reg, as pattern builtinPattern, after its simulate
// cases pass on exactly the files pushed; e2e is not run (it needs a
// control plane and about a minute per example), and the proof says so.
// A version already there with the same digest is left alone, so a
// restart adds nothing; one that differs (another Inrun's examples) is
// kept, with a note. It returns how many patterns are there.
func publishBuiltins(ctx context.Context, reg registry.Registry, host string, sign *registry.Signer, out io.Writer) (int, error) {
	tmp, err := os.MkdirTemp("", "inrun-builtins-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	n := 0
	for _, p := range packs.List() {
		dir := filepath.Join(tmp, p.Name)
		if err := packs.Copy(p.Name, dir, packs.CopyOptions{}); err != nil {
			return n, err
		}
		for _, ex := range packs.Examples(p.Name) {
			if packs.GoModule(p.Name, ex) {
				continue // names Go code: only an inrun built with it runs it
			}
			name, version := builtinPattern(p.Name, ex)
			ref, err := registry.ParseReference(host + "/" + builtinNamespace + "/" + name + ":" + version)
			if err != nil {
				return n, err
			}
			where := "inrun init --pack " + p.Name
			if ex != "." {
				where += ", " + ex + "/"
			}
			published, err := publishBuiltin(ctx, reg, ref, filepath.Join(dir, filepath.FromSlash(ex), "blueprint.yaml"), where, sign)
			if err != nil {
				fmt.Fprintf(out, "Not publishing %s (%s/%s): %v\n", ref, p.Name, ex, err)
				continue
			}
			if published {
				n++
			}
		}
	}
	return n, nil
}

// publishBuiltin pushes the example at blueprint as ref, described as
// description, unless ref is there already. It reports whether ref is published.
func publishBuiltin(ctx context.Context, reg registry.Registry, ref registry.Reference, blueprint, description string, sign *registry.Signer) (bool, error) {
	files, err := gate.Collect(blueprint)
	if err != nil {
		return false, err
	}
	p := &registry.Pattern{Name: ref.Name(), Version: ref.Reference, Description: description, InrunVersion: registry.InrunVersion(), Files: files}
	bp, err := compiler.Compile(p.Source(ref.String()), compiler.Options{})
	if err != nil {
		return false, err
	}
	p.Deprecation = registry.DeprecationOf(bp)
	// The digest, to find whether it is there already.
	desc, err := registry.Pack(ctx, memory.New(), p)
	if err != nil {
		return false, err
	}
	repo, err := reg.Repository(ctx, ref.Repository)
	if err != nil {
		return false, err
	}
	if old, err := repo.Resolve(ctx, ref.Reference); err == nil {
		if old.Digest != desc.Digest {
			return true, fmt.Errorf("%s holds another pattern (%s), kept as it is", ref, old.Digest)
		}
		return true, nil
	}
	results, err := gate.Test(ctx, files, gate.Options{SkipE2E: true})
	if err != nil {
		return false, err
	}
	if !results.SimulateOnly() {
		return false, fmt.Errorf("its simulate cases did not pass (%d of %d)", results.Simulate.Passed, results.Simulate.Cases)
	}
	_, err = registry.Push(ctx, reg, ref, p, registry.PushOptions{Signer: sign, Results: results, SimulateOnly: true})
	return err == nil, err
}
