package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"

	"github.com/inrun/inrun/internal/filelock"
)

// Layout is an OCI image layout directory that holds patterns, their
// proofs and namespaces' indexes, from any number of registries: the
// cache inrun run keeps, and a directory to carry patterns where no
// registry is reachable. Content is kept by digest; a tag is written as
// the ref name host/repository:tag, so that one layout holds many
// repositories. What is read from it is verified as from a registry.
//
// A Layout is locked from OpenLayout to Close: the layout's index.json,
// where its tags are, is read when it opens and rewritten whole on every
// tag, so two processes that had it open at once would each write back
// their own view, and the last would drop the other's tags. The lock
// makes two inrun run at once take turns at the cache; neither holds it
// while it runs what it resolved.
type Layout struct {
	// Dir is the layout's directory.
	Dir    string
	store  *oci.Store
	unlock func()
}

// LockFile is the file in a layout's directory that OpenLayout locks. It
// is not part of the OCI layout, which ignores it.
const LockFile = ".inrun.lock"

// OpenLayout opens the OCI layout at dir, making it when it is missing,
// and locks it until Close, waiting while another process has it open
// (waiting, when not nil, is called once then), until ctx is done.
func OpenLayout(ctx context.Context, dir string, waiting func()) (*Layout, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("the pattern cache: %w", err)
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(dir, LockFile), waiting)
	if err != nil {
		return nil, fmt.Errorf("the pattern cache %s: %w", dir, err)
	}
	// Opened under the lock, the store reads the tags as the last
	// holder left them.
	s, err := oci.New(dir)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("the pattern cache %s: %w", dir, err)
	}
	return &Layout{Dir: dir, store: s, unlock: unlock}, nil
}

// Close releases the layout's lock. The Layout is not used after.
func (l *Layout) Close() error {
	if l.unlock != nil {
		l.unlock()
		l.unlock = nil
	}
	return nil
}

// DefaultCacheDir is the pattern cache: inrun/patterns in the user's
// cache directory.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for patterns: %w", err)
	}
	return filepath.Join(dir, "inrun", "patterns"), nil
}

// Registry returns the layout seen as the registry host: its repositories
// are the ref names that start with host/.
func (l *Layout) Registry(host string) Registry { return layoutRegistry{l: l, host: host} }

// Has reports whether the layout holds anything of host.
func (l *Layout) Has(ctx context.Context, host string) bool {
	found := false
	_ = l.store.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if strings.HasPrefix(t, host+"/") {
				found = true
			}
		}
		return nil
	})
	return found
}

// Save copies what f read, the pattern with its referrers (its proofs),
// from reg into the layout and tags it with its version; and the index of
// its namespace, so that the layout alone resolves it again.
func (l *Layout) Save(ctx context.Context, reg Registry, f *Fetched) error {
	src, err := reg.Repository(ctx, f.Reference.Repository)
	if err != nil {
		return err
	}
	dst := l.Registry(f.Reference.Registry)
	repo, _ := dst.Repository(ctx, f.Reference.Repository)
	if err := oras.ExtendedCopyGraph(ctx, src, repo, f.Descriptor, oras.DefaultExtendedCopyGraphOptions); err != nil {
		return fmt.Errorf("caching %s: %w", f.Reference, err)
	}
	if err := repo.Tag(ctx, f.Descriptor, f.Pattern.Version); err != nil {
		return fmt.Errorf("caching %s: %w", f.Reference, err)
	}
	// The index as ReadIndex sees it, with the versions its entry tags
	// add: offline, the cache's index is read alone.
	ns := f.Reference.Namespace()
	idx, err := ReadIndex(ctx, reg, ns)
	if err != nil {
		return fmt.Errorf("caching the index of %s: %w", ns, err)
	}
	idst, _ := dst.Repository(ctx, indexRepository(ns))
	idesc, err := pushIndex(ctx, idst, idx)
	if err != nil {
		return fmt.Errorf("caching the index of %s: %w", ns, err)
	}
	return idst.Tag(ctx, idesc, IndexTag)
}

type layoutRegistry struct {
	l    *Layout
	host string
}

func (r layoutRegistry) Repository(_ context.Context, name string) (Target, error) {
	return &layoutRepository{Store: r.l.store, dir: r.l.Dir, prefix: r.host + "/" + name + ":"}, nil
}

// layoutRepository is one repository of a layout: tags are prefixed with
// its host and name, digests are the layout's.
type layoutRepository struct {
	*oci.Store
	dir    string
	prefix string
}

// replace writes data, which the caller verified against desc, over the
// layout's damaged copy of desc. The file is replaced whole, by a rename,
// and nothing else of the layout changes: deleting through the store and
// pushing again would also collect a manifest's referrers and blobs.
func (r *layoutRepository) replace(desc ocispec.Descriptor, data []byte) error {
	if err := desc.Digest.Validate(); err != nil {
		return err
	}
	path := filepath.Join(r.dir, "blobs", desc.Digest.Algorithm().String(), desc.Digest.Encoded())
	tmp, err := os.CreateTemp(filepath.Dir(path), ".repair-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (r *layoutRepository) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	if strings.Contains(ref, ":") {
		return r.Store.Resolve(ctx, ref)
	}
	return r.Store.Resolve(ctx, r.prefix+ref)
}

func (r *layoutRepository) Tag(ctx context.Context, desc ocispec.Descriptor, ref string) error {
	return r.Store.Tag(ctx, desc, r.prefix+ref)
}
