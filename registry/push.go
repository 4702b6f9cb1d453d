package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
)

// PushOptions configures Push.
type PushOptions struct {
	// Signer signs the proof. Required.
	Signer *Signer
	// Results are what the pattern passed. Push refuses a failing one.
	Results Results
	// SimulateOnly pushes a pattern whose Results are SimulateOnly: e2e
	// did not run. Its proof says so, and does not verify; inrun --dev
	// publishes the built-in patterns so, to have them at once.
	SimulateOnly bool
	// SkipIndex leaves the registry's index as it is.
	SkipIndex bool
	// Now stamps the index entry. Defaults to time.Now.
	Now func() time.Time
}

// Pushed is what Push wrote.
type Pushed struct {
	// Pattern and Proof are the two manifests' descriptors.
	Pattern, Proof ocispec.Descriptor
	// Reference is the pattern's, by tag.
	Reference Reference
	// IndexErr is why the index could not be updated, when it could not:
	// the pattern is pushed and verifies, but inrun patterns does not
	// list it yet.
	IndexErr error
}

// VersionFree returns an error when ref's repository in reg has p's
// version naming another pattern already, which Push would refuse: a
// caller checks it before the tests that come before Push.
func VersionFree(ctx context.Context, reg Registry, ref Reference, p *Pattern) error {
	pattern, err := Pack(ctx, memory.New(), p)
	if err != nil {
		return err
	}
	dst, err := reg.Repository(ctx, ref.Repository)
	if err != nil {
		return err
	}
	return versionFree(ctx, dst, ref, p.Version, pattern)
}

func versionFree(ctx context.Context, dst Target, ref Reference, version string, pattern ocispec.Descriptor) error {
	tagged := ref
	tagged.Reference = version
	switch old, err := dst.Resolve(ctx, version); {
	case err == nil && old.Digest != pattern.Digest:
		return fmt.Errorf("%s already names another pattern (%s): its files, or its description, differ from this one's; a published version never changes: push this one as a new version", tagged, old.Digest)
	case err != nil && !errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("reading %s: %w", tagged, err)
	}
	return nil
}

// Push packs p, signs its proof, and pushes both to repository repo of reg,
// then tags the pattern with its version and updates the index.
//
// The order keeps a failed push from looking valid: blobs and both
// manifests go by digest, and only when all are in does the version tag
// point at the pattern. A version that already names another pattern is
// refused: a published version never changes under its users.
func Push(ctx context.Context, reg Registry, ref Reference, p *Pattern, opts PushOptions) (*Pushed, error) {
	if opts.Signer == nil {
		return nil, errors.New("pushing a pattern needs a key to sign its proof; make one with inrun keys create")
	}
	if err := opts.Results.Check(); err != nil && !(opts.SimulateOnly && opts.Results.SimulateOnly()) {
		return nil, fmt.Errorf("refusing to push %s:%s: its tests did not pass: %v", p.Name, p.Version, err)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	mem := memory.New()
	pattern, err := Pack(ctx, mem, p)
	if err != nil {
		return nil, err
	}
	envelope, err := Sign(opts.Signer, pattern, ref.Repository+":"+p.Version, opts.Results)
	if err != nil {
		return nil, err
	}
	proof, err := packProof(ctx, mem, pattern, envelope)
	if err != nil {
		return nil, err
	}

	dst, err := reg.Repository(ctx, ref.Repository)
	if err != nil {
		return nil, err
	}
	tagged := ref
	tagged.Reference = p.Version
	if err := versionFree(ctx, dst, ref, p.Version, pattern); err != nil {
		return nil, err
	}
	for _, root := range []ocispec.Descriptor{pattern, proof} {
		if err := oras.CopyGraph(ctx, mem, dst, root, oras.DefaultCopyGraphOptions); err != nil {
			return nil, fmt.Errorf("pushing to %s: %w", tagged, err)
		}
	}
	if err := dst.Tag(ctx, pattern, p.Version); err != nil {
		return nil, fmt.Errorf("tagging %s: %w", tagged, err)
	}
	out := &Pushed{Pattern: pattern, Proof: proof, Reference: tagged}
	if !opts.SkipIndex {
		out.IndexErr = UpdateIndex(ctx, reg, ref.Namespace(), IndexEntry{
			Name:         p.Name,
			Repository:   ref.Repository,
			Description:  p.Description,
			Version:      p.Version,
			Digest:       pattern.Digest.String(),
			InrunVersion: p.InrunVersion,
			Deprecation:  p.Deprecation,
			Pushed:       opts.Now().UTC().Truncate(time.Second),
		})
	}
	return out, nil
}
