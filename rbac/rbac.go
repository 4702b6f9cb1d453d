package rbac

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrbac "sigs.k8s.io/controller-tools/pkg/rbac"

	"github.com/inrun/inrun/ir"
)

// The verbs the runtime uses, by what it does with an object.
var (
	// ReadVerbs serve informers and externalRef reads.
	ReadVerbs = []string{"get", "list", "watch"}
	// ChildVerbs are ReadVerbs plus create (onCreate), patch (server-side
	// apply) and delete (prune and cleanup).
	ChildVerbs = []string{"create", "delete", "get", "list", "patch", "watch"}
	// ResourceVerbs are what the runtime does to the custom resource itself:
	// read it and patch its finalizers, labels and annotations (and, with
	// --shards, its bucket label). It never sends an update.
	ResourceVerbs = []string{"get", "list", "patch", "watch"}
	// StatusVerbs write status with server-side apply, a patch.
	StatusVerbs = []string{"get", "patch"}
	// EventVerbs record Events.
	EventVerbs = []string{"create", "patch"}
	// LeaseVerbs run leader election.
	LeaseVerbs = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
)

// Rules returns the rules bp needs, merged per group and resource, sorted.
func Rules(bp *ir.Blueprint) []ctrbac.Rule {
	set := map[[2]string]map[string]bool{}
	add := func(group, resource string, verbs []string) {
		k := [2]string{group, resource}
		if set[k] == nil {
			set[k] = map[string]bool{}
		}
		for _, v := range verbs {
			set[k][v] = true
		}
	}
	r := bp.Resource
	add(r.Group, r.Plural, ResourceVerbs)
	add(r.Group, r.Plural+"/status", StatusVerbs)
	// Owner references with blockOwnerDeletion need update on finalizers.
	add(r.Group, r.Plural+"/finalizers", []string{"update"})
	if rec := bp.Reconcile; rec != nil && rec.Workflow != nil && rec.Workflow.TTLSecondsAfterFinished != nil {
		// ttlSecondsAfterFinished deletes the finished custom resource.
		add(r.Group, r.Plural, []string{"delete"})
	}
	var escalation []ctrbac.Rule
	for _, c := range bp.Children {
		if c.External {
			add(c.Group, c.Plural, ReadVerbs)
		} else {
			add(c.Group, c.Plural, ChildVerbs)
			escalation = append(escalation, escalationRules(bp, c.Kind, c.Group, c.Template)...)
		}
	}
	// A controller-runtime reconciler (reconcile.go.controller) writes the
	// custom resource and its objects itself, and kubebuilder's write with
	// Update as often as with Patch (Status().Update, r.Update). Inrun's
	// own writes are patches.
	controller := bp.Reconcile != nil && bp.Reconcile.Remote != nil && bp.Reconcile.Remote.Controller != nil
	if controller {
		add(r.Group, r.Plural, []string{"update"})
		add(r.Group, r.Plural+"/status", []string{"update"})
	}
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil {
		for _, k := range bp.Reconcile.Remote.Resources {
			add(k.Group, k.Plural, ChildVerbs)
			if controller {
				add(k.Group, k.Plural, []string{"update"})
			}
			escalation = append(escalation, escalationRules(bp, k.Kind, k.Group, nil)...)
		}
	}
	add("", "events", EventVerbs)
	add("events.k8s.io", "events", EventVerbs)
	// No Leases: leader election's and the shards' are in the runtime's
	// own namespace, granted there by OwnNamespaceRole. Here they would be
	// every namespace's, kube-node-lease's node heartbeats included.

	keys := make([][2]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	rules := make([]ctrbac.Rule, 0, len(keys)+1)
	if bp.Reconcile != nil && bp.Reconcile.Remote != nil && bp.Reconcile.Remote.TokenSecret != nil {
		// Only the one Secret the token is in.
		rules = append(rules, ctrbac.Rule{Groups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{bp.Reconcile.Remote.TokenSecret.Name}, Verbs: []string{"get"}})
	}
	for _, k := range keys {
		verbs := make([]string, 0, len(set[k]))
		for v := range set[k] {
			verbs = append(verbs, v)
		}
		sort.Strings(verbs)
		rules = append(rules, ctrbac.Rule{Groups: []string{k[0]}, Resources: []string{k[1]}, Verbs: verbs})
	}
	return append(rules, mergeEscalation(escalation)...)
}

// RBAC's escalation prevention refuses to write a role granting, or a
// binding to a role holding, a permission its writer does not hold, unless
// the writer may escalate that role or bind it. A runtime cannot hold
// every permission its children grant, so a child that is a role gets
// escalate on its kind, and one that is a binding gets bind on the role it
// refers to: by name when the template's roleRef names it literally, on
// every role of the kind otherwise (a name from an expression can be any).
// A reconciler that may return such kinds (names unknown) gets both kinds.
func escalationRules(bp *ir.Blueprint, kind, group string, template *ir.Value) []ctrbac.Rule {
	if group != rbacv1.GroupName {
		return nil
	}
	switch kind {
	case "Role", "ClusterRole":
		return []ctrbac.Rule{{Groups: []string{group}, Resources: []string{strings.ToLower(kind) + "s"}, Verbs: []string{"escalate"}}}
	case "RoleBinding", "ClusterRoleBinding":
	default:
		return nil
	}
	roleRef := template.Lookup("roleRef")
	kinds := []string{"ClusterRole", "Role"}
	if kind == "ClusterRoleBinding" {
		kinds = []string{"ClusterRole"}
	}
	if k := literal(roleRef.Lookup("kind")); k != "" {
		kinds = []string{k}
	}
	var names []string
	if name := literal(roleRef.Lookup("name")); name != "" {
		names = []string{name}
	} else {
		names = specEnum(bp, roleRef.Lookup("name"))
	}
	var out []ctrbac.Rule
	for _, k := range kinds {
		out = append(out, ctrbac.Rule{Groups: []string{group}, Resources: []string{strings.ToLower(k) + "s"}, ResourceNames: names, Verbs: []string{"bind"}})
	}
	return out
}

// Warnings names what in bp lets whoever may create its custom resources
// use rights the runtime holds beyond their own: a binding child whose
// role is named by an expression (bind on every role of its kind, so any,
// cluster-admin included, can be bound), a role child (escalate: it may
// hold any rule), and a remote reconciler that may return either. check
// and rbac print them; nothing refuses them, since a platform may mean it.
func Warnings(bp *ir.Blueprint) []string {
	var out []string
	for _, c := range bp.Children {
		if c.External || c.Group != rbacv1.GroupName {
			continue
		}
		switch c.Kind {
		case "Role", "ClusterRole":
			out = append(out, fmt.Sprintf("child %s is a %s: the runtime may escalate %ss, so whoever may create a %s decides the rules it holds, as far as the template lets them", c.ID, c.Kind, c.Kind, bp.Resource.Kind))
		case "RoleBinding", "ClusterRoleBinding":
			for _, r := range escalationRules(bp, c.Kind, c.Group, c.Template) {
				if len(r.ResourceNames) == 0 {
					role := map[string]string{"clusterroles": "ClusterRole", "roles": "Role"}[r.Resources[0]]
					out = append(out, fmt.Sprintf("child %s is a %s whose roleRef.name is an expression: the runtime may bind every %s, so whoever may create a %s can have it bind any of them, cluster-admin included; name the role literally, or list the roles allowed as an enum of the spec field it reads", c.ID, c.Kind, role, bp.Resource.Kind))
				}
			}
		}
	}
	if rec := bp.Reconcile; rec != nil && rec.Remote != nil {
		for _, k := range rec.Remote.Resources {
			if k.Group == rbacv1.GroupName && slices.Contains([]string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}, k.Kind) {
				out = append(out, fmt.Sprintf("reconcile.resources declares %s: the runtime may escalate or bind any role for the reconciler, so the reconciler (and whoever may create a %s, as far as it lets them) decides what it grants", k.Kind, bp.Resource.Kind))
			}
		}
	}
	return out
}

