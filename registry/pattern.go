package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
)

// Media types of the artifacts and layers Inrun writes.
const (
	// MediaTypePattern is the artifactType of a pattern manifest.
	MediaTypePattern = "application/vnd.inrun.pattern.v1"
	// MediaTypeBlueprint is the layer holding the Blueprint itself.
	MediaTypeBlueprint = "application/vnd.inrun.pattern.blueprint.v1+yaml"
	// MediaTypeFile is a layer holding a file the Blueprint names.
	MediaTypeFile = "application/vnd.inrun.pattern.file.v1"
	// MediaTypeTest is a layer holding a file under test/.
	MediaTypeTest = "application/vnd.inrun.pattern.test.v1"
	// MediaTypeReadme is the layer holding README.md.
	MediaTypeReadme = "application/vnd.inrun.pattern.readme.v1+markdown"
)

// Annotations of a pattern manifest. The OCI ones are what other tools
// show; Inrun reads its own.
const (
	AnnotationName         = "dev.inrun.pattern.name"
	AnnotationVersion      = ocispec.AnnotationVersion
	AnnotationDescription  = ocispec.AnnotationDescription
	AnnotationInrunVersion = "dev.inrun.pattern.inrun-version"
)

// BlueprintFile is the path of the Blueprint in a pattern; ReadmeFile its
// README; TestDir the directory of its tests.
const (
	BlueprintFile = "blueprint.yaml"
	ReadmeFile    = "README.md"
	TestDir       = "test"
)

// Pattern is a Blueprint with the files it names, its tests and its README:
// what one pattern version holds.
type Pattern struct {
	// Name is the pattern's name: lower-case letters, digits and dashes, as
	// the last element of its repository.
	Name string
	// Version is the pattern's version, its tag: such as 1.2.0.
	Version string
	// Description says in one line what the pattern makes.
	Description string
	// InrunVersion is the version of the Inrun that pushed it.
	InrunVersion string
	// Deprecation is the Blueprint's lifecycle.deprecation; nil when it
	// has none.
	Deprecation *Deprecation
	// Files maps a slash-separated path, relative to the Blueprint's
	// directory, to its content. BlueprintFile is required.
	Files map[string][]byte
}

var (
	nameRx    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	versionRx = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
)

// Validate reports every problem with p at once.
func (p *Pattern) Validate() error {
	var probs []string
	if !nameRx.MatchString(p.Name) {
		probs = append(probs, fmt.Sprintf("name %q is not a pattern name: use lower-case letters, digits and dashes (such as website)", p.Name))
	}
	if p.Name == IndexRepository {
		probs = append(probs, fmt.Sprintf("name %q is the repository of the registry's index; choose another", p.Name))
	}
	if !versionRx.MatchString(p.Version) {
		probs = append(probs, fmt.Sprintf("version %q is not a tag: use letters, digits, '.', '_' and '-' (such as 1.0.0)", p.Version))
	}
	if p.Deprecation != nil {
		if err := p.Deprecation.Validate(); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if _, ok := p.Files[BlueprintFile]; !ok {
		probs = append(probs, "it has no "+BlueprintFile)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Files)) {
		if err := checkPath(name); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("pattern %s:%s: %s", p.Name, p.Version, strings.Join(probs, "; "))
	}
	return nil
}

