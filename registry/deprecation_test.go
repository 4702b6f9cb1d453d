package registry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/inrun/inrun/registry"
)

// TestDeprecationCarried: a pattern's deprecation is in its manifest
// (covered by its digest and proof) and in the index, where a scoped one
// covers other versions.
func TestDeprecationCarried(t *testing.T) {
	each(t, func(t *testing.T, s server) {
		signer, key := newKey(t)
		push(t, s, "team/website", website(), signer)
		p := website()
		p.Version = "1.1.0"
		dep := &registry.Deprecation{Message: "website is replaced by webapp", Replacement: "team/webapp:2.0.0", After: "2027-06-30", Versions: "<1.1.0"}
		p.Deprecation = dep
		pushed := push(t, s, "team/website", p, signer)

		f, err := fetch(t, s, "team/website:1.1.0", key)
		if err != nil || f.Unverified != nil {
			t.Fatalf("fetch: %v, %v", err, f.Unverified)
		}
		if diff := cmp.Diff(dep, f.Pattern.Deprecation); diff != "" {
			t.Errorf("fetched deprecation (-want +got):\n%s", diff)
		}
		m := fetchManifest(t, repository(t, s, "team/website"), pushed.Pattern)
		if !strings.Contains(m.Annotations[registry.AnnotationDeprecation], `"replacement":"team/webapp:2.0.0"`) {
			t.Errorf("manifest annotations %v", m.Annotations)
		}
		if f, _ := fetch(t, s, "team/website:1.0.0", key); f.Pattern.Deprecation != nil {
			t.Errorf("1.0.0 carries no deprecation of its own, got %+v", f.Pattern.Deprecation)
		}

		idx, err := registry.ReadIndex(context.Background(), registry.NewRemote(s.host), "team")
		if err != nil || len(idx.Patterns) != 1 {
			t.Fatalf("index %+v, %v", idx, err)
		}
		ip := idx.Patterns[0]
		if d := ip.Deprecation("1.0.0"); d == nil || d.Message != dep.Message {
			t.Errorf("1.0.0 is in the scope <1.1.0, got %+v", d)
		}
		if d := ip.Deprecation("1.1.0"); d != nil {
			t.Errorf("1.1.0 is outside the scope <1.1.0, got %+v", d)
		}
	})
}

func TestDeprecationRules(t *testing.T) {
	own := &registry.Deprecation{Message: "m"}
	if !own.Covers("1.0.0", "1.0.0") || own.Covers("1.0.0", "0.9.0") {
		t.Error("without a scope a deprecation covers exactly the version carrying it")
	}
	all := &registry.Deprecation{Message: "m", Versions: "*"}
	if !all.Covers("2.0.0", "0.1.0") || all.Covers("2.0.0", "latest") {
		t.Error(`"*" covers every semver version, and no tag that is not one`)
	}
	below := &registry.Deprecation{Message: "m", Versions: "<3.0.0"}
	if !all.Covers("2.0.0", "1.2.0-rc.1") || !below.Covers("3.0.0", "1.2.0-rc.1") || below.Covers("3.0.0", "3.0.1-rc.1") {
		t.Error("a prerelease is covered as its place among versions says: 1.2.0-rc.1 by * and by <3.0.0, 3.0.1-rc.1 not by <3.0.0")
	}
	d := &registry.Deprecation{Message: "m", After: "2027-06-30"}
	for _, c := range []struct {
		now   time.Time
		ended bool
	}{
		{time.Date(2027, 6, 30, 23, 59, 59, 0, time.UTC), false},
		{time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC), true},
		// 23:00 on the 30th in UTC-2 is the 1st in UTC.
		{time.Date(2027, 6, 30, 23, 0, 0, 0, time.FixedZone("x", -2*3600)), true},
	} {
		if got := d.Ended(c.now); got != c.ended {
			t.Errorf("Ended(%v) = %v, want %v", c.now, got, c.ended)
		}
	}
	if (&registry.Deprecation{Message: "m"}).Ended(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Error("a deprecation without after never ends")
	}
	for _, bad := range []registry.Deprecation{{}, {Message: "m", After: "June"}, {Message: "m", Versions: "the newest"}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}
