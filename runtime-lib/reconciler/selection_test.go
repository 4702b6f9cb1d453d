package reconciler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/runtime-lib/reconciler"
	"github.com/inrun/inrun/simulate"
)

// newTeamFixture reconciles a Team over testdata/team.yaml, at the time
// *now says.
func newTeamFixture(t *testing.T, now *time.Time) *fixture {
	t.Helper()
	return fixtureOf(t, "testdata/team.yaml", reconciler.Options{Clock: func() time.Time { return *now }}, map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Team",
		"metadata": map[string]any{"name": "alpha", "namespace": "shop"},
		"spec":     map[string]any{"team": "a", "minConfigs": int64(2)},
	})
}

func (f *fixture) configMap(ns, name string, labels map[string]string) {
	f.t.Helper()
	cm := &unstructured.Unstructured{}
	cm.SetGroupVersionKind(configMapGVK)
	cm.SetNamespace(ns)
	cm.SetName(name)
	cm.SetLabels(labels)
	if err := f.store.Create(context.Background(), cm); err != nil {
		f.t.Fatal(err)
	}
}

// TestSelectorConditionsReadyWhen: an externalRef by selector reads the
// matching objects as a sorted list, empty at first; custom conditions
// flip with it, keeping their transition time while their status holds;
// emit.readyWhen holds Ready false although every child is ready; and
// Selecting names the custom resource for objects it would read.
func TestSelectorConditionsReadyWhen(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	f := newTeamFixture(t, &now)
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	roster := f.object(configMapGVK, "shop", "alpha-roster")
	if roster == nil {
		t.Fatal("no roster: an empty selection is a value, not a wait")
	}
	if got := roster.Object["data"].(map[string]any)["members"]; got != "" {
		t.Errorf("members = %q, want none", got)
	}
	cr := f.get()
	if got, _, _ := unstructured.NestedInt64(cr.Object, "status", "configs"); got != 0 {
		t.Errorf("status.configs = %d", got)
	}
	staffed := condition(cr, "Staffed")
	if staffed["status"] != "False" || staffed["reason"] != "TooFew" || staffed["message"] != "0 of 2 configs" || staffed["observedGeneration"] != int64(1) {
		t.Errorf("Staffed = %v", staffed)
	}
	if c := condition(cr, "RosterWritten"); c["status"] != "True" || c["reason"] != reconciler.ReasonEvaluated || c["message"] != "${has(roster.data.members)} is true" {
		t.Errorf("RosterWritten = %v", c)
	}
	// Data not there yet: the roster has no leader key.
	if c := condition(cr, "Leader"); c["status"] != "Unknown" || c["reason"] != reconciler.ReasonWaiting || !strings.Contains(c["message"].(string), "roster.data.leader") {
		t.Errorf("Leader = %v", c)
	}
	// The roster is ready (it exists); emit.readyWhen says no.
	if s, msg := conditionOf(cr, "Ready"); s != "False" || msg != "emit.readyWhen: ${size(configs) >= self.spec.minConfigs} is false" {
		t.Errorf("Ready = %s %q", s, msg)
	}
	if s, _ := conditionOf(cr, "Degraded"); s != "False" {
		t.Errorf("Degraded = %s: waiting data is no error", s)
	}
	firstTransition := staffed["lastTransitionTime"]

	// Objects the selector reads, or would if it could see them.
	labels := map[string]string{"team": "a"}
	if reqs := f.rec.Selecting(configMapGVK, "shop", "any", labels); len(reqs) != 1 || reqs[0].Name != "alpha" || reqs[0].Namespace != "shop" {
		t.Errorf("Selecting(team=a in shop) = %v, want shop/alpha", reqs)
	}
	for _, miss := range []struct {
		ns     string
		labels map[string]string
	}{
		{"shop", map[string]string{"team": "b"}},
		{"other", labels},
		{"shop", map[string]string{"team": "a", "retired": "yes"}},
	} {
		if reqs := f.rec.Selecting(configMapGVK, miss.ns, "any", miss.labels); len(reqs) != 0 {
			t.Errorf("Selecting(%v in %s) = %v, want none", miss.labels, miss.ns, reqs)
		}
	}
	if reqs := f.rec.Selecting(secretGVK, "shop", "any", labels); len(reqs) != 0 {
		t.Errorf("a Secret: Selecting = %v, want none", reqs)
	}

	// Two of the team's ConfigMaps appear, one retired, one another team's,
	// one elsewhere.
	f.configMap("shop", "b-second", labels)
	f.configMap("shop", "a-first", labels)
	f.configMap("shop", "c-retired", map[string]string{"team": "a", "retired": "yes"})
	f.configMap("shop", "d-other", map[string]string{"team": "b"})
	f.configMap("other", "e-elsewhere", labels)
	now = now.Add(time.Minute)
	if err := f.sync().Err(); err != nil {
		t.Fatal(err)
	}
	roster = f.object(configMapGVK, "shop", "alpha-roster")
	if got := roster.Object["data"].(map[string]any)["members"]; got != "a-first,b-second" {
		t.Errorf("members = %q, want a-first,b-second (sorted, matching, in the namespace)", got)
	}
	cr = f.get()
	staffed = condition(cr, "Staffed")
	if staffed["status"] != "True" || staffed["reason"] != "Enough" || staffed["message"] != "2 of 2 configs" || staffed["lastTransitionTime"] == firstTransition {
		t.Errorf("Staffed = %v; want True and a new transition time", staffed)
	}
	if s, msg := conditionOf(cr, "Ready"); s != "True" || msg != "emit.readyWhen holds: ${size(configs) >= self.spec.minConfigs}" {
		t.Errorf("Ready = %s %q", s, msg)
	}
	if c := condition(cr, "RosterWritten"); c["lastTransitionTime"] != "2026-01-01T10:00:00Z" {
		t.Errorf("RosterWritten kept True, but its transition time is %v", c["lastTransitionTime"])
	}
	for _, name := range []string{"a-first", "b-second", "c-retired", "d-other"} {
		if cm := f.object(configMapGVK, "shop", name); cm == nil || len(cm.GetOwnerReferences()) > 0 || cm.GetLabels()[reconciler.LabelManagedBy] != "" {
			t.Errorf("%s = %v: objects a selector reads are never written", name, cm)
		}
	}

	// Converged: nothing written.
	before := f.store.Writes()
	now = now.Add(time.Minute)
	if rep := f.sync(); rep.Writes != 0 || f.store.Writes() != before {
		t.Errorf("a converged resync wrote %d times", f.store.Writes()-before)
	}
}

