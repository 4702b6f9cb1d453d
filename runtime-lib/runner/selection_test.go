package runner_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/runtime-lib/runner"
)

var teamGVK = schema.GroupVersionKind{Group: "test.inrun.dev", Version: "v1", Kind: "Team"}

// teamState is "" once the Team's status.members are members and its
// Staffed and Ready conditions have these statuses.
func (f *fixture) teamState(name string, members []string, staffed, ready string) func() string {
	return func() string {
		team, err := f.get(teamGVK, f.ns, name)
		if err != nil {
			return err.Error()
		}
		got, _, _ := unstructured.NestedStringSlice(team.Object, "status", "members")
		if !slices.Equal(got, members) && !(len(got) == 0 && len(members) == 0) {
			return "status.members = [" + strings.Join(got, " ") + "], want [" + strings.Join(members, " ") + "]"
		}
		conds, _, _ := unstructured.NestedSlice(team.Object, "status", "conditions")
		want := map[string]string{"Staffed": staffed, "Ready": ready}
		for _, c := range conds {
			m := c.(map[string]any)
			if s, ok := want[m["type"].(string)]; ok {
				if m["status"] != s {
					return m["type"].(string) + " is " + m["status"].(string) + ": " + m["message"].(string)
				}
				delete(want, m["type"].(string))
			}
		}
		if len(want) > 0 {
			return "conditions missing"
		}
		return ""
	}
}

// TestSelectorWatchAndReadyWhen runs the Team Blueprint on a real API
// server. Its roster child is ready at once, yet emit.readyWhen holds
// Ready false while no ConfigMap of the team exists; one created later is
// seen by the watch of selected objects (nothing else would reconcile the
// Team), and shows up in status, the custom condition and Ready; relabelled
// away, it leaves them again. Inrun never writes the ConfigMap.
func TestSelectorWatchAndReadyWhen(t *testing.T) {
	f := newFixture(t)
	bp, err := compiler.CompileFile("testdata/team.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	f.bp = bp
	f.start(f.cfg, []string{f.ns}, nil)
	ctx := context.Background()

	team := &unstructured.Unstructured{}
	team.SetGroupVersionKind(teamGVK)
	team.SetName("alpha")
	team.SetNamespace(f.ns)
	team.Object["spec"] = map[string]any{"team": "a", "minConfigs": int64(1)}
	if err := f.admin.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the roster", exists(f, configMapGVK, f.ns, "alpha-roster"))
	f.eventually(30*time.Second, "not staffed, not Ready though the roster is", f.teamState("alpha", nil, "False", "False"))
	got, _ := f.get(teamGVK, f.ns, "alpha")
	if msg := conditionMessage(got, "Ready"); msg != "emit.readyWhen: ${size(configs) >= self.spec.minConfigs} is false" {
		t.Errorf("Ready message %q", msg)
	}

	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(configMapGVK)
	cm.SetName("member-1")
	cm.SetNamespace(f.ns)
	cm.SetLabels(map[string]string{"team": "a"})
	if err := f.admin.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the new ConfigMap selected", f.teamState("alpha", []string{"member-1"}, "True", "True"))

	// Relabelled to another team, it is no longer read.
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"b"}}}`))
	if err := f.admin.Patch(ctx, cm, patch); err != nil {
		t.Fatal(err)
	}
	f.eventually(30*time.Second, "the relabelled ConfigMap left out", f.teamState("alpha", nil, "False", "False"))

	live, err := f.get(configMapGVK, f.ns, "member-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(live.GetOwnerReferences()) > 0 || live.GetLabels()[reconciler.LabelManagedBy] != "" {
		t.Errorf("the selected ConfigMap was changed: %v", live)
	}
	for _, mf := range live.GetManagedFields() {
		if mf.Manager == reconciler.ManagedBy {
			t.Errorf("Inrun wrote the selected ConfigMap: %+v", mf)
		}
	}
}
