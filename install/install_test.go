package install_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/inrun/inrun/codegen"
	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/install"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/runtime-lib/shard"
)

func website(t *testing.T) *ir.Blueprint {
	t.Helper()
	bp, err := compiler.CompileFile("../packs/website/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return bp
}

// helmTemplate is helm template: it loads the chart in dir and renders it
// as a release named inrun in namespace, with values over the defaults.
func helmTemplate(t *testing.T, dir, namespace string, values map[string]any) map[string]map[string]any {
	t.Helper()
	out, err := helmRender(t, dir, namespace, values)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]map[string]any{}
	for name, text := range out {
		if strings.HasSuffix(name, "/NOTES.txt") {
			// What helm install prints; helm template leaves it out.
			if !strings.Contains(text, "keeps the CRDs") {
				t.Errorf("%s says nothing of the CRDs kept:\n%s", name, text)
			}
			continue
		}
		// A template may render several documents (one per watched
		// namespace), as Helm splits them.
		for _, doc := range strings.Split("\n"+text, "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s does not render to YAML: %v\n%s", name, err, text)
			}
			if m == nil {
				continue // a template its values leave empty, as helm template skips it
			}
			if _, ok := objs[key(m)]; ok {
				t.Errorf("%s renders %s, which another template renders too", name, key(m))
			}
			objs[key(m)] = m
		}
	}
	return objs
}

