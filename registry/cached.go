package registry

import (
	"bytes"
	"context"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// ReadThrough returns reg with content read from cache when cache holds
// it: manifests and blobs are addressed by digest, so a copy in the cache
// is the same bytes, and every reader checks them against the digest
// anyway. Tags, referrers and what the cache lacks come from reg, so a
// version's digest, its proofs and the index are as the registry has them
// now; only the bytes already fetched once are not fetched again.
func ReadThrough(reg, cache Registry) Registry { return readThrough{reg: reg, cache: cache} }

type readThrough struct{ reg, cache Registry }

func (r readThrough) Repository(ctx context.Context, name string) (Target, error) {
	remote, err := r.reg.Repository(ctx, name)
	if err != nil {
		return nil, err
	}
	cached, err := r.cache.Repository(ctx, name)
	if err != nil {
		return remote, nil
	}
	return &readThroughTarget{Target: remote, cache: cached}, nil
}

type readThroughTarget struct {
	Target
	cache Target
}

// Fetch reads desc from the cache when the cache holds it whole and
// intact, else from the registry: a copy damaged on disk costs a fetch,
// not a refusal of a pattern the registry holds intact, and is replaced
// by the registry's once that verifies.
func (t *readThroughTarget) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if ok, err := t.cache.Exists(ctx, desc); err == nil && ok {
		if data, ok := t.intact(ctx, desc); ok {
			return io.NopCloser(bytes.NewReader(data)), nil
		}
		if r, ok := t.cache.(replacer); ok {
			return t.repair(ctx, desc, r)
		}
	}
	return t.Target.Fetch(ctx, desc)
}

// replacer is a cache that can replace a damaged copy in place.
type replacer interface {
	replace(desc ocispec.Descriptor, data []byte) error
}

// repair reads desc from the registry and, when it verifies, writes it
// over the cache's damaged copy. A copy that cannot be written is read
// from the registry again next time; the fetch still succeeds.
func (t *readThroughTarget) repair(ctx context.Context, desc ocispec.Descriptor, r replacer) (io.ReadCloser, error) {
	rc, err := t.Target.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, err
	}
	_ = r.replace(desc, data)
	return io.NopCloser(bytes.NewReader(data)), nil
}

// intact returns the cache's copy of desc when it has desc's size and
// digest.
func (t *readThroughTarget) intact(ctx context.Context, desc ocispec.Descriptor) ([]byte, bool) {
	rc, err := t.cache.Fetch(ctx, desc)
	if err != nil {
		return nil, false
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, desc.Size+1))
	if err != nil || int64(len(data)) != desc.Size || desc.Digest.Validate() != nil || desc.Digest.Algorithm().FromBytes(data) != desc.Digest {
		return nil, false
	}
	return data, true
}