// TestConditionsThatFail: a status that is no condition status, or a
// reason that is no condition reason, makes the custom resource Degraded
// and not Ready, whatever emit.readyWhen says; the condition is Unknown, or
// keeps the default reason.
func TestConditionsThatFail(t *testing.T) {
	bp, err := compiler.CompileFile("testdata/mood.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, bp: bp, store: simulate.NewStore(bp)}
	if f.rec, err = reconciler.New(bp, reconciler.Options{Client: f.store}); err != nil {
		t.Fatal(err)
	}
	f.cr = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Team",
		"metadata": map[string]any{"name": "b", "namespace": "shop"},
		"spec":     map[string]any{"team": "not a reason", "minConfigs": int64(1)},
	}}
	if err := f.store.CreateCR(context.Background(), f.cr); err != nil {
		t.Fatal(err)
	}
	rep := f.sync()
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "emit.conditions[Mood]") || !strings.Contains(err.Error(), `"not a reason" is not a condition reason`) {
		t.Errorf("errors: %v", err)
	}
	cr := f.get()
	if c := condition(cr, "Mood"); c["status"] != "Unknown" || c["reason"] != reconciler.ReasonExpressionFailed || !strings.Contains(c["message"].(string), `True, False or Unknown, not "Maybe"`) {
		t.Errorf("Mood = %v", c)
	}
	if c := condition(cr, "Labelled"); c["status"] != "True" || c["reason"] != reconciler.ReasonEvaluated {
		t.Errorf("Labelled = %v", c)
	}
	if s, _ := conditionOf(cr, "Degraded"); s != "True" {
		t.Errorf("Degraded = %s", s)
	}
	if s, msg := conditionOf(cr, "Ready"); s != "False" || msg != "see the Degraded condition" {
		t.Errorf("Ready = %s %q; emit.readyWhen holds, but errors come first", s, msg)
	}
}

// TestSelectionMatches: a Selection by name matches that one object
// whatever its labels; one by selector matches by labels whatever the
// name; neither matches another kind or namespace.
func TestSelectionMatches(t *testing.T) {
	byName := reconciler.Selection{GroupVersionKind: secretGVK, Namespace: "shop", Name: "gate"}
	bySelector := reconciler.Selection{GroupVersionKind: configMapGVK, Selector: labels.SelectorFromSet(labels.Set{"team": "a"})}
	for _, tc := range []struct {
		s         reconciler.Selection
		gvk       schema.GroupVersionKind
		ns, name  string
		labels    map[string]string
		want      bool
		situation string
	}{
		{byName, secretGVK, "shop", "gate", nil, true, "the named object"},
		{byName, secretGVK, "shop", "gate", map[string]string{"x": "y"}, true, "the named object, labelled"},
		{byName, secretGVK, "shop", "other", nil, false, "another name"},
		{byName, secretGVK, "elsewhere", "gate", nil, false, "another namespace"},
		{byName, configMapGVK, "shop", "gate", nil, false, "another kind"},
		{bySelector, configMapGVK, "any", "x", map[string]string{"team": "a"}, true, "matching labels, every namespace"},
		{bySelector, configMapGVK, "any", "x", map[string]string{"team": "b"}, false, "other labels"},
	} {
		if got := tc.s.Matches(tc.gvk, tc.ns, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.situation, got, tc.want)
		}
	}
}
