package rbac_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/rbac"
)

func compile(t *testing.T, path string) *ir.Blueprint {
	t.Helper()
	bp, err := compiler.CompileFile(path, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

func TestClusterRoleOfTheCopyExample(t *testing.T) {
	bp := compile(t, "../packs/declarative/04-copy-across-namespaces/blueprint.yaml")
	role := rbac.ClusterRole(bp)
	got := map[string][]string{}
	for _, r := range role.Rules {
		got[r.APIGroups[0]+"/"+r.Resources[0]] = r.Verbs
	}
	crd := bp.Resource.Group + "/" + bp.Resource.Plural
	want := map[string][]string{
		crd:                    {"get", "list", "patch", "watch"},
		crd + "/status":        {"get", "patch"},
		crd + "/finalizers":    {"update"},
		"/secrets":             {"create", "delete", "get", "list", "patch", "watch"},
		"/events":              {"create", "patch"},
		"events.k8s.io/events": {"create", "patch"},
		// No Leases: those of leader election and the shards are in the
		// runtime's namespace (OwnNamespaceRole), not every namespace's.
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

func TestExternalRefIsReadOnly(t *testing.T) {
	bp := &ir.Blueprint{Name: "x", Resource: ir.Resource{Plural: "things"}}
	bp.Resource.Group = "example.dev"
	ref := &ir.Child{ID: "source", External: true, Plural: "configmaps", Namespaced: true}
	ref.Version, ref.Kind = "v1", "ConfigMap"
	bp.Children = []*ir.Child{ref}
	for _, r := range rbac.Rules(bp) {
		if r.Resources[0] == "configmaps" && strings.Join(r.Verbs, ",") != "get,list,watch" {
			t.Errorf("an externalRef's kind gets %v; want only get, list, watch", r.Verbs)
		}
	}
}

func TestRoleRefusesClusterScopedKinds(t *testing.T) {
	bp := compile(t, "../packs/website/blueprint.yaml")
	role, err := rbac.Role(bp, "shop")
	if err != nil || role.Namespace != "shop" || role.Kind != "Role" {
		t.Fatalf("Role = %v, %v", role, err)
	}
	bp.Children = append(bp.Children, &ir.Child{ID: "ns", Plural: "namespaces"})
	bp.Children[len(bp.Children)-1].Kind = "Namespace"
	if _, err := rbac.Role(bp, "shop"); err == nil || !strings.Contains(err.Error(), "Namespace (ns)") {
		t.Errorf("a Role for a Blueprint with a Namespace child: err = %v, want a refusal naming it", err)
	}
	// A kind the reconciler may return counts too: its RBAC is the Role's.
	bp = compile(t, "../packs/website/blueprint.yaml")
	ns := ir.ResourceKind{Plural: "namespaces"}
	ns.Version, ns.Kind = "v1", "Namespace"
	bp.Reconcile = &ir.Reconcile{Remote: &ir.Remote{URL: "https://reconciler.example", Resources: []ir.ResourceKind{ns}}}
	if _, err := rbac.Role(bp, "shop"); err == nil || !strings.Contains(err.Error(), "Namespace (reconcile.resources)") {
		t.Errorf("a Role for a Blueprint whose reconciler returns Namespaces: err = %v, want a refusal naming them", err)
	}
}

func TestMarker(t *testing.T) {
	rules := rbac.Rules(compile(t, "../packs/website/blueprint.yaml"))
	var markers []string
	for _, r := range rules {
		markers = append(markers, rbac.Marker(r))
	}
	want := `+kubebuilder:rbac:groups="",resources=services,verbs=create;delete;get;list;patch;watch`
	if !strings.Contains(strings.Join(markers, "\n"), want) {
		t.Errorf("markers lack %s:\n%s", want, strings.Join(markers, "\n"))
	}
	var _ rbacv1.PolicyRule = rules[0].ToRule()
}

// TestSelectorIsReadOnly: the kind an externalRef selects by label is
// listed and watched, never written.
func TestSelectorIsReadOnly(t *testing.T) {
	bp := compile(t, "../packs/declarative/09-conditions-and-selectors/blueprint.yaml")
	found := false
	for _, r := range rbac.Rules(bp) {
		if r.Groups[0] == "" && r.Resources[0] == "services" {
			found = true
			if got := strings.Join(r.Verbs, ","); got != "get,list,watch" {
				t.Errorf("the selected Services get %s; want get,list,watch", got)
			}
		}
	}
	if !found {
		t.Error("no rule for the Services the Router selects")
	}
}

func TestWorkflowTTLMayDeleteTheCustomResource(t *testing.T) {
	verbs := func(bp *ir.Blueprint) string {
		for _, r := range rbac.Rules(bp) {
			if r.Resources[0] == "things" {
				return strings.Join(r.Verbs, ",")
			}
		}
		return ""
	}
	bp := &ir.Blueprint{Name: "x", Resource: ir.Resource{Plural: "things"}}
	bp.Reconcile = &ir.Reconcile{Remote: &ir.Remote{URL: "http://x"}, Workflow: &ir.Workflow{}}
	if v := verbs(bp); strings.Contains(v, "delete") {
		t.Errorf("a workflow without ttlSecondsAfterFinished may %s: it deletes nothing", v)
	}
	ttl := int64(60)
	bp.Reconcile.Workflow.TTLSecondsAfterFinished = &ttl
	if v := verbs(bp); !strings.Contains(v, "delete") {
		t.Errorf("ttlSecondsAfterFinished deletes the custom resource, but the role only may %s", v)
	}
}

// bindOnClusterRoles returns the markers of bp's rules that bind
// ClusterRoles.
func bindOnClusterRoles(bp *ir.Blueprint) []string {
	var out []string
	for _, r := range rbac.Rules(bp) {
		if slices.Contains(r.Verbs, "bind") && r.Resources[0] == "clusterroles" {
			out = append(out, rbac.Marker(r))
		}
	}
	return out
}

// TestEscalationOfRolesAndBindings: without bind and escalate the API
// server refuses a runtime's role and binding children granting what the
// runtime itself does not hold (the built-in admin, edit and view roles).
func TestEscalationOfRolesAndBindings(t *testing.T) {
	bp := compile(t, "testdata/bindings.yaml")
	var got []string
	for _, r := range rbac.Rules(bp) {
		if slices.Contains(r.Verbs, "bind") || slices.Contains(r.Verbs, "escalate") {
			got = append(got, rbac.Marker(r))
		}
	}
	want := []string{
		// view by name, then every ClusterRole (the members' role is an
		// expression): every ClusterRole, as a name cannot narrow it.
		"+kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind",
		"+kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,resourceNames=local-reader,verbs=bind",
		"+kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=escalate",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bind and escalate rules (-want +got):\n%s", diff)
	}

	// Without the binding whose role is an expression, view is named.
	bp.Children = slices.DeleteFunc(bp.Children, func(c *ir.Child) bool { return c.ID == "members" })
	got = bindOnClusterRoles(bp)
	if want := []string{"+kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,resourceNames=view,verbs=bind"}; !cmp.Equal(want, got) {
		t.Errorf("bind on clusterroles = %v, want %v", got, want)
	}

	// A role the spec names from an enum: bind on those roles only.
	src, err := os.ReadFile("testdata/bindings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	enum := strings.Replace(string(src), `role: string | default="edit"`, `role: string | default="edit" enum="edit,admin"`, 1)
	bp, err = compiler.Compile(load.Bytes("testdata/bindings.yaml", []byte(enum)), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got = bindOnClusterRoles(bp)
	if want := []string{"+kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,resourceNames=admin;edit;view,verbs=bind"}; !cmp.Equal(want, got) {
		t.Errorf("bind on clusterroles with an enum of roles = %v, want %v", got, want)
	}

	// The website pack has no such child: no bind, no escalate.
	for _, r := range rbac.Rules(compile(t, "../packs/website/blueprint.yaml")) {
		if slices.Contains(r.Verbs, "bind") || slices.Contains(r.Verbs, "escalate") {
			t.Errorf("the website pack's role may %v", r.Verbs)
		}
	}
}

// TestControllerMayUpdate: a controller-runtime reconciler writes itself,
// with Update as kubebuilder's do (Status().Update, r.Update), so its
// custom resource, status and declared kinds get update; the runtime's
// own writes (every other Blueprint's) are patches, and get none.
func TestControllerMayUpdate(t *testing.T) {
	bp := &ir.Blueprint{Name: "memcached", Resource: ir.Resource{Plural: "memcacheds"}}
	bp.Resource.Group = "cache.example.com"
	deployments := ir.ResourceKind{Plural: "deployments", Namespaced: true}
	deployments.Group, deployments.Version, deployments.Kind = "apps", "v1", "Deployment"
	bp.Reconcile = &ir.Reconcile{Remote: &ir.Remote{Controller: &ir.GoRef{Name: "memcached"}, Resources: []ir.ResourceKind{deployments}}}
	check := func(what string, want map[string]string) {
		t.Helper()
		got := map[string]string{}
		for _, r := range rbac.Rules(bp) {
			got[r.Groups[0]+"/"+r.Resources[0]] = strings.Join(r.Verbs, ",")
		}
		for res, verbs := range want {
			if got[res] != verbs {
				t.Errorf("%s's %s: %q, want %q", what, res, got[res], verbs)
			}
		}
	}
	check("a controller", map[string]string{
		"cache.example.com/memcacheds":        "get,list,patch,update,watch",
		"cache.example.com/memcacheds/status": "get,patch,update",
		"apps/deployments":                    "create,delete,get,list,patch,update,watch",
	})
	bp.Reconcile.Remote.Controller, bp.Reconcile.Remote.Go = nil, &ir.GoRef{Name: "memcached"}
	check("a Go reconciler", map[string]string{
		"cache.example.com/memcacheds":        "get,list,patch,watch",
		"cache.example.com/memcacheds/status": "get,patch",
		"apps/deployments":                    "create,delete,get,list,patch,watch",
	})
}

// TestWarnings: a binding child whose role is an expression, and a role
// child, are named (whoever may create the custom resource may use the
// runtime's bind or escalate); a binding to a role named literally, or
// limited by an enum, is not.
func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	write := func(roleName string) *ir.Blueprint {
		t.Helper()
		src := `apiVersion: inrun.dev/v1alpha1
kind: Blueprint
metadata: {name: grant}
schema:
  apiVersion: v1
  group: example.inrun.dev
  kind: Grant
  spec:
    role: string
    limited: string | enum="view,edit"
onReconcile:
  - id: binding
    template:
      apiVersion: rbac.authorization.k8s.io/v1
      kind: ClusterRoleBinding
      metadata: {name: "${self.metadata.name}"}
      roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + roleName + `}
      subjects: [{kind: User, name: "${self.metadata.name}", apiGroup: rbac.authorization.k8s.io}]
`
		path := dir + "/blueprint.yaml"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return compile(t, path)
	}
	if w := rbac.Warnings(write(`"${self.spec.role}"`)); len(w) != 1 || !strings.Contains(w[0], "child binding is a ClusterRoleBinding whose roleRef.name is an expression: the runtime may bind every ClusterRole") {
		t.Errorf("an expression's role: %q", w)
	}
	for _, name := range []string{"view", `"${self.spec.limited}"`} {
		if w := rbac.Warnings(write(name)); len(w) != 0 {
			t.Errorf("role %s: %q; want no warning", name, w)
		}
	}
}
