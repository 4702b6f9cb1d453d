package registry_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"oras.land/oras-go/v2/content"

	"github.com/inrun/inrun/registry"
)

// TestLayoutConcurrentSaves: processes that save into one pattern cache
// at once take turns, so every tag each saved is there after. Each
// goroutine opens the layout itself, as a separate inrun run does: the
// lock is an flock(2), which holds between open files of one process as
// between processes.
func TestLayoutConcurrentSaves(t *testing.T) {
	srv := httptest.NewServer(ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true)))
	defer srv.Close()
	s := server{name: "memory", host: strings.TrimPrefix(srv.URL, "http://")}
	signer, key := newKey(t)
	const n = 8
	var fetched []*registry.Fetched
	for i := range n {
		p := website()
		p.Version = fmt.Sprintf("1.%d.0", i)
		push(t, s, "team/website", p, signer)
		f, err := fetch(t, s, "team/website:"+p.Version, key)
		if err != nil {
			t.Fatal(err)
		}
		fetched = append(fetched, f)
	}

	ctx := context.Background()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, f := range fetched {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cache, err := registry.OpenLayout(ctx, dir, nil)
			if err != nil {
				errs <- err
				return
			}
			defer cache.Close()
			errs <- cache.Save(ctx, registry.NewRemote(s.host), f)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	cache, err := registry.OpenLayout(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	for _, f := range fetched {
		r := f.Reference
		got, err := registry.Fetch(ctx, cache.Registry(r.Registry), r, registry.FetchOptions{Trusted: []registry.PublicKey{key}})
		if err != nil {
			t.Errorf("%s is not in the cache after concurrent saves: %v", r, err)
			continue
		}
		if got.Descriptor.Digest != f.Descriptor.Digest || got.Unverified != nil {
			t.Errorf("%s from the cache: %s (%v), want %s, verified", r, got.Descriptor.Digest, got.Unverified, f.Descriptor.Digest)
		}
	}
}

// TestLayoutWaits: a second open of a layout waits for the first to close.
func TestLayoutWaits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := registry.OpenLayout(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	opened := make(chan error, 1)
	go func() {
		second, err := registry.OpenLayout(ctx, dir, func() { close(waiting) })
		if err == nil {
			second.Close()
		}
		opened <- err
	}()
	<-waiting // the second open found the layout locked
	select {
	case err := <-opened:
		t.Fatalf("the second open returned (%v) while the first held the layout", err)
	default:
	}
	first.Close()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentPushesIndex: pushes to one namespace at once all end up
// listed, on both registries.
func TestConcurrentPushesIndex(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		ctx := context.Background()
		reg := registry.NewRemote(s.host)
		const writers, rounds = 4, 3
		var wg sync.WaitGroup
		errs := make(chan error, writers*rounds)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					name := fmt.Sprintf("p%d", w)
					errs <- registry.UpdateIndex(ctx, reg, "team", registry.IndexEntry{
						Name: name, Repository: "team/" + name, Version: fmt.Sprintf("1.%d.0", r),
						Digest: "sha256:" + strings.Repeat(fmt.Sprint(w), 64), Pushed: time.Unix(int64(r), 0).UTC(),
					})
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		idx, err := registry.ReadIndex(ctx, reg, "team")
		if err != nil {
			t.Fatal(err)
		}
		if len(idx.Patterns) != writers {
			t.Fatalf("the index lists %d patterns, want %d: %+v", len(idx.Patterns), writers, idx.Patterns)
		}
		for _, p := range idx.Patterns {
			var versions []string
			for _, v := range p.Versions {
				versions = append(versions, v.Version)
			}
			if want := []string{"1.2.0", "1.1.0", "1.0.0"}; !slices.Equal(versions, want) {
				t.Errorf("%s: versions %v, want %v (newest push first)", p.Name, versions, want)
			}
		}
	})
}

