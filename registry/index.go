package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
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
func ReadIndex(ctx context.Context, reg Registry, namespace string) (*Index, error) {
	repo, err := reg.Repository(ctx, indexRepository(namespace))
	if err != nil {
		return nil, err
	}
	idx, _, err := readIndex(ctx, repo)
	return idx, err
}

func readIndex(ctx context.Context, repo Target) (*Index, ocispec.Descriptor, error) {
	desc, err := repo.Resolve(ctx, IndexTag)
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
		return nil, desc, fmt.Errorf("%s:%s is not an Inrun index (artifactType %q)", IndexRepository, IndexTag, m.ArtifactType)
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

// UpdateIndex adds e to the index of namespace. It reads, changes and
// writes the index again; two pushes at the same moment can lose one
// entry, which the next push of that pattern restores.
func UpdateIndex(ctx context.Context, reg Registry, namespace string, e IndexEntry) error {
	repo, err := reg.Repository(ctx, indexRepository(namespace))
	if err != nil {
		return err
	}
	idx, _, err := readIndex(ctx, repo)
	if err != nil {
		return err
	}
	idx.add(e)
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	mem := memory.New()
	layer := content.NewDescriptorFromBytes(MediaTypeIndexLayer, data)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: "index.json"}
	if err := mem.Push(ctx, layer, bytes.NewReader(data)); err != nil {
		return err
	}
	desc, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, MediaTypeIndex, oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		return err
	}
	if err := oras.CopyGraph(ctx, mem, repo, desc, oras.DefaultCopyGraphOptions); err != nil {
		return fmt.Errorf("pushing the index: %w", err)
	}
	return repo.Tag(ctx, desc, IndexTag)
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