// specEnum returns the values a field of the custom resource's spec may
// take, when v is that field alone (${self.spec.role}) and the CRD's
// schema lists them (enum): the roles a binding child may refer to.
func specEnum(bp *ir.Blueprint, v *ir.Value) []string {
	if v == nil || v.Kind != ir.Expression || v.Expr == nil || bp.Resource.Schema == nil {
		return nil
	}
	path := strings.Split(strings.TrimSpace(v.Expr.Source), ".")
	if len(path) < 3 || path[0] != "self" || path[1] != "spec" {
		return nil
	}
	s := bp.Resource.Schema
	for _, f := range path[1:] {
		p, ok := s.Properties[f]
		if !ok {
			return nil
		}
		s = &p
	}
	var names []string
	for _, e := range s.Enum {
		var name string
		if json.Unmarshal(e.Raw, &name) != nil || name == "" {
			return nil
		}
		names = append(names, name)
	}
	return names
}

// literal returns v's text when v is a literal string, "" otherwise.
func literal(v *ir.Value) string {
	if v == nil || v.Kind != ir.Literal {
		return ""
	}
	s, _ := v.Literal.(string)
	return s
}

// mergeEscalation merges rules of one resource and verb: their names
// joined, sorted, or none when any of them may touch every object.
func mergeEscalation(rules []ctrbac.Rule) []ctrbac.Rule {
	type key struct{ resource, verb string }
	names := map[key][]string{}
	every := map[key]bool{}
	for _, r := range rules {
		k := key{r.Resources[0], r.Verbs[0]}
		if len(r.ResourceNames) == 0 {
			every[k] = true
		}
		names[k] = append(names[k], r.ResourceNames...)
	}
	keys := slices.SortedFunc(maps.Keys(names), func(a, b key) int {
		return strings.Compare(a.resource+" "+a.verb, b.resource+" "+b.verb)
	})
	out := make([]ctrbac.Rule, 0, len(keys))
	for _, k := range keys {
		r := ctrbac.Rule{Groups: []string{rbacv1.GroupName}, Resources: []string{k.resource}, Verbs: []string{k.verb}}
		if !every[k] {
			r.ResourceNames = slices.Compact(slices.Sorted(slices.Values(names[k])))
		}
		out = append(out, r)
	}
	return out
}

