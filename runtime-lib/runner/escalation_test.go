package runner_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/rbac"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// TestRoleChildrenWithLeastPrivilege runs a Blueprint whose children are a
// Role and RoleBindings to the built-in ClusterRoles, all granting more
// than the runtime holds, as a user bound only to what inrun rbac prints:
// first without its bind and escalate rules, which RBAC's escalation
// prevention then refuses, and then with them.
func TestRoleChildrenWithLeastPrivilege(t *testing.T) {
	f := newFixture(t)
	bp, err := compiler.CompileFile("testdata/crew.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.InstallCRDs(context.Background(), f.cfg, []*ir.Blueprint{bp}); err != nil {
		t.Fatal(err)
	}
	f.bp = bp
	crewGVK := schema.GroupVersionKind{Group: "crew.example.dev", Version: "v1", Kind: "Crew"}
	role := rbac.ClusterRole(bp)
	var without []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if !slices.Contains(r.Verbs, "bind") && !slices.Contains(r.Verbs, "escalate") {
			without = append(without, r)
		}
	}
	if len(without) != len(role.Rules)-2 {
		t.Fatalf("want one bind and one escalate rule among %v", role.Rules)
	}
	as := func(user string, rules []rbacv1.PolicyRule) *rest.Config {
		f.bind(user, rules)
		cfg := rest.CopyConfig(f.cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return cfg
	}
	user := "inrun-crew-" + f.ns
	crew := &unstructured.Unstructured{}
	crew.SetGroupVersionKind(crewGVK)
	crew.SetName("blue")
	crew.SetNamespace(f.ns)
	crew.Object["spec"] = map[string]any{"role": "admin"}
	if err := f.admin.Create(context.Background(), crew); err != nil {
		t.Fatal(err)
	}
	state := func(condType, status, message string) func() string {
		return func() string {
			got, err := f.get(crewGVK, f.ns, "blue")
			if err != nil {
				return err.Error()
			}
			msg := conditionMessage(got, condType)
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if c := c.(map[string]any); c["type"] == condType && c["status"] == status && strings.Contains(msg, message) {
					return ""
				}
			}
			return condType + " is not " + status + " with " + message + ": " + msg
		}
	}

	rt := f.start(as(user+"-nobind", without), nil, nil)
	f.eventually(60*time.Second, "refused without bind and escalate", state("Degraded", "True", "attempting to grant RBAC permissions not currently held"))
	rt.stop()

	f.start(as(user, role.Rules), nil, nil)
	f.eventually(60*time.Second, "Ready with what inrun rbac prints", state("Ready", "True", ""))
	for _, name := range []string{"blue-view", "blue-members"} {
		b, err := f.get(schema.GroupVersionKind{Group: rbacv1.GroupName, Version: "v1", Kind: "RoleBinding"}, f.ns, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("RoleBinding %s to %v", name, b.Object["roleRef"])
	}
}