// checkPath refuses a path that would leave the pattern's directory when
// unpacked: absolute, with .. or not clean.
func checkPath(name string) error {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == "." || strings.HasPrefix(name, "../") || name == ".." || strings.Contains(name, `\`) {
		return fmt.Errorf("file %q is not a clean relative path inside the pattern", name)
	}
	return nil
}

// mediaTypeOf gives each file its layer's media type by its role.
func mediaTypeOf(name string) string {
	switch {
	case name == BlueprintFile:
		return MediaTypeBlueprint
	case name == ReadmeFile:
		return MediaTypeReadme
	case strings.HasPrefix(name, TestDir+"/"):
		return MediaTypeTest
	}
	return MediaTypeFile
}

// Pack pushes p's files and its manifest to dst, by digest and untagged,
// and returns the manifest's descriptor. The manifest's created annotation
// is left out so that the same pattern packs to the same digest.
func Pack(ctx context.Context, dst content.Pusher, p *Pattern) (ocispec.Descriptor, error) {
	if err := p.Validate(); err != nil {
		return ocispec.Descriptor{}, err
	}
	var layers []ocispec.Descriptor
	for _, name := range slices.Sorted(maps.Keys(p.Files)) {
		data := p.Files[name]
		desc := content.NewDescriptorFromBytes(mediaTypeOf(name), data)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: name}
		if err := pushIfAbsent(ctx, dst, desc, data); err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("pushing %s: %w", name, err)
		}
		layers = append(layers, desc)
	}
	annotations := map[string]string{
		AnnotationName:    p.Name,
		AnnotationVersion: p.Version,
		// A fixed time keeps the digest a function of the content; the
		// proof records when the tests ran.
		ocispec.AnnotationCreated: "1970-01-01T00:00:00Z",
	}
	if p.Description != "" {
		annotations[AnnotationDescription] = p.Description
	}
	if p.InrunVersion != "" {
		annotations[AnnotationInrunVersion] = p.InrunVersion
	}
	if p.Deprecation != nil {
		annotations[AnnotationDeprecation] = encodeDeprecation(p.Deprecation)
	}
	return oras.PackManifest(ctx, dst, oras.PackManifestVersion1_1, MediaTypePattern, oras.PackManifestOptions{
		Layers:              layers,
		ManifestAnnotations: annotations,
	})
}

// ReadPattern reads the pattern whose manifest desc describes from src,
// verifying every blob against its digest, and returns it. A manifest that
// is not a pattern, a layer without a title or with a path that leaves the
// pattern, and two layers with one path are errors.
func ReadPattern(ctx context.Context, src content.Fetcher, desc ocispec.Descriptor) (*Pattern, error) {
	m, err := fetchManifest(ctx, src, desc)
	if err != nil {
		return nil, err
	}
	if m.ArtifactType != MediaTypePattern {
		return nil, fmt.Errorf("%s is not an Inrun pattern: its artifactType is %q, want %q", desc.Digest, m.ArtifactType, MediaTypePattern)
	}
	p := &Pattern{
		Name:         m.Annotations[AnnotationName],
		Version:      m.Annotations[AnnotationVersion],
		Description:  m.Annotations[AnnotationDescription],
		InrunVersion: m.Annotations[AnnotationInrunVersion],
		Files:        map[string][]byte{},
	}
	if s, ok := m.Annotations[AnnotationDeprecation]; ok {
		if p.Deprecation, err = decodeDeprecation(s); err != nil {
			return nil, fmt.Errorf("pattern %s: %w", desc.Digest, err)
		}
	}
	for _, l := range m.Layers {
		name := l.Annotations[ocispec.AnnotationTitle]
		if err := checkPath(name); err != nil {
			return nil, fmt.Errorf("pattern %s: layer %s: %w", desc.Digest, l.Digest, err)
		}
		if _, dup := p.Files[name]; dup {
			return nil, fmt.Errorf("pattern %s: two layers are titled %q", desc.Digest, name)
		}
		data, err := content.FetchAll(ctx, src, l)
		if err != nil {
			return nil, fmt.Errorf("pattern %s: reading %s (%s): %w", desc.Digest, name, l.Digest, err)
		}
		p.Files[name] = data
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// maxManifest bounds what is read as a manifest: real ones are a few KiB.
const maxManifest = 4 << 20

// fetchManifest reads and decodes the image manifest desc describes,
// checking its digest and media type.
func fetchManifest(ctx context.Context, src content.Fetcher, desc ocispec.Descriptor) (*ocispec.Manifest, error) {
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("%s is a %s, not an OCI image manifest", desc.Digest, desc.MediaType)
	}
	if desc.Size > maxManifest {
		return nil, fmt.Errorf("%s: a manifest of %d bytes is too large", desc.Digest, desc.Size)
	}
	data, err := content.FetchAll(ctx, src, desc)
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", desc.Digest, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	if m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("manifest %s says it is a %s", desc.Digest, m.MediaType)
	}
	return &m, nil
}

func pushIfAbsent(ctx context.Context, dst content.Pusher, desc ocispec.Descriptor, data []byte) error {
	if s, ok := dst.(content.ReadOnlyStorage); ok {
		if ok, err := s.Exists(ctx, desc); err == nil && ok {
			return nil
		}
	}
	return dst.Push(ctx, desc, bytes.NewReader(data))
}