// helmRender renders the chart in dir with values, as helm template does:
// each template's text, or the error of a template that fails.
func helmRender(t *testing.T, dir, namespace string, values map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := util.ToRenderValues(ch, values, common.ReleaseOptions{Name: "inrun", Namespace: namespace, IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Render(ch, vals)
}

// writeChart writes the chart of opts into a new directory and returns it.
func writeChart(t *testing.T, opts install.Options) string {
	t.Helper()
	chart, err := install.Chart(opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := chart.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kustomizeBuild is kustomize build of a base, with kustomize's library.
func kustomizeBuild(t *testing.T, files install.Files) map[string]map[string]any {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for name, b := range files {
		if err := fs.WriteFile(filepath.Join("/base", name), b); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/base")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	objs := map[string]map[string]any{}
	for _, r := range res.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		// As sigs.k8s.io/yaml reads the chart's: numbers as float64.
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		objs[key(m)] = m
	}
	if len(objs) != len(files)-1 {
		t.Errorf("kustomize builds %d objects, the base has %d files besides kustomization.yaml", len(objs), len(files)-1)
	}
	return objs
}

// key names an object by kind, namespace and name.
func key(m map[string]any) string {
	u := unstructured.Unstructured{Object: m}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// TestChartLintsAndRendersTheBase lints the chart with Helm's linter, and
// renders it with Helm's engine (helm template), with its default values
// and with others: each time it gives the objects kustomize builds from the
// base made with the same values. The operator's chart is checked as
// inrun install chart --operator writes it, and as inrun build writes it
// into the generated project's chart/.
func TestChartLintsAndRendersTheBase(t *testing.T) {
	for _, source := range []string{"runtime", "operator", "inrun build"} {
		t.Run(source, func(t *testing.T) { testChart(t, source) })
	}
}

func testChart(t *testing.T, source string) {
	bp := website(t)
	operator := source != "runtime"
	chart, err := install.Chart(install.Options{Blueprints: []*ir.Blueprint{bp}, Operator: operator})
	if err != nil {
		t.Fatal(err)
	}
	if source == "inrun build" {
		p, err := codegen.Generate(bp, os.DirFS("../packs/website"), codegen.Options{Chart: chart})
		if err != nil {
			t.Fatal(err)
		}
		chart = install.Files{}
		for name, data := range p.Files {
			if rest, ok := strings.CutPrefix(name, codegen.ChartDir+"/"); ok {
				chart[rest] = data
			}
		}
		if chart["Chart.yaml"] == nil {
			t.Fatalf("the generated project has no %s/Chart.yaml: %v", codegen.ChartDir, p.Paths())
		}
	}
	dir := t.TempDir()
	if err := chart.Write(dir); err != nil {
		t.Fatal(err)
	}
	res := lint.RunAll(dir, nil, install.DefaultNamespace)
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %v", m)
		}
	}

	for _, tc := range []struct {
		name   string
		opts   install.Options
		values map[string]any
	}{
		{"defaults", install.Options{}, nil},
		{"values", install.Options{Namespace: "platform", ImageRepository: "example/inrun", ImageTag: "v1.2.3", PullPolicy: "Always", Replicas: 3},
			map[string]any{"image": map[string]any{"repository": "example/inrun", "tag": "v1.2.3", "pullPolicy": "Always"}, "replicaCount": 3}},
		{"shards", install.Options{Replicas: 4, Shards: true}, map[string]any{"replicaCount": 4, "shards": true}},
		{"shards selected by the API server", install.Options{Shards: true, ShardSelection: shard.SelectServer}, map[string]any{"shards": true, "shardSelection": "server"}},
		{"placement", install.Options{
			// Helm merges the values given into the defaults.
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
			},
			NodeSelector:      map[string]string{"node-role.kubernetes.io/control-plane": ""},
			Tolerations:       []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Affinity:          &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}}},
			PriorityClassName: "system-cluster-critical",
		}, map[string]any{
			"resources":         map[string]any{"requests": map[string]any{"memory": "2Gi"}, "limits": map[string]any{"memory": "4Gi"}},
			"nodeSelector":      map[string]any{"node-role.kubernetes.io/control-plane": ""},
			"tolerations":       []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}},
			"affinity":          map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 100, "podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname"}}}}},
			"priorityClassName": "system-cluster-critical",
		}},
		{"no resources", install.Options{Resources: &corev1.ResourceRequirements{}}, map[string]any{"resources": nil}},
		{"service monitor", install.Options{ServiceMonitor: true, ServiceMonitorLabels: map[string]string{"release": "prometheus"}},
			map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}}},
		{"watch namespaces", install.Options{Namespace: "platform", WatchNamespaces: []string{"shop", "blog"}, Shards: true},
			map[string]any{"watchNamespaces": []any{"shop", "blog"}, "shards": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Blueprints, tc.opts.Operator = []*ir.Blueprint{bp}, operator
			ns := tc.opts.Namespace
			if ns == "" {
				ns = install.DefaultNamespace
			}
			rendered := helmTemplate(t, dir, ns, tc.values)
			files, err := install.Kustomize(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := kustomizeBuild(t, files)
			for name, obj := range want {
				if !strings.HasPrefix(name, "Deployment/") {
					continue
				}
				containers, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "containers")
				args := fmt.Sprint(containers[0].(map[string]any)["args"])
				if strings.Contains(args, "--shards") != tc.opts.Shards || strings.Contains(args, "--leader-elect=") == tc.opts.Shards {
					t.Errorf("%s (shards %v): args %s", name, tc.opts.Shards, args)
				}
				selection := tc.opts.ShardSelection
				if selection == "" {
					selection = shard.SelectAuto
				}
				if strings.Contains(args, "--shard-selection="+string(selection)) != tc.opts.Shards || strings.Count(args, "--shard-selection") > 1 {
					t.Errorf("%s (shards %v, selection %s): args %s", name, tc.opts.Shards, selection, args)
				}
				if confined := len(tc.opts.WatchNamespaces) > 0; strings.Contains(args, "--namespace=") != confined || confined && !strings.Contains(args, "--namespace="+strings.Join(tc.opts.WatchNamespaces, ",")+" ") {
					t.Errorf("%s (watch %v): args %s", name, tc.opts.WatchNamespaces, args)
				}
				// The values reach the Pod (the base and the chart could
				// otherwise agree by both leaving them out).
				pod, _, _ := unstructured.NestedMap(obj, "spec", "template", "spec")
				resources := containers[0].(map[string]any)["resources"]
				switch tc.name {
				case "placement":
					if pod["priorityClassName"] != "system-cluster-critical" || pod["nodeSelector"] == nil || pod["tolerations"] == nil || pod["affinity"] == nil || fmt.Sprint(resources) != "map[limits:map[memory:4Gi] requests:map[cpu:100m memory:2Gi]]" {
						t.Errorf("%s: the placement is not in the Pod: resources %v, spec %v", name, resources, pod)
					}
				case "no resources":
					if resources != nil {
						t.Errorf("%s: resources %v, want none", name, resources)
					}
				default:
					if fmt.Sprint(resources) != "map[limits:map[memory:1Gi] requests:map[cpu:100m memory:128Mi]]" {
						t.Errorf("%s: resources %v, want the defaults", name, resources)
					}
				}
			}
			checkServiceMonitor(t, want, tc.opts.ServiceMonitor)
			checkConfined(t, want, tc.opts)
			if len(rendered) != len(want) {
				t.Errorf("the chart renders %d objects, the base has %d", len(rendered), len(want))
			}
			for name, w := range want {
				if got := rendered[name]; !reflect.DeepEqual(got, w) {
					a, _ := yaml.Marshal(got)
					b, _ := yaml.Marshal(w)
					t.Errorf("%s: the chart renders\n%s\nthe base has\n%s", name, a, b)
				}
			}
		})
	}
}

