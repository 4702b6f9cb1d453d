package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	orasregistry "oras.land/oras-go/v2/registry"
)

// FetchOptions configures Fetch.
type FetchOptions struct {
	// Trusted are the keys a proof may be signed with.
	Trusted []PublicKey
}

// Fetched is a pattern read from a registry, and what its proofs say.
type Fetched struct {
	Reference  Reference
	Descriptor ocispec.Descriptor
	Pattern    *Pattern
	// Proof is the first proof that verifies; nil when none does.
	Proof *Proof
	// Unverified says why no proof verifies; nil when one does.
	Unverified error
}

// Fetch resolves ref to a digest, reads the pattern there (every blob
// checked against its digest) and verifies its proofs. A pattern that
// cannot be read is an error; one that reads but does not verify comes
// back with Unverified set, for the caller to refuse or, when told to,
// show.
func Fetch(ctx context.Context, reg Registry, ref Reference, opts FetchOptions) (*Fetched, error) {
	if ref.Reference == "" {
		return nil, fmt.Errorf("%s names no version; write %s:VERSION, or list the versions with inrun patterns %s", ref, ref, strings.TrimSuffix(ref.Registry+"/"+ref.Namespace(), "/"))
	}
	src, err := reg.Repository(ctx, ref.Repository)
	if err != nil {
		return nil, err
	}
	desc, err := src.Resolve(ctx, ref.Reference)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("%s not found; list the patterns and versions with inrun patterns %s", ref, strings.TrimSuffix(ref.Registry+"/"+ref.Namespace(), "/"))
	}
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", ref, err)
	}
	p, err := ReadPattern(ctx, src, desc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	f := &Fetched{Reference: ref, Descriptor: desc, Pattern: p}
	f.Proof, f.Unverified = VerifyProofs(ctx, src, desc, opts.Trusted)
	// A tag is mutable, the version inside the pattern is not: a tag moved
	// to another signed version (an older one, with a known flaw) is
	// caught here.
	if f.Unverified == nil && !strings.Contains(ref.Reference, ":") && p.Version != ref.Reference {
		f.Proof, f.Unverified = nil, &VerifyError{Subject: desc.Digest,
			Reason: fmt.Sprintf("the tag %s points at version %s of the pattern", ref.Reference, p.Version),
			Hint:   "someone moved the tag; ask the publisher, or use the version the pattern says, by digest"}
	}
	return f, nil
}

// VerifyProofs finds the proofs of the pattern manifest desc in src and
// returns the first that verifies. Each referrer is fetched and its
// subject compared with desc: where a registry lacks the referrers API,
// the list comes from a tag anyone may push to, so the list itself is not
// trusted. The error lists why each proof failed.
func VerifyProofs(ctx context.Context, src Target, desc ocispec.Descriptor, trusted []PublicKey) (*Proof, error) {
	// All referrers, not those the registry says are proofs: registries
	// disagree on a referrer's artifactType (go-containerregistry's gives
	// the config's media type), and the manifest itself is what counts.
	referrers, err := orasregistry.Referrers(ctx, src, desc, "")
	if err != nil {
		return nil, &VerifyError{Subject: desc.Digest, Reason: fmt.Sprintf("listing its proofs: %v", err)}
	}
	if len(referrers) > maxReferrers {
		referrers = referrers[:maxReferrers]
	}
	var errs []error
	for _, r := range referrers {
		proof, err := verifyProof(ctx, src, desc, r, trusted)
		if errors.Is(err, errNotProof) {
			continue
		}
		if err == nil {
			return proof, nil
		}
		errs = append(errs, err)
	}
	switch len(errs) {
	case 0:
		return nil, &VerifyError{Subject: desc.Digest, Reason: "it has no proof", Hint: "push it with inrun push, which runs its tests and pushes the proof with it"}
	case 1:
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// maxReferrers bounds the referrers read for one pattern, so that a
// repository flooded with them cannot stall a pull.
const maxReferrers = 64

// errNotProof marks a referrer that is not an Inrun proof (a signature or
// an SBOM of another tool): not an error, just not ours.
var errNotProof = errors.New("not a proof")

func verifyProof(ctx context.Context, src content.Fetcher, subject, desc ocispec.Descriptor, trusted []PublicKey) (*Proof, error) {
	fail := func(reason string) error {
		return &VerifyError{Subject: subject.Digest, Reason: fmt.Sprintf("proof %s: %s", desc.Digest, reason), Hint: "push the pattern again with inrun push"}
	}
	m, err := fetchManifest(ctx, src, desc)
	if err != nil {
		return nil, fail(err.Error())
	}
	switch {
	case m.Subject == nil:
		return nil, fail("it names no subject")
	case m.Subject.Digest != subject.Digest:
		return nil, fail(fmt.Sprintf("it is listed as a referrer but its subject is %s", m.Subject.Digest))
	case m.ArtifactType != MediaTypeProof:
		return nil, errNotProof
	case len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeDSSE:
		return nil, fail("it does not hold exactly one DSSE envelope")
	case m.Layers[0].Size > maxManifest:
		return nil, fail("its envelope is too large")
	}
	envelope, err := content.FetchAll(ctx, src, m.Layers[0])
	if err != nil {
		return nil, fail(fmt.Sprintf("reading its envelope: %v", err))
	}
	results, key, err := Verify(envelope, subject.Digest, trusted)
	if err != nil {
		var v *VerifyError
		if errors.As(err, &v) {
			v.Reason = fmt.Sprintf("proof %s: %s", desc.Digest, v.Reason)
		}
		return nil, err
	}
	return &Proof{Descriptor: desc, Results: results, Key: key}, nil
}