// TestIndexLostUpdate: a push whose rewrite of the index lost another's
// version (it read the index before the other wrote it) still lists that
// version, from its own entry tag.
func TestIndexLostUpdate(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		ctx := context.Background()
		reg := registry.NewRemote(s.host)
		entry := func(name string) registry.IndexEntry {
			return registry.IndexEntry{Name: name, Repository: "team/" + name, Version: "1.0.0", Digest: "sha256:" + strings.Repeat("a", 64), Pushed: time.Unix(1, 0).UTC()}
		}
		if err := registry.UpdateIndex(ctx, reg, "team", entry("first")); err != nil {
			t.Fatal(err)
		}
		repo := repository(t, s, "team/"+registry.IndexRepository)
		before, err := repo.Resolve(ctx, registry.IndexTag)
		if err != nil {
			t.Fatal(err)
		}
		if err := registry.UpdateIndex(ctx, reg, "team", entry("second")); err != nil {
			t.Fatal(err)
		}
		// A push that read the index before second was added writes it
		// back without second.
		if err := repo.Tag(ctx, before, registry.IndexTag); err != nil {
			t.Fatal(err)
		}
		idx, err := registry.ReadIndex(ctx, reg, "team")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range idx.Patterns {
			names = append(names, p.Name)
		}
		if !slices.Equal(names, []string{"first", "second"}) {
			t.Errorf("the index lists %v, want [first second]", names)
		}
		// The next push folds it back into the index itself.
		if err := registry.UpdateIndex(ctx, reg, "team", entry("third")); err != nil {
			t.Fatal(err)
		}
		latest, err := repo.Resolve(ctx, registry.IndexTag)
		if err != nil {
			t.Fatal(err)
		}
		m := fetchManifest(t, repo, latest)
		data, err := content.FetchAll(ctx, repo, m.Layers[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"first", "second", "third"} {
			if !strings.Contains(string(data), `"team/`+n+`"`) {
				t.Errorf("after the next push, %s:%s does not list %s:\n%s", registry.IndexRepository, registry.IndexTag, n, data)
			}
		}
	})
}

// TestReadThrough: what the cache holds by digest is read from it, not
// from the registry; tags and referrers still come from the registry, and
// what is read verifies as before.
func TestReadThrough(t *testing.T) {
	var blobGets atomic.Int64
	mem := ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0)), ggcr.WithReferrersSupport(true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && (strings.Contains(r.URL.Path, "/blobs/sha256:") || strings.Contains(r.URL.Path, "/manifests/sha256:")) {
			blobGets.Add(1)
		}
		mem.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := server{name: "memory", host: strings.TrimPrefix(srv.URL, "http://")}
	signer, key := newKey(t)
	push(t, s, "team/website", website(), signer)
	ctx := context.Background()
	cacheDir := t.TempDir()
	cache, err := registry.OpenLayout(ctx, cacheDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	remote := registry.NewRemote(s.host)
	reg := registry.ReadThrough(remote, cache.Registry(s.host))
	r, _ := registry.ParseReference(s.host + "/team/website:1.0.0")

	blobGets.Store(0)
	f, err := registry.Fetch(ctx, reg, r, registry.FetchOptions{Trusted: []registry.PublicKey{key}})
	if err != nil || f.Unverified != nil {
		t.Fatalf("cold: %v %v", err, f.Unverified)
	}
	cold := blobGets.Load()
	if cold == 0 {
		t.Fatal("a cold fetch read nothing by digest from the registry")
	}
	if err := cache.Save(ctx, reg, f); err != nil {
		t.Fatal(err)
	}
	blobGets.Store(0)
	f, err = registry.Fetch(ctx, reg, r, registry.FetchOptions{Trusted: []registry.PublicKey{key}})
	if err != nil || f.Unverified != nil {
		t.Fatalf("warm: %v %v", err, f.Unverified)
	}
	if warm := blobGets.Load(); warm != 0 {
		t.Errorf("a warm fetch read %d manifests and blobs by digest from the registry (cold: %d), want 0", warm, cold)
	}

	// Copies damaged on disk are read from the registry instead.
	damaged := 0
	_ = filepath.WalkDir(cacheDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(path)) != "sha256" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || len(data) == 0 {
			return err
		}
		data[len(data)/2] ^= 0xff
		damaged++
		return os.WriteFile(path, data, 0o644)
	})
	if damaged == 0 {
		t.Fatal("no blob in the cache to damage")
	}
	blobGets.Store(0)
	if f, err = registry.Fetch(ctx, reg, r, registry.FetchOptions{Trusted: []registry.PublicKey{key}}); err != nil || f.Unverified != nil {
		t.Fatalf("with a damaged cache: %v; want the registry's intact copies", err)
	}
	// Each damaged copy is read from the registry once, and repaired: a
	// second read of it in the same fetch, which a cold fetch sends to the
	// registry too, finds it intact.
	if n := blobGets.Load(); n == 0 || n > cold || n > int64(damaged) {
		t.Errorf("with every blob of the cache damaged (%d), %d were read from the registry; want some, at most one each, and no more than cold, %d", damaged, n, cold)
	}
	// ... and written over the damaged copies, so the next fetch is warm.
	blobGets.Store(0)
	if f, err = registry.Fetch(ctx, reg, r, registry.FetchOptions{Trusted: []registry.PublicKey{key}}); err != nil || f.Unverified != nil {
		t.Fatalf("after the repair: %v", err)
	}
	if n := blobGets.Load(); n != 0 {
		t.Errorf("after a fetch that read the damaged copies again, the next read %d from the registry, want 0", n)
	}
}