// PolicyRules converts rules to the RBAC API's form.
func PolicyRules(rules []ctrbac.Rule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i := range rules {
		out[i] = rules[i].ToRule()
	}
	return out
}

// RoleName is the name of the role a Blueprint's runtime is bound to.
func RoleName(bp *ir.Blueprint) string { return "inrun-" + bp.Name }

// ClusterRole returns the ClusterRole bp needs.
func ClusterRole(bp *ir.Blueprint) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName(bp), Labels: map[string]string{"app.kubernetes.io/managed-by": "inrun", "inrun.dev/blueprint": bp.Name}},
		Rules:      PolicyRules(Rules(bp)),
	}
}

// Role returns a namespaced Role for a runtime that watches one namespace.
// It fails when bp needs something a Role cannot grant: a cluster-scoped
// kind (ClusterScoped).
func Role(bp *ir.Blueprint, namespace string) (*rbacv1.Role, error) {
	if cluster := ClusterScoped(bp); len(cluster) > 0 {
		return nil, fmt.Errorf("a Role cannot grant cluster-scoped kinds: %s; use the ClusterRole (drop --namespace)", strings.Join(cluster, ", "))
	}
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName(bp), Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "inrun", "inrun.dev/blueprint": bp.Name}},
		Rules:      PolicyRules(Rules(bp)),
	}, nil
}

// ClusterScoped lists the cluster-scoped kinds bp reads or writes (its
// custom resource's, a child's with its id, one its reconciler may
// return), which only a ClusterRole can grant: a runtime running bp cannot
// be confined to namespaces.
func ClusterScoped(bp *ir.Blueprint) []string {
	var cluster []string
	if !bp.Resource.Namespaced {
		cluster = append(cluster, bp.Resource.Kind)
	}
	for _, c := range bp.Children {
		if !c.Namespaced {
			cluster = append(cluster, c.Kind+" ("+c.ID+")")
		}
	}
	if rec := bp.Reconcile; rec != nil && rec.Remote != nil {
		for _, k := range rec.Remote.Resources {
			if !k.Namespaced {
				cluster = append(cluster, k.Kind+" (reconcile.resources)")
			}
		}
	}
	return cluster
}

