package registry_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	ggcr "github.com/google/go-containerregistry/pkg/registry"

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
