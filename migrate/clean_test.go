package migrate_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/migrate"
)

// TestCleanLeavesACRDItDidNotInstall checks that clean changes no CRD Inrun
// did not install: it says what to remove, and still deletes the
// snapshots and the ledger, which are its own; and that Recorded finds the
// migration by its ID until then.
func TestCleanLeavesACRDItDidNotInstall(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, app("a", map[string]any{"repo": "o/a"}), app("b", map[string]any{"repository": "o/b"}))
	m := migration(t, false)
	opts := migrate.Options{Client: c}
	if _, res, err := m.Apply(ctx, opts); err != nil || res.Moved != 1 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	back, err := migrate.Recorded(ctx, m.ID, opts)
	if err != nil || back.ID != m.ID || len(back.Moves) != len(m.Moves) {
		t.Fatalf("Recorded: %v %+v", err, back)
	}
	res, err := m.Clean(ctx, migrate.CleanOptions{Options: opts, CRDManager: "inrun"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.CRDLeft, "CRD apps.migrate.inrun.dev was not installed by Inrun") || !strings.Contains(res.CRDLeft, "remove spec.repo, spec.source.url, spec.size from the schema of version v1") || len(res.RemovedPaths) > 0 {
		t.Errorf("CRD: left %q, removed %v", res.CRDLeft, res.RemovedPaths)
	}
	var secs corev1.SecretList
	var cms corev1.ConfigMapList
	_ = c.List(ctx, &secs, client.MatchingLabels{migrate.LabelID: m.ID})
	_ = c.List(ctx, &cms, client.MatchingLabels{migrate.LabelID: m.ID})
	if len(secs.Items)+len(cms.Items) != 0 || res.Deleted != 3 {
		t.Errorf("%d snapshots and %d ledger ConfigMaps left, %d deleted (want the snapshot, a shard and the head)", len(secs.Items), len(cms.Items), res.Deleted)
	}
	if _, err := migrate.Recorded(ctx, m.ID, opts); err == nil {
		t.Error("Recorded finds a cleaned migration")
	}
	if _, err := m.Clean(ctx, migrate.CleanOptions{Options: migrate.Options{Client: c, Only: "apps"}}); err == nil || !strings.Contains(err.Error(), "every namespace") {
		t.Errorf("clean of one namespace: %v", err)
	}
}
