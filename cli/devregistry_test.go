package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote"

	"github.com/inrun/inrun/packs"
	"github.com/inrun/inrun/registry"
)

func TestBuiltinPattern(t *testing.T) {
	for _, c := range []struct{ pack, example, name, version string }{
		{"website", ".", "website", "1.0.0"},
		{"declarative", "01-hello-website", "01-hello-website", "1.0.0"},
		{"remote", "api", "api", "1.0.0"},
		{"registry", "homepage-2.0.0", "homepage", "2.0.0"},
	} {
		if name, version := builtinPattern(c.pack, c.example); name != c.name || version != c.version {
			t.Errorf("builtinPattern(%s, %s) = %s %s, want %s %s", c.pack, c.example, name, version, c.name, c.version)
		}
	}
}

// TestDevRegistry starts inrun --dev's registry on a real Distribution
// registry: the built-in patterns are published, listed with the
// registry pack's deprecation, refused by inrun run as simulate-only
// unless --allow-unverified, and a restart on the same content publishes
// nothing again.
func TestDevRegistry(t *testing.T) {
	t.Setenv(envKeysDir, filepath.Join(t.TempDir(), "keys"))
	dir := filepath.Join(t.TempDir(), "registry")
	ctx := context.Background()
	var out bytes.Buffer
	reg, stop, err := startDevRegistry(ctx, &out, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if reg == nil {
		if os.Getenv("INRUN_REQUIRE_ASSETS") == "1" {
			t.Fatalf("no registry:\n%s", out.String())
		}
		t.Skipf("skipping: %s", out.String())
	}
	defer func() { stop() }()
	for _, want := range []string{"Made a key to sign proofs with", "Local pattern registry at " + reg.Host, "export INRUN_REGISTRY=" + reg.Host, "inrun patterns " + reg.Host + "/inrun"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("startDevRegistry printed no %q:\n%s", want, out.String())
		}
	}

	idx, err := registry.ReadIndex(ctx, registry.NewRemote(reg.Host), builtinNamespace)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]*registry.IndexPattern{}
	for i := range idx.Patterns {
		listed[idx.Patterns[i].Name] = &idx.Patterns[i]
	}
	for _, p := range packs.List() {
		for _, ex := range packs.Examples(p.Name) {
			name, version := builtinPattern(p.Name, ex)
			ip := listed[name]
			if packs.GoModule(p.Name, ex) {
				// Names Go code: a plain inrun cannot run it, so it is not published.
				if ip != nil {
					t.Errorf("%s (%s/%s), a typed example, was published", name, p.Name, ex)
				}
				continue
			}
			if ip == nil || !containsVersion(ip, version) {
				t.Errorf("%s %s (%s/%s) is not in the index:\n%s", name, version, p.Name, ex, out.String())
			}
		}
	}
	if hp := listed["homepage"]; hp == nil || len(hp.Versions) != 2 || hp.Versions[0].Version != "2.0.0" || hp.Deprecation("1.0.0") == nil || hp.Deprecation("2.0.0") != nil {
		t.Errorf("homepage in the index = %+v; want 2.0.0 first, deprecating 1.0.0", hp)
	}

	website := reg.Host + "/inrun/website:1.0.0"
	got, err := run(t, t.TempDir(), "inspect", website)
	if !errors.Is(err, errReported) || !strings.Contains(got, "NOT VERIFIED") || !strings.Contains(got, "records simulate only") {
		t.Errorf("inspect of a built-in pattern = %v\n%s", err, got)
	}
	flags := &patternFlags{cacheDir: t.TempDir()}
	if _, _, _, err := flags.resolve(ctx, &out, []string{reg.Host + "/inrun/website@1.0.0"}); err == nil || !strings.Contains(err.Error(), "simulate only") {
		t.Errorf("inrun run of a built-in pattern without --allow-unverified = %v", err)
	}
	flags.allowUnverified = true
	bps, _, _, err := flags.resolve(ctx, &out, []string{reg.Host + "/inrun/website@1.0.0"})
	if err != nil || len(bps) != 1 || bps[0].Resource.Kind != "Website" {
		t.Fatalf("inrun run --allow-unverified of a built-in pattern = %v", err)
	}

	// A restart on the same content: the same registry, nothing pushed
	// again (a second push would add a second proof).
	stop()
	out.Reset()
	reg, stop, err = startDevRegistry(ctx, &out, dir, false)
	if err != nil || reg == nil {
		t.Fatalf("restart: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "Made a key") || strings.Contains(out.String(), "Not publishing") {
		t.Errorf("restart:\n%s", out.String())
	}
	repo, err := remote.NewRepository(reg.Host + "/inrun/website")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	desc, err := repo.Resolve(ctx, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if referrers, err := repoReferrers(ctx, repo, desc); err != nil || len(referrers) != 1 {
		t.Errorf("after a restart, website 1.0.0 has %d referrers (%v); want its one proof", len(referrers), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "docker")); err != nil {
		t.Errorf("the registry's content is not in %s: %v", dir, err)
	}
}

func containsVersion(p *registry.IndexPattern, version string) bool {
	for _, v := range p.Versions {
		if v.Version == version {
			return true
		}
	}
	return false
}
