package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
	orasregistry "oras.land/oras-go/v2/registry"
)

// The index: one artifact per namespace, in its repository IndexRepository
// under the tag IndexTag, that lists the patterns pushed there. Registries
// often turn _catalog off, so Inrun keeps its own list, and push updates
// it. The index only lists: Fetch never trusts it, and verifies what it
// reads by digest.
const (
	IndexRepository     = "inrun-index"
	IndexTag            = "latest"
	MediaTypeIndex      = "application/vnd.inrun.index.v1"
	MediaTypeIndexLayer = "application/vnd.inrun.index.v1+json"
)

// Index lists the patterns of a namespace.
type Index struct {
	Patterns []IndexPattern `json:"patterns"`
}

// IndexPattern is one pattern and its versions, newest push first.
type IndexPattern struct {
	Name        string         `json:"name"`
	Repository  string         `json:"repository"`
	Description string         `json:"description,omitempty"`
	Versions    []IndexVersion `json:"versions"`
}

// NewestFirst returns the pattern's versions, the newest semantic version
// first; tags that are no semantic version come last, in the order they
// were pushed. The index keeps push order.
func (p *IndexPattern) NewestFirst() []IndexVersion {
	out := slices.Clone(p.Versions)
	parsed := map[string]*semver.Version{}
	for _, v := range out {
		if sv, err := semver.NewVersion(v.Version); err == nil {
			parsed[v.Version] = sv
		}
	}
	slices.SortStableFunc(out, func(a, b IndexVersion) int {
		sa, sb := parsed[a.Version], parsed[b.Version]
		switch {
		case sa == nil && sb == nil:
			return 0
		case sa == nil:
			return 1
		case sb == nil:
			return -1
		}
		return sb.Compare(sa)
	})
	return out
}

// IndexVersion is one pushed version.
type IndexVersion struct {
	Version      string    `json:"version"`
	Digest       string    `json:"digest"`
	InrunVersion string    `json:"inrunVersion,omitempty"`
	Pushed       time.Time `json:"pushed"`
	// Deprecation is the version's lifecycle.deprecation, as its manifest
	// carries it.
	Deprecation *Deprecation `json:"deprecation,omitempty"`
}

// IndexEntry is what Push adds to the index.
type IndexEntry struct {
	Name, Repository, Description, Version, Digest, InrunVersion string
	Pushed                                                       time.Time
	Deprecation                                                  *Deprecation
}

// indexRepository is the index's repository in namespace.
func indexRepository(namespace string) string {
	return path.Join(namespace, IndexRepository)
}

// ReadIndex reads the index of namespace in reg. A namespace where nothing
// was pushed has an empty index.
//
// It reads IndexTag, then the entry tags (entryTag) of versions that
// IndexTag does not list: registries cannot replace a tag only if it is
// unchanged, so two pushes at once can each rewrite IndexTag from what
// they read, and the last drops the other's version there; never from its
// own entry tag, which only a push of that version writes.
func ReadIndex(ctx context.Context, reg Registry, namespace string) (*Index, error) {
	if ix, ok := reg.(Indexer); ok {
		return ix.Index(ctx, namespace)
	}
	repo, err := reg.Repository(ctx, indexRepository(namespace))
	if err != nil {
		return nil, err
	}
	idx, _, err := readMerged(ctx, repo)
	return idx, err
}