// Marker renders a rule as the +kubebuilder:rbac marker controller-gen reads.
func Marker(r ctrbac.Rule) string {
	group := strings.Join(r.Groups, ";")
	names := ""
	if len(r.ResourceNames) > 0 {
		names = ",resourceNames=" + strings.Join(r.ResourceNames, ";")
	}
	return fmt.Sprintf("+kubebuilder:rbac:groups=%s,resources=%s%s,verbs=%s",
		quoteEmpty(group), strings.Join(r.Resources, ";"), names, strings.Join(r.Verbs, ";"))
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// The verbs of the intent gateway, by what it does.
var (
	// GatewayResourceVerbs are what the gateway does to the custom
	// resources of the kinds it serves: read them, watch them for views,
	// server-side apply them (patch, and create for a new one) and delete
	// them.
	GatewayResourceVerbs = []string{"create", "delete", "get", "list", "patch", "watch"}
	// GatewayTokenVerbs read the tokens' Secrets.
	GatewayTokenVerbs = []string{"get"}
	// GatewayRecordVerbs keep the idempotency records' Leases.
	GatewayRecordVerbs = []string{"create", "delete", "get", "list", "update"}
)

// GatewayName is the name of the gateway's roles.
const GatewayName = "inrun-gateway"

// GatewayRules returns the rules the intent gateway needs on the cluster
// for the Blueprints it serves: their custom resources (nothing else of
// theirs: the gateway never reads children) and Events. Its own namespace's
// rules are GatewayNamespaceRules.
func GatewayRules(bps []*ir.Blueprint) []ctrbac.Rule {
	byGroup := map[string][]string{}
	for _, bp := range bps {
		if bp.Serve == nil {
			continue
		}
		r := bp.Resource
		if !slicesContains(byGroup[r.Group], r.Plural) {
			byGroup[r.Group] = append(byGroup[r.Group], r.Plural)
		}
	}
	// An intent whose custom resource a kind move took elsewhere is looked
	// for there (get), to say where it went.
	movedTo := map[string][]string{}
	for _, bp := range bps {
		if m := bp.Migrate; bp.Serve != nil && m != nil && !slicesContains(byGroup[m.To.Group], m.To.Plural) && !slicesContains(movedTo[m.To.Group], m.To.Plural) {
			movedTo[m.To.Group] = append(movedTo[m.To.Group], m.To.Plural)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var rules []ctrbac.Rule
	for _, g := range groups {
		res := byGroup[g]
		sort.Strings(res)
		rules = append(rules, ctrbac.Rule{Groups: []string{g}, Resources: res, Verbs: GatewayResourceVerbs})
	}
	for _, g := range slices.Sorted(maps.Keys(movedTo)) {
		res := movedTo[g]
		sort.Strings(res)
		rules = append(rules, ctrbac.Rule{Groups: []string{g}, Resources: res, Verbs: []string{"get"}})
	}
	rules = append(rules, ctrbac.Rule{Groups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}})
	return rules
}

// GatewayNamespaceRules are what the gateway needs in its own namespace:
// reading the tokens' Secrets, keeping the idempotency records' Leases.
func GatewayNamespaceRules() []ctrbac.Rule {
	return []ctrbac.Rule{
		{Groups: []string{""}, Resources: []string{"secrets"}, Verbs: GatewayTokenVerbs},
		{Groups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: GatewayRecordVerbs},
	}
}

// Gateway returns the ClusterRole and the Role (in namespace, the
// gateway's own) that the intent gateway needs to serve bps, and nothing
// more.
func Gateway(bps []*ir.Blueprint, namespace string) (*rbacv1.ClusterRole, *rbacv1.Role) {
	labels := map[string]string{"app.kubernetes.io/managed-by": "inrun", "app.kubernetes.io/component": "gateway"}
	return &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: GatewayName, Labels: labels},
			Rules:      PolicyRules(GatewayRules(bps)),
		}, &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: GatewayName, Namespace: namespace, Labels: labels},
			Rules:      PolicyRules(GatewayNamespaceRules()),
		}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ConfigMapsRole is the Role a runtime started with --from-configmaps
// needs beside each Blueprint's ClusterRole: reading and watching the
// Blueprint ConfigMaps of its one namespace. The ConfigMaps' Events are
// granted by the ClusterRoles already.
func ConfigMapsRole(namespace string) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: "inrun-blueprints", Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "inrun"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: ReadVerbs}},
	}
}

// OwnNamespaceRole is the Role a runtime needs in its own namespace
// (the leader-election namespace): its Leases (leader election, or the
// shards') and the Events it records there (on the Blueprint ConfigMaps;
// each Blueprint's ClusterRole grants Events, but a runtime confined to
// some namespaces has only Roles there).
func OwnNamespaceRole(name, namespace string) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "inrun"}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: LeaseVerbs},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: EventVerbs},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: EventVerbs},
		},
	}
}

// TokenSecretRole is the Role that lets a runtime confined to some
// namespaces read the one Secret bp's reconciler token is in, in that
// Secret's namespace; nil when bp names none.
func TokenSecretRole(bp *ir.Blueprint) *rbacv1.Role {
	rec := bp.Reconcile
	if rec == nil || rec.Remote == nil || rec.Remote.TokenSecret == nil {
		return nil
	}
	ref := rec.Remote.TokenSecret
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: RoleName(bp) + "-token", Namespace: ref.Namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "inrun", "inrun.dev/blueprint": bp.Name}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{ref.Name}, Verbs: []string{"get"}}},
	}
}

// MetricsAuthRole is the ClusterRole a runtime or operator started with
// --metrics-secure needs (named NAME-metrics-auth): it asks the API
// server who a scraper's bearer token is (TokenReview) and whether that
// identity may get /metrics (SubjectAccessReview). Both reviews are
// cluster-wide, so a runtime confined to namespaces needs it too.
func MetricsAuthRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-metrics-auth", Labels: map[string]string{"app.kubernetes.io/managed-by": "inrun"}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
	}
}

// MetricsReaderRole is the ClusterRole (NAME-metrics-reader) to bind a
// scraper, such as Prometheus's ServiceAccount, to: what a runtime or
// operator started with --metrics-secure asks of a bearer token.
func MetricsReaderRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-metrics-reader", Labels: map[string]string{"app.kubernetes.io/managed-by": "inrun"}},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
}
