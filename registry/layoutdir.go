package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
)

// LayoutScheme starts a registry that is an OCI layout directory:
// oci:DIR. inrun run oci:DIR/NAME@VERSION runs a pattern from it.
const LayoutScheme = "oci:"

// LayoutDir is an OCI image layout directory that another tool wrote
// (oras cp -r --to-oci-layout, oras pull --oci-layout, skopeo copy
// oci:...), read as a registry with no index: its index is made from the
// pattern manifests it holds, read one by one, so its tags do not matter.
// What is read from it is verified as from a registry. It is never
// written.
type LayoutDir struct {
	// Dir is the layout's directory.
	Dir   string
	store *oci.ReadOnlyStore
}

// OpenLayoutDir opens the OCI layout at dir for reading.
func OpenLayoutDir(ctx context.Context, dir string) (*LayoutDir, error) {
	if _, err := os.Stat(filepath.Join(dir, ocispec.ImageLayoutFile)); err != nil {
		return nil, fmt.Errorf("%s is not an OCI layout (it has no %s): copy patterns into one with oras cp -r REGISTRY/NAMESPACE/NAME:VERSION --to-oci-layout %s:VERSION", dir, ocispec.ImageLayoutFile, dir)
	}
	s, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("the OCI layout %s: %w", dir, err)
	}
	return &LayoutDir{Dir: dir, store: s}, nil
}

// Repository returns the layout: one layout is one repository, whatever
// name is asked for.
func (l *LayoutDir) Repository(context.Context, string) (Target, error) {
	return readOnlyTarget{l.store}, nil
}

// Index lists the patterns whose manifests the layout's index.json lists
// (tagged or not). namespace is ignored: a layout has none.
func (l *LayoutDir) Index(ctx context.Context, _ string) (*Index, error) {
	data, err := os.ReadFile(filepath.Join(l.Dir, ocispec.ImageIndexFile))
	if err != nil {
		return nil, fmt.Errorf("the OCI layout %s: %w", l.Dir, err)
	}
	var top ocispec.Index
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("the OCI layout %s: %s: %w", l.Dir, ocispec.ImageIndexFile, err)
	}
	idx := &Index{}
	seen := map[string]bool{}
	for _, desc := range top.Manifests {
		if desc.MediaType != ocispec.MediaTypeImageManifest || seen[desc.Digest.String()] {
			continue
		}
		seen[desc.Digest.String()] = true
		m, err := fetchManifest(ctx, l.store, desc)
		if err != nil {
			return nil, fmt.Errorf("the OCI layout %s: %w", l.Dir, err)
		}
		if m.ArtifactType != MediaTypePattern {
			continue // a proof, or another tool's artifact
		}
		v := IndexVersion{Version: m.Annotations[AnnotationVersion], Digest: desc.Digest.String(), InrunVersion: m.Annotations[AnnotationInrunVersion]}
		if s, ok := m.Annotations[AnnotationDeprecation]; ok {
			// A bad one is refused by ReadPattern when this version is read.
			v.Deprecation, _ = decodeDeprecation(s)
		}
		idx.add(IndexEntry{Name: m.Annotations[AnnotationName], Repository: m.Annotations[AnnotationName],
			Description: m.Annotations[AnnotationDescription], Version: v.Version, Digest: v.Digest,
			InrunVersion: v.InrunVersion, Deprecation: v.Deprecation})
	}
	// Newest first, as a registry's index lists them by push.
	for i := range idx.Patterns {
		slices.SortStableFunc(idx.Patterns[i].Versions, func(a, b IndexVersion) int {
			va, erra := semver.NewVersion(a.Version)
			vb, errb := semver.NewVersion(b.Version)
			if erra != nil || errb != nil {
				return strings.Compare(b.Version, a.Version)
			}
			return vb.Compare(va)
		})
	}
	return idx, nil
}

// Indexer is a registry that makes its own index instead of keeping one
// in IndexRepository: ReadIndex asks it.
type Indexer interface {
	Index(ctx context.Context, namespace string) (*Index, error)
}

// errReadOnly is what writing to a layout read with OpenLayoutDir gives.
var errReadOnly = errors.New("an OCI layout read with oci: is never written")

// readOnlyTarget is a read-only store as a Target whose writes fail.
type readOnlyTarget struct{ *oci.ReadOnlyStore }

func (readOnlyTarget) Push(context.Context, ocispec.Descriptor, io.Reader) error { return errReadOnly }
func (readOnlyTarget) Tag(context.Context, ocispec.Descriptor, string) error     { return errReadOnly }

// IsLayoutRegistry reports whether a registry written in a reference or a
// Stack is an OCI layout directory (oci:DIR), and returns DIR.
func IsLayoutRegistry(registry string) (dir string, ok bool) {
	return strings.CutPrefix(registry, LayoutScheme)
}

// Reference is the reference that Fetch reads version (or a digest,
// sha256:...) of the pattern name at: by digest, from the layout's index.
func (l *LayoutDir) Reference(ctx context.Context, name, version string) (Reference, error) {
	ref := Reference{Registry: LayoutScheme + l.Dir, Repository: name}
	if strings.HasPrefix(version, "sha256:") {
		ref.Reference = version
		return ref, nil
	}
	idx, err := l.Index(ctx, "")
	if err != nil {
		return ref, err
	}
	var have []string
	for _, p := range idx.Patterns {
		if p.Name != name {
			have = append(have, p.Name)
			continue
		}
		for _, v := range p.Versions {
			if v.Version == version {
				ref.Reference = v.Digest
				return ref, nil
			}
			have = append(have, name+"@"+v.Version)
		}
	}
	return ref, fmt.Errorf("the OCI layout %s has no %s@%s; it has %s", l.Dir, name, version, orNothing(have))
}

func orNothing(list []string) string {
	if len(list) == 0 {
		return "no pattern"
	}
	return strings.Join(list, ", ")
}