// readMerged is ReadIndex of the index repository repo. It also returns
// the descriptor IndexTag named.
func readMerged(ctx context.Context, repo Target) (*Index, ocispec.Descriptor, error) {
	idx, desc, err := readIndex(ctx, repo, IndexTag)
	if err != nil {
		return nil, desc, err
	}
	lister, ok := repo.(orasregistry.TagLister)
	if !ok {
		return idx, desc, nil
	}
	known := map[string]bool{}
	for _, p := range idx.Patterns {
		for _, v := range p.Versions {
			known[entryTag(p.Repository, v.Version)] = true
		}
	}
	var missing []string
	err = lister.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if strings.HasPrefix(t, entryTagPrefix) && !known[t] {
				missing = append(missing, t)
			}
		}
		return nil
	})
	if errors.Is(err, errdef.ErrNotFound) || len(idx.Patterns) == 0 && err != nil {
		return idx, desc, nil // nothing pushed, or a registry that lists no tags
	}
	if err != nil {
		return nil, desc, fmt.Errorf("reading the index: %w", err)
	}
	if len(missing) > maxEntries {
		missing = missing[:maxEntries]
	}
	var entries []IndexEntry
	for _, t := range missing {
		one, _, err := readIndex(ctx, repo, t)
		if err != nil {
			return nil, desc, err
		}
		entries = append(entries, one.entries()...)
	}
	// Oldest first, so that the newest push ends first, as add keeps it.
	slices.SortStableFunc(entries, func(a, b IndexEntry) int { return a.Pushed.Compare(b.Pushed) })
	for _, e := range entries {
		idx.add(e)
	}
	if len(entries) > 0 {
		for i := range idx.Patterns {
			slices.SortStableFunc(idx.Patterns[i].Versions, func(a, b IndexVersion) int { return b.Pushed.Compare(a.Pushed) })
		}
	}
	return idx, desc, nil
}

// maxEntries bounds the entry tags ReadIndex reads beside IndexTag, so that
// a repository flooded with them cannot stall a listing.
const maxEntries = 256

// entryTagPrefix starts the tag of each version's own entry.
const entryTagPrefix = "entry-"

// entryTag is the tag of the entry of version of the pattern in
// repository: a hash, as a repository path and a version may hold
// characters or a length a tag may not.
func entryTag(repository, version string) string {
	h := sha256.Sum256([]byte(repository + "\x00" + version))
	return entryTagPrefix + hex.EncodeToString(h[:16])
}

func readIndex(ctx context.Context, repo Target, tag string) (*Index, ocispec.Descriptor, error) {
	desc, err := repo.Resolve(ctx, tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return &Index{}, ocispec.Descriptor{}, nil
	}
	if err != nil {
		return nil, ocispec.Descriptor{}, fmt.Errorf("reading the index: %w", err)
	}
	m, err := fetchManifest(ctx, repo, desc)
	if err != nil {
		return nil, desc, fmt.Errorf("reading the index: %w", err)
	}
	if m.ArtifactType != MediaTypeIndex || len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeIndexLayer {
		return nil, desc, fmt.Errorf("%s:%s is not an Inrun index (artifactType %q)", IndexRepository, tag, m.ArtifactType)
	}
	if m.Layers[0].Size > maxManifest {
		return nil, desc, fmt.Errorf("the index is too large")
	}
	data, err := content.FetchAll(ctx, repo, m.Layers[0])
	if err != nil {
		return nil, desc, fmt.Errorf("reading the index: %w", err)
	}
	var idx Index
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&idx); err != nil {
		return nil, desc, fmt.Errorf("the index is not valid: %w", err)
	}
	return &idx, desc, nil
}

// maxIndexAttempts bounds UpdateIndex's retries when other pushes change
// the index under it.
const maxIndexAttempts = 8