// checkConfined checks the RBAC of objs, an install with opts: confined
// to namespaces, a Role and RoleBinding of the Blueprint in each and one
// for the Leases and Events in the runtime's namespace, no ClusterRole but
// the metrics endpoint's; else the ClusterRole and its binding, and no
// Role but the ConfigMaps'.
func checkConfined(t *testing.T, objs map[string]map[string]any, opts install.Options) {
	t.Helper()
	ns := opts.Namespace
	if ns == "" {
		ns = install.DefaultNamespace
	}
	name := install.Name
	if opts.Operator {
		name = "website-operator"
	}
	// Leases (and Events) in its own namespace, confined or not: no rule
	// grants Leases anywhere else.
	want := map[string]bool{"Role/" + ns + "/" + name: true, "RoleBinding/" + ns + "/" + name: true}
	// The metrics endpoint's reviews are cluster-wide, confined or not;
	// the reader role is bound by whoever scrapes.
	want["ClusterRole//"+name+"-metrics-auth"] = true
	want["ClusterRoleBinding//"+name+"-metrics-auth"] = true
	want["ClusterRole//"+name+"-metrics-reader"] = true
	if len(opts.WatchNamespaces) == 0 {
		want["ClusterRole//inrun-website"] = true
		want["ClusterRoleBinding//inrun-website"] = true
	} else {
		for _, w := range opts.WatchNamespaces {
			want["Role/"+w+"/inrun-website"] = true
			want["RoleBinding/"+w+"/inrun-website"] = true
		}
	}
	if !opts.Operator {
		want["Role/"+ns+"/inrun-blueprints"] = true
		want["RoleBinding/"+ns+"/inrun-blueprints"] = true
	}
	got := map[string]bool{}
	for k, obj := range objs {
		switch obj["kind"] {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			got[k] = true
		}
		if rules, _, _ := unstructured.NestedSlice(obj, "rules"); strings.Contains(fmt.Sprint(rules), "leases") && k != "Role/"+ns+"/"+name {
			t.Errorf("%s grants Leases: only the Role in the runtime's own namespace may", k)
		}
		if obj["kind"] == "RoleBinding" || obj["kind"] == "ClusterRoleBinding" {
			subjects, _, _ := unstructured.NestedSlice(obj, "subjects")
			if len(subjects) != 1 || fmt.Sprint(subjects[0]) != fmt.Sprintf("map[kind:ServiceAccount name:%s namespace:%s]", name, ns) {
				t.Errorf("%s binds %v, want the ServiceAccount %s/%s", k, subjects, ns, name)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("watching %v, the RBAC objects are\n%v\nwant\n%v", opts.WatchNamespaces, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// TestConfinedInstallRefusesClusterScopedKinds: a Blueprint with a
// cluster-scoped child cannot be confined to namespaces: Objects refuses
// naming the child and the fix, and the chart renders without
// watchNamespaces and refuses to with it, saying the same. A reconciler's
// token Secret is readable through a Role in its own namespace, unless
// that namespace is watched.
func TestConfinedInstallRefusesClusterScopedKinds(t *testing.T) {
	bp := website(t)
	bp.Children = append(bp.Children, &ir.Child{ID: "tenant", GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Plural: "namespaces"})
	const want = "blueprint website reads or writes cluster-scoped kinds (Namespace (tenant)), which no Role grants: the runtime cannot be confined to namespaces; leave watchNamespaces (--watch-namespace) empty"
	if _, err := install.Objects(install.Options{Blueprints: []*ir.Blueprint{bp}, WatchNamespaces: []string{"shop"}}); err == nil || err.Error() != want {
		t.Errorf("confined: %v, want %q", err, want)
	}
	if _, err := install.Objects(install.Options{Blueprints: []*ir.Blueprint{bp}}); err != nil {
		t.Errorf("unconfined: %v", err)
	}
	dir := writeChart(t, install.Options{Blueprints: []*ir.Blueprint{bp}})
	if _, err := helmRender(t, dir, "default", nil); err != nil {
		t.Errorf("rendering without watchNamespaces: %v", err)
	}
	if _, err := helmRender(t, dir, "default", map[string]any{"watchNamespaces": []any{"shop"}}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("rendering with watchNamespaces: %v, want %q", err, want)
	}

	for _, tc := range []struct{ ns, opts string }{{"payments", "Role/payments/inrun-website-token"}, {"shop", ""}} {
		bp := website(t)
		bp.Reconcile = &ir.Reconcile{Remote: &ir.Remote{URL: "https://reconciler.example", TokenSecret: &ir.SecretKeyRef{Namespace: tc.ns, Name: "reconciler-token", Key: "token"}}}
		opts := install.Options{Blueprints: []*ir.Blueprint{bp}, WatchNamespaces: []string{"shop"}}
		objs, err := install.Objects(opts)
		if err != nil {
			t.Fatal(err)
		}
		var tokenRoles []string
		for _, u := range objs {
			if strings.HasSuffix(u.GetName(), "-token") {
				tokenRoles = append(tokenRoles, u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName())
			}
		}
		want := []string(nil)
		if tc.opts != "" {
			want = []string{tc.opts, "RoleBinding/payments/inrun-website-token"}
		}
		if !reflect.DeepEqual(tokenRoles, want) {
			t.Errorf("token Secret in %s, watching shop: %v, want %v", tc.ns, tokenRoles, want)
		}
		// The chart agrees with the base.
		rendered := helmTemplate(t, writeChart(t, opts), install.DefaultNamespace, nil)
		files, err := install.Kustomize(opts)
		if err != nil {
			t.Fatal(err)
		}
		if base := kustomizeBuild(t, files); !reflect.DeepEqual(slices.Sorted(maps.Keys(rendered)), slices.Sorted(maps.Keys(base))) {
			t.Errorf("token Secret in %s: the chart renders %v, the base has %v", tc.ns, slices.Sorted(maps.Keys(rendered)), slices.Sorted(maps.Keys(base)))
		}
	}
}

// TestChartRefusesShardSelection: the chart refuses a shardSelection the
// runtime would refuse, saying which ones it takes, and Options refuse
// one, or a selection without shards, naming the field.
func TestChartRefusesShardSelection(t *testing.T) {
	bp := website(t)
	dir := writeChart(t, install.Options{Blueprints: []*ir.Blueprint{bp}})
	values := map[string]any{"shards": true, "shardSelection": "uid"}
	_, err := helmRender(t, dir, "default", values)
	if err == nil || !strings.Contains(err.Error(), `shardSelection "uid": give one of auto, labels, server`) {
		t.Errorf("rendering with shardSelection uid: %v, want it refused", err)
	}
	// Without shards the value is not used, so not checked either.
	values["shards"] = false
	if _, err := helmRender(t, dir, "default", values); err != nil {
		t.Errorf("rendering without shards: %v", err)
	}

	for _, tc := range []struct {
		opts install.Options
		want string
	}{
		{install.Options{Shards: true, ShardSelection: "uid"}, `ShardSelection: unknown shard selection "uid": want auto, labels or server`},
		{install.Options{ShardSelection: shard.SelectLabels}, "ShardSelection labels selects the shards' custom resources: set Shards too"},
	} {
		tc.opts.Blueprints = []*ir.Blueprint{bp}
		if _, err := install.Objects(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.opts.ShardSelection, err, tc.want)
		}
	}
}

// checkServiceMonitor checks that objs hold a ServiceMonitor when and only
// when want says so, and that it selects the metrics Service by its labels
// and port, in its namespace, with the labels asked for.
func checkServiceMonitor(t *testing.T, objs map[string]map[string]any, want bool) {
	t.Helper()
	var monitor, service *unstructured.Unstructured
	for _, obj := range objs {
		u := &unstructured.Unstructured{Object: obj}
		switch {
		case u.GetKind() == "ServiceMonitor":
			monitor = u
		case u.GetKind() == "Service" && strings.HasSuffix(u.GetName(), "-metrics"):
			service = u
		}
	}
	if (monitor != nil) != want {
		t.Fatalf("a ServiceMonitor: %v, want %v", monitor != nil, want)
	}
	if monitor == nil {
		return
	}
	if service == nil {
		t.Fatal("no metrics Service for the ServiceMonitor")
	}
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	if len(selector) == 0 || !labels.SelectorFromSet(selector).Matches(labels.Set(service.GetLabels())) {
		t.Errorf("the ServiceMonitor selects %v, not the Service labelled %v", selector, service.GetLabels())
	}
	if ns, _, _ := unstructured.NestedStringSlice(monitor.Object, "spec", "namespaceSelector", "matchNames"); fmt.Sprint(ns) != fmt.Sprint([]string{service.GetNamespace()}) {
		t.Errorf("the ServiceMonitor looks in namespaces %v, want the Service's %s", ns, service.GetNamespace())
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
	if len(endpoints) != 1 || len(ports) != 1 || endpoints[0].(map[string]any)["port"] != ports[0].(map[string]any)["name"] {
		t.Errorf("the ServiceMonitor scrapes %v, the Service has ports %v", endpoints, ports)
	}
	if monitor.GetLabels()["release"] != "prometheus" {
		t.Errorf("the ServiceMonitor is labelled %v, want release=prometheus too", monitor.GetLabels())
	}
}

// TestChartPrintsBraces: a Blueprint holding "{{" is stored as it is, not
// run as a template by Helm.
func TestChartPrintsBraces(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../packs/website/blueprint.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src = append(src, "# {{ .Values.image }} stays as written\n"...)
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	crd, err := os.ReadFile("../packs/website/manifests/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blueprint.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "crd.yaml"), crd, 0o644); err != nil {
		t.Fatal(err)
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chart, err := install.Chart(install.Options{Blueprints: []*ir.Blueprint{bp}})
	if err != nil {
		t.Fatal(err)
	}
	chartDir := t.TempDir()
	if err := chart.Write(chartDir); err != nil {
		t.Fatal(err)
	}
	var found bool
	defer func() {
		// A placeholder in a Blueprint is refused, not made a template.
		bad := append(src, "# replicas: 424242\n"...)
		if err := os.WriteFile(filepath.Join(dir, "blueprint.yaml"), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := install.Chart(install.Options{Blueprints: []*ir.Blueprint{bp}}); err == nil || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("a Blueprint holding a placeholder: %v, want a refusal", err)
		}
	}()
	for _, obj := range helmTemplate(t, chartDir, install.DefaultNamespace, nil) {
		if obj["kind"] != "ConfigMap" {
			continue
		}
		data, _ := obj["data"].(map[string]any)
		found = data["blueprint.yaml"] == string(src)
	}
	if !found {
		t.Error("the rendered Blueprint ConfigMap does not hold the Blueprint as written")
	}
}

// TestObjects checks what a platform team relies on: exactly the RBAC inrun
// rbac derives, CRDs kept on uninstall, the restricted security context.
func TestObjects(t *testing.T) {
	objs, err := install.Objects(install.Options{Blueprints: []*ir.Blueprint{website(t)}})
	if err != nil {
		t.Fatal(err)
	}
	checkObjects(t, objs, false)
	objs, err = install.Objects(install.Options{Blueprints: []*ir.Blueprint{website(t)}, Operator: true})
	if err != nil {
		t.Fatal(err)
	}
	checkObjects(t, objs, true)
}

func checkObjects(t *testing.T, objs []*unstructured.Unstructured, operator bool) {
	t.Helper()
	kinds := map[string]int{}
	for _, u := range objs {
		kinds[u.GetKind()]++
		switch u.GetKind() {
		case "CustomResourceDefinition":
			a := u.GetAnnotations()
			if a[install.KeepPolicy] != "keep" || a["argocd.argoproj.io/sync-options"] != "Delete=false" || a["kustomize.toolkit.fluxcd.io/prune"] != "disabled" {
				t.Errorf("CRD %s is not kept on uninstall by Helm, Argo CD and Flux: %v", u.GetName(), a)
			}
			if u.GetLabels()[install.LabelComponent] != install.ComponentCRD {
				t.Errorf("CRD %s has no label kubectl delete -k -l %s!=%s can leave it by", u.GetName(), install.LabelComponent, install.ComponentCRD)
			}
		case "Deployment":
			text, _ := yaml.Marshal(u.Object)
			if got := strings.Contains(string(text), "--from-configmaps"); got == operator {
				t.Errorf("operator %v: the Deployment runs inrun run --from-configmaps: %v", operator, got)
			}
			if operator && u.GetName() != "website-operator" {
				t.Errorf("the operator's Deployment is %s, want website-operator", u.GetName())
			}
			for _, want := range []string{"--leader-elect=true", "--metrics-secure", "readOnlyRootFilesystem: true", "allowPrivilegeEscalation: false", "runAsNonRoot: true", "path: /healthz", "path: /readyz"} {
				if !strings.Contains(string(text), want) {
					t.Errorf("the Deployment lacks %q", want)
				}
			}
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget", "Service"} {
		want := 1
		switch {
		case operator && k == "ConfigMap":
			want = 0 // the operator embeds its Blueprint
		case !operator && (k == "Role" || k == "RoleBinding"):
			want = 2 // the Blueprint ConfigMaps', and the Leases'
		case k == "ClusterRole":
			want = 3 // the Blueprint's, and the metrics endpoint's reviews and readers
		case k == "ClusterRoleBinding":
			want = 2 // the Blueprint's, and the metrics endpoint's reviews
		}
		if kinds[k] != want {
			t.Errorf("operator %v: %d %s objects, want %d", operator, kinds[k], k, want)
		}
	}
}

// TestObjectsOfUsedBlueprints: the runtime runs the Blueprints the given
// ones use, so the install holds their CRDs, ClusterRoles and ConfigMaps,
// each once, the used one in the ConfigMap named as the runtime reads it;
// and every ConfigMap compiles back, as inrun run --from-configmaps
// compiles it, to the Blueprint installed.
func TestObjectsOfUsedBlueprints(t *testing.T) {
	const pack = "../packs/declarative/07-composition"
	shop, err := compiler.CompileFile(pack+"/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	database, err := compiler.CompileFile(pack+"/database/blueprint.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, given := range [][]*ir.Blueprint{{shop}, {shop, database}, {database, shop}} {
		objs, err := install.Objects(install.Options{Blueprints: given})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		configMaps := map[string]*corev1.ConfigMap{}
		for _, u := range objs {
			k := u.GetKind() + "/" + u.GetName()
			if got[k] {
				t.Errorf("%d given: %s twice", len(given), k)
			}
			got[k] = true
			if u.GetKind() == "ConfigMap" {
				cm := &corev1.ConfigMap{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
					t.Fatal(err)
				}
				configMaps[cm.Name] = cm
			}
		}
		for _, k := range []string{
			"CustomResourceDefinition/shops.example.inrun.dev", "CustomResourceDefinition/databases.example.inrun.dev",
			"ClusterRole/inrun-composition", "ClusterRole/inrun-database",
			"ClusterRoleBinding/inrun-composition", "ClusterRoleBinding/inrun-database",
			"ConfigMap/blueprint-composition", "ConfigMap/database",
		} {
			if !got[k] {
				t.Errorf("%d given: no %s among %v", len(given), k, got)
			}
		}
		if len(configMaps) != 2 {
			t.Errorf("%d given: %d ConfigMaps, want 2", len(given), len(configMaps))
		}
		get := func(namespace, name string) (*corev1.ConfigMap, error) { return configMaps[name], nil }
		for name, cm := range configMaps {
			if cm.Labels[load.LabelRole] != load.RoleBlueprint {
				t.Errorf("ConfigMap %s is not labelled %s=%s: the runtime would not run it", name, load.LabelRole, load.RoleBlueprint)
			}
			bp, err := compiler.CompileConfigMaps(get)(cm)
			if err != nil {
				t.Errorf("ConfigMap %s does not compile as the runtime compiles it: %v", name, err)
				continue
			}
			want := map[string]string{"blueprint-composition": "composition", "database": "database"}[name]
			if bp.Name != want {
				t.Errorf("ConfigMap %s holds Blueprint %s, want %s", name, bp.Name, want)
			}
		}
	}

	// An operator runs its own Blueprint only.
	objs, err := install.Objects(install.Options{Blueprints: []*ir.Blueprint{shop}, Operator: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if strings.Contains(u.GetName(), "database") {
			t.Errorf("the operator of composition installs %s %s, which it does not run", u.GetKind(), u.GetName())
		}
	}
}

// TestConfigMapHoldsUsedCRD: the CRD manifest a uses: crd: names is kept
// in the Blueprint's ConfigMap, where the runtime's compiler reads it.
func TestConfigMapHoldsUsedCRD(t *testing.T) {
	dir := t.TempDir()
	for dst, src := range map[string]string{
		"blueprint.yaml":             "../packs/website/blueprint.yaml",
		"manifests/crd.yaml":         "../packs/website/manifests/crd.yaml",
		"manifests/certificate.yaml": "../compiler/testdata/manifests/certificate.yaml",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if dst == "blueprint.yaml" {
			b = append(b, "uses:\n  - crd: manifests/certificate.yaml\n"...)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(dst)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bp, err := compiler.CompileFile(filepath.Join(dir, "blueprint.yaml"), compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := install.Objects(install.Options{Blueprints: []*ir.Blueprint{bp}})
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	crds := 0
	for _, u := range objs {
		switch u.GetKind() {
		case "ConfigMap":
			cm = &corev1.ConfigMap{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cm); err != nil {
				t.Fatal(err)
			}
		case "CustomResourceDefinition":
			crds++
		}
	}
	if crds != 1 {
		t.Errorf("%d CRDs installed, want 1: a uses: crd: is another's to install", crds)
	}
	if cm == nil || cm.Data["certificate.yaml"] == "" {
		t.Fatalf("the ConfigMap does not keep certificate.yaml: %v", cm)
	}
	if _, err := compiler.CompileConfigMaps(nil)(cm); err != nil {
		t.Errorf("the ConfigMap does not compile as the runtime compiles it: %v", err)
	}
}

// TestUsedConfigMapNamesClash: two used Blueprints in directories of one
// name would share a ConfigMap: refused, naming it.
func TestUsedConfigMapNamesClash(t *testing.T) {
	const pack = "../packs/declarative/07-composition"
	dir := t.TempDir()
	var bps []*ir.Blueprint
	for _, app := range []string{"a", "b"} {
		for dst, src := range map[string]string{
			"blueprint.yaml":              pack + "/blueprint.yaml",
			"manifests/crd.yaml":          pack + "/manifests/crd.yaml",
			"database/blueprint.yaml":     pack + "/database/blueprint.yaml",
			"database/manifests/crd.yaml": pack + "/database/manifests/crd.yaml",
		} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, app, dst)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bp, err := compiler.CompileFile(filepath.Join(dir, app, "blueprint.yaml"), compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		bps = append(bps, bp)
	}
	if _, err := install.Objects(install.Options{Blueprints: bps}); err == nil || !strings.Contains(err.Error(), "ConfigMap database") {
		t.Errorf("two used Blueprints in directories named database: %v, want a refusal naming the ConfigMap", err)
	}
}