// UpdateIndex adds e to the index of namespace.
//
// It first tags e's own entry (entryTag), which no other push writes, so
// that ReadIndex lists e whatever happens to IndexTag. Then it rewrites
// IndexTag: it reads it (with the entry tags it lacks), adds e, and writes it back only if IndexTag still
// names what it read; after, it reads it again and, when another push
// replaced it in between, starts over. Registries cannot replace a tag on
// a condition, so a write can still land between that check and the tag;
// the entry tag is what keeps the version listed then.
func UpdateIndex(ctx context.Context, reg Registry, namespace string, e IndexEntry) error {
	repo, err := reg.Repository(ctx, indexRepository(namespace))
	if err != nil {
		return err
	}
	one := &Index{}
	one.add(e)
	desc, err := pushIndex(ctx, repo, one)
	if err != nil {
		return err
	}
	if err := repo.Tag(ctx, desc, entryTag(e.Repository, e.Version)); err != nil {
		return fmt.Errorf("pushing the index: %w", err)
	}
	for range maxIndexAttempts {
		// Merged: what an earlier race dropped from IndexTag goes back.
		idx, read, err := readMerged(ctx, repo)
		if err != nil {
			return err
		}
		idx.add(e)
		desc, err := pushIndex(ctx, repo, idx)
		if err != nil {
			return err
		}
		if now, err := repo.Resolve(ctx, IndexTag); err == nil && now.Digest != read.Digest || err != nil && !errors.Is(err, errdef.ErrNotFound) {
			continue // changed since it was read
		}
		if err := repo.Tag(ctx, desc, IndexTag); err != nil {
			return fmt.Errorf("pushing the index: %w", err)
		}
		if after, _, err := readIndex(ctx, repo, IndexTag); err == nil && after.has(e) {
			return nil
		}
	}
	return nil // listed by its entry tag; the next push folds it into IndexTag
}

// pushIndex packs idx as an index artifact into repo and returns its
// manifest's descriptor.
func pushIndex(ctx context.Context, repo oras.Target, idx *Index) (ocispec.Descriptor, error) {
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	mem := memory.New()
	layer := content.NewDescriptorFromBytes(MediaTypeIndexLayer, data)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: "index.json"}
	if err := mem.Push(ctx, layer, bytes.NewReader(data)); err != nil {
		return ocispec.Descriptor{}, err
	}
	desc, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, MediaTypeIndex, oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if err := oras.CopyGraph(ctx, mem, repo, desc, oras.DefaultCopyGraphOptions); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing the index: %w", err)
	}
	return desc, nil
}

// has reports whether idx lists e's version of its pattern, at e's digest.
func (idx *Index) has(e IndexEntry) bool {
	for _, p := range idx.Patterns {
		if p.Repository != e.Repository {
			continue
		}
		for _, v := range p.Versions {
			if v.Version == e.Version && v.Digest == e.Digest {
				return true
			}
		}
	}
	return false
}

// entries are idx's versions as the entries that added them.
func (idx *Index) entries() []IndexEntry {
	var out []IndexEntry
	for _, p := range idx.Patterns {
		for _, v := range p.Versions {
			out = append(out, IndexEntry{Name: p.Name, Repository: p.Repository, Description: p.Description, Version: v.Version,
				Digest: v.Digest, InrunVersion: v.InrunVersion, Pushed: v.Pushed, Deprecation: v.Deprecation})
		}
	}
	return out
}

// Deprecation returns the deprecation that applies to version, if any:
// its own, or one another version of the pattern scopes over it (newest
// push first).
func (p *IndexPattern) Deprecation(version string) *Deprecation {
	for _, v := range p.Versions {
		if d := v.Deprecation; d != nil && d.Covers(v.Version, version) {
			return d
		}
	}
	return nil
}

func (idx *Index) add(e IndexEntry) {
	i := slices.IndexFunc(idx.Patterns, func(p IndexPattern) bool { return p.Repository == e.Repository })
	if i < 0 {
		idx.Patterns = append(idx.Patterns, IndexPattern{Name: e.Name, Repository: e.Repository})
		i = len(idx.Patterns) - 1
	}
	p := &idx.Patterns[i]
	if e.Description != "" {
		p.Description = e.Description
	}
	p.Versions = slices.DeleteFunc(p.Versions, func(v IndexVersion) bool { return v.Version == e.Version })
	p.Versions = slices.Insert(p.Versions, 0, IndexVersion{Version: e.Version, Digest: e.Digest, InrunVersion: e.InrunVersion, Pushed: e.Pushed, Deprecation: e.Deprecation})
	slices.SortFunc(idx.Patterns, func(a, b IndexPattern) int { return strings.Compare(a.Name, b.Name) })
}
