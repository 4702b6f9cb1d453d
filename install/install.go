package install

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/rbac"
	"github.com/inrun/inrun/runtime-lib/shard"
)

// Defaults of Options.
const (
	DefaultNamespace       = "inrun-system"
	DefaultImageRepository = "inrun"
	DefaultImageTag        = "latest"
	DefaultReplicas        = 2
)

// The runtime's ports: metrics over HTTPS (--metrics-secure: only a
// bearer token allowed to get /metrics, such as one bound to the
// NAME-metrics-reader ClusterRole, reads them), and the probes, as inrun
// run's --health-probe-bind-address defaults them.
const (
	MetricsPort = 8443
	ProbePort   = 8081
)

// Name names the Deployment, its ServiceAccount and PodDisruptionBudget.
const Name = "inrun"

// KeepPolicy is the annotation Helm reads to leave an object on uninstall:
// the CRDs, whose deletion would delete every custom resource.
const KeepPolicy = "helm.sh/resource-policy"

// keepCRD are the annotations by which Helm, Argo CD and Flux each leave
// a CRD in place when the release, application or kustomization that
// installed it goes; and the label by which kubectl delete -k can leave
// it too (-l 'app.kubernetes.io/component!=crd'), as it reads none.
var keepCRD = map[string]string{
	KeepPolicy:                          "keep",
	"argocd.argoproj.io/sync-options":   "Delete=false",
	"kustomize.toolkit.fluxcd.io/prune": "disabled",
}

// LabelComponent is the label that says what part of the install an
// object is; a CRD's is ComponentCRD.
const (
	LabelComponent = "app.kubernetes.io/component"
	ComponentCRD   = "crd"
)

// Options say what to install. Every field but Blueprints has a default.
type Options struct {
	// Blueprints run by the runtime; each is stored in a ConfigMap of the
	// namespace, and its RBAC and CRD are installed. Required.
	Blueprints []*ir.Blueprint
	// Namespace of the runtime and the Blueprint ConfigMaps. Default
	// DefaultNamespace; the chart uses the release's namespace instead.
	Namespace string
	// ImageRepository and ImageTag name the inrun image. Default
	// DefaultImageRepository (with Operator, NAME-operator, as inrun
	// build names the operator) and DefaultImageTag.
	ImageRepository, ImageTag string
	// PullPolicy of the image. Default IfNotPresent.
	PullPolicy corev1.PullPolicy
	// Replicas of the runtime: one leads, the others stand by. Default
	// DefaultReplicas.
	Replicas int32
	// Shards runs every replica with --shards instead of leader election:
	// the replicas share the custom resources, each reconciling its
	// buckets of them (docs/runtime.md#sharding).
	Shards bool
	// ShardSelection is how, with Shards, each replica's caches select its
	// custom resources: the runtime's --shard-selection. Default
	// shard.SelectAuto; without Shards it must be empty or auto.
	ShardSelection shard.Selection
	// Operator installs the operator inrun build generates from the one
	// Blueprint instead of the interpreted runtime: its image runs the
	// operator, which embeds the Blueprint, so there are no Blueprint
	// ConfigMaps nor the Role reading them, and the objects are named
	// NAME-operator.
	Operator bool
	// Resources of the runtime's container. Nil takes DefaultResources; an
	// empty one sets none.
	Resources *corev1.ResourceRequirements
	// NodeSelector, Tolerations, Affinity and PriorityClassName place the
	// runtime's Pods. None by default.
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	Affinity          *corev1.Affinity
	PriorityClassName string
	// ServiceMonitor adds a ServiceMonitor (the Prometheus Operator's,
	// monitoring.coreos.com/v1) that scrapes the metrics Service, labelled
	// with ServiceMonitorLabels too (the labels a Prometheus selects its
	// ServiceMonitors by, such as release). The chart has it always,
	// rendered when its value serviceMonitor.enabled is true.
	ServiceMonitor       bool
	ServiceMonitorLabels map[string]string
	// WatchNamespaces confine the runtime to these namespaces (its
	// --namespace): it reconciles only the custom resources in them and
	// caches only them, so each Blueprint's rules are a Role in each
	// instead of a ClusterRole, beside a Role in Namespace for its Leases
	// and Events and one in the namespace of a reconciler's token Secret.
	// Empty, the default: every namespace. A Blueprint with a
	// cluster-scoped kind cannot be confined. The chart's value
	// watchNamespaces.
	WatchNamespaces []string
}

// ServiceMonitorInterval is how often the ServiceMonitor has the metrics
// scraped: the Prometheus Operator's own default.
const ServiceMonitorInterval = "30s"

// DefaultResources are the runtime container's requests and limits unless
// Options say others. The memory request covers about 1,000 custom
// resources with two children each (docs/performance.md); the limit, about
// 20,000. There is no CPU limit, so that a burst of events is not
// throttled, only a request the scheduler reserves.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
}

// process names what the install runs, in the comments of its values:
// the runtime (inrun run), or the operator.
func (o *Options) process() string {
	if o.Operator {
		return "operator"
	}
	return "runtime"
}

// name names the Deployment, its ServiceAccount, PodDisruptionBudget and
// Service (NAME-metrics).
func (o *Options) name() string {
	if o.Operator {
		return o.Blueprints[0].Name + "-operator"
	}
	return Name
}

func (o *Options) setDefaults() error {
	if len(o.Blueprints) == 0 {
		return errors.New("install: no Blueprints")
	}
	if o.Operator && len(o.Blueprints) != 1 {
		return fmt.Errorf("an operator runs one Blueprint; %d given", len(o.Blueprints))
	}
	if err := ir.OneBlueprintPerKind(o.Blueprints); err != nil {
		return err
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.ImageRepository == "" {
		o.ImageRepository = DefaultImageRepository
		if o.Operator {
			o.ImageRepository = o.name()
		}
	}
	if o.ImageTag == "" {
		o.ImageTag = DefaultImageTag
	}
	if o.PullPolicy == "" {
		o.PullPolicy = corev1.PullIfNotPresent
	}
	if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.Resources == nil {
		r := DefaultResources()
		o.Resources = &r
	}
	var errs []error
	sel, err := shard.ParseSelection(string(o.ShardSelection))
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("ShardSelection: %w", err))
	case sel != shard.SelectAuto && !o.Shards:
		errs = append(errs, fmt.Errorf("ShardSelection %s selects the shards' custom resources: set Shards too, or leave it out", sel))
	}
	o.ShardSelection = sel
	seen := map[string]bool{}
	for _, ns := range o.WatchNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("watched namespace %q is not a namespace name: %s", ns, strings.Join(msgs, "; ")))
		} else if seen[ns] {
			errs = append(errs, fmt.Errorf("watched namespace %s is given twice: give it once", ns))
		}
		seen[ns] = true
	}
	for _, k := range sortedKeys(o.ServiceMonitorLabels) {
		for _, msg := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(o.ServiceMonitorLabels[k])...) {
			errs = append(errs, fmt.Errorf("ServiceMonitor label %s=%s: %s", k, o.ServiceMonitorLabels[k], msg))
		}
	}
	return errors.Join(errs...)
}

// Objects returns every object to install, in the order to apply them:
// CRDs, RBAC, ConfigMaps, then the runtime.
func Objects(opts Options) ([]*unstructured.Unstructured, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	all, err := objects(opts, opts.Namespace, opts.ImageRepository+":"+opts.ImageTag, opts.PullPolicy, opts.Replicas, replication(opts), opts.WatchNamespaces)
	if err != nil {
		return nil, err
	}
	confine := len(opts.WatchNamespaces) > 0
	var out []*unstructured.Unstructured
	var errs []error
	for _, p := range all {
		switch {
		case p.when == unconfined && confine, (p.when == confined || p.when == inWatched) && !confine:
			continue
		case p.when == confined && slices.Contains(opts.WatchNamespaces, p.unlessWatched):
			continue
		case p.refuse != "":
			errs = append(errs, errors.New(p.refuse))
			continue
		}
		out = append(out, p.obj)
	}
	return out, errors.Join(errs...)
}

// when says in which installs an object is. The chart holds every object,
// each rendered as the value watchNamespaces says; Objects keeps those of
// its Options.
type when int

const (
	always when = iota
	// unconfined objects are there when the runtime watches every
	// namespace: the ClusterRoles and their bindings.
	unconfined
	// confined ones when it watches some.
	confined
	// inWatched ones are made once in each watched namespace: the
	// Blueprints' Roles and their bindings.
	inWatched
)

// placed is an object of the install and the installs it is in.
type placed struct {
	obj  *unstructured.Unstructured
	when when
	// unlessWatched leaves a confined object out where its namespace is
	// watched: a Role in a watched namespace already grants what it does.
	unlessWatched string
	// refuse, when set, is why the inWatched object cannot be made: no
	// Role can grant what a Blueprint needs. obj is nil.
	refuse string
}

// replication is the flags that say how the replicas share the work: one
// leads, or each reconciles its shard, its custom resources selected as
// opts say.
func replication(opts Options) []string {
	if opts.Shards {
		return []string{"--shards", "--shard-selection=" + string(opts.ShardSelection)}
	}
	return []string{"--leader-elect=true"}
}

// objects builds the objects with the values given apart from opts, so
// that Chart can give placeholders for them: watch are the watched
// namespaces, each object inWatched made for each.
func objects(opts Options, namespace, image string, pull corev1.PullPolicy, replicas int32, replication, watch []string) ([]placed, error) {
	name := opts.name()
	// labels select the runtime's Pods.
	labels := map[string]string{"app.kubernetes.io/name": name, LabelComponent: "runtime"}
	var typed []runtime.Object
	// whens says, by its index in typed, in which installs an object is
	// but always.
	whens := map[int]placed{}
	add := func(p placed, objs ...runtime.Object) {
		for _, obj := range objs {
			whens[len(typed)] = p
			typed = append(typed, obj)
		}
	}
	var refused []placed
	var errs []error
	bps := opts.Blueprints
	if !opts.Operator {
		// The runtime runs the Blueprints they use too, as inrun run
		// does. An operator runs its own Blueprint only: a used one has
		// its own operator, or runtime, and chart, which install its CRD.
		bps = ir.WithUsed(bps)
	}
	seenCRD := map[string]bool{}
	for _, bp := range bps {
		if crd := bp.Resource.CRD; crd != nil && !seenCRD[crd.Name] {
			seenCRD[crd.Name] = true
			c := crd.DeepCopy()
			c.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			maps.Copy(c.Annotations, keepCRD)
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[LabelComponent] = ComponentCRD
			typed = append(typed, c)
		}
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}
	typed = append(typed, sa)
	for _, bp := range bps {
		role := rbac.ClusterRole(bp)
		add(placed{when: unconfined}, role, clusterRoleBinding(role, subject))
	}
	// Leases in its own namespace only, confined or not.
	own := rbac.OwnNamespaceRole(name, namespace)
	typed = append(typed, own, roleBinding(own, subject))
	// The metrics endpoint's reviews, confined or not; the reader role is
	// for the platform to bind its scraper to.
	metricsAuth := rbac.MetricsAuthRole(name)
	typed = append(typed, metricsAuth, clusterRoleBinding(metricsAuth, subject), rbac.MetricsReaderRole(name))
	// Confined, the Blueprints' rules in each watched namespace.
	for _, bp := range bps {
		if cluster := rbac.ClusterScoped(bp); len(cluster) > 0 {
			refused = append(refused, placed{when: inWatched, refuse: fmt.Sprintf("blueprint %s reads or writes cluster-scoped kinds (%s), which no Role grants: the runtime cannot be confined to namespaces; leave watchNamespaces (--watch-namespace) empty", bp.Name, strings.Join(cluster, ", "))})
			continue
		}
		for _, ns := range watch {
			role, err := rbac.Role(bp, ns)
			if err != nil {
				return nil, err
			}
			add(placed{when: inWatched}, role, roleBinding(role, subject))
		}
		if role := rbac.TokenSecretRole(bp); role != nil {
			add(placed{when: confined, unlessWatched: role.Namespace}, role, roleBinding(role, subject))
		}
	}
	if !opts.Operator {
		cmRole := rbac.ConfigMapsRole(namespace)
		typed = append(typed, cmRole, roleBinding(cmRole, subject))
		names, err := configMapNames(bps)
		if err != nil {
			errs = append(errs, err)
		}
		for _, bp := range bps {
			if names[bp] == "" {
				continue
			}
			cm, err := configMap(bp, names[bp], namespace)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			typed = append(typed, cm)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	args := append([]string{
		"run",
		"--from-configmaps",
		"--configmap-namespace=" + namespace,
	}, replication...)
	// The leader's Lease, or the shards'.
	args = append(args, "--leader-election-namespace="+namespace)
	if opts.Operator {
		// The operator's flags are kubebuilder's; its Leases are in its
		// own namespace.
		args = slices.Clone(replication)
	}
	if len(watch) > 0 {
		args = append(args, "--namespace="+strings.Join(watch, ","))
	}
	args = append(args,
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
		"--metrics-secure",
		fmt.Sprintf("--health-probe-bind-address=:%d", ProbePort),
		"--zap-devel=false",
	)
	dep := deployment(name, labels, namespace, image, pull, replicas, args)
	pod := &dep.Spec.Template.Spec
	pod.Containers[0].Resources = *opts.Resources
	pod.NodeSelector, pod.Tolerations, pod.Affinity, pod.PriorityClassName = opts.NodeSelector, opts.Tolerations, opts.Affinity, opts.PriorityClassName
	typed = append(typed, dep, &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		// One replica leads; a drain may take one at a time.
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}, &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-metrics", Namespace: namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}},
		},
	})

	out := make([]placed, len(typed), len(typed)+1+len(refused))
	for i, obj := range typed {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		if containers, ok, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers"); ok {
			// No resources are none, as the chart renders them.
			for _, c := range containers {
				if r, ok := c.(map[string]any)["resources"].(map[string]any); ok && len(r) == 0 {
					delete(c.(map[string]any), "resources")
				}
			}
			if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
				return nil, err
			}
		}
		out[i] = whens[i]
		out[i].obj = u
	}
	if opts.ServiceMonitor {
		out = append(out, placed{obj: serviceMonitor(name, namespace, labels, opts.ServiceMonitorLabels)})
	}
	return append(out, refused...), nil
}

// clusterRoleBinding binds role to subjects.
func clusterRoleBinding(role *rbacv1.ClusterRole, subjects []rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Labels: role.Labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   subjects,
	}
}

// roleBinding binds role to subjects, in role's namespace.
func roleBinding(role *rbacv1.Role, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: role.Namespace, Labels: role.Labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   subjects,
	}
}

// serviceMonitor scrapes the metrics Service of the runtime named name.
// Its type is the Prometheus Operator's, which Inrun does not link: it is
// written as the Operator's documentation shows it.
func serviceMonitor(name, namespace string, labels, extra map[string]string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": merged(labels, extra)},
		"spec": map[string]any{
			"selector":          map[string]any{"matchLabels": merged(labels)},
			"namespaceSelector": map[string]any{"matchNames": []any{namespace}},
			// The runtime's certificate is self-signed; the scrape's
			// token is Prometheus's own, which must be bound to the
			// NAME-metrics-reader ClusterRole.
			"endpoints": []any{map[string]any{
				"port": "metrics", "path": "/metrics", "interval": ServiceMonitorInterval, "scheme": "https",
				"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
				"tlsConfig":       map[string]any{"insecureSkipVerify": true},
			}},
		},
	}}
}

// merged is the labels of every map, the later ones winning, as an
// unstructured object holds them.
func merged(maps ...map[string]string) map[string]any {
	out := map[string]any{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// configMapNames names the ConfigMap of each Blueprint: blueprint-NAME,
// or, for one another uses, the name the runtime reads it under: after
// its directory, or its file (load.UsedConfigMap).
func configMapNames(bps []*ir.Blueprint) (map[*ir.Blueprint]string, error) {
	var errs []error
	names := map[*ir.Blueprint]string{}
	byFile := map[string]*ir.Blueprint{}
	for _, bp := range bps {
		byFile[filepath.Clean(bp.File)] = bp
		names[bp] = "blueprint-" + bp.Name
	}
	used := map[*ir.Blueprint]string{}
	for _, bp := range bps {
		for _, u := range bp.Uses {
			if u.Compiled == nil {
				continue
			}
			target := byFile[filepath.Clean(u.Compiled.File)]
			if target == nil {
				continue // not run: bps come from ir.WithUsed
			}
			name := load.UsedConfigMap(u.File)
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("blueprint %s uses %s, which the runtime reads from the ConfigMap %q, not a valid name (%s): rename its directory, or its file when it is not blueprint.yaml", bp.Name, u.File, name, strings.Join(msgs, "; ")))
				names[target] = ""
				continue
			}
			if other, ok := used[target]; ok && other != name {
				errs = append(errs, fmt.Errorf("blueprint %s is used as %s and as %s: its one ConfigMap cannot have both names; name it one way", target.Name, other, name))
				continue
			}
			used[target] = name
			names[target] = name
		}
	}
	owner := map[string]*ir.Blueprint{}
	for _, bp := range bps {
		name := names[bp]
		if other, ok := owner[name]; ok && name != "" {
			errs = append(errs, fmt.Errorf("blueprints %s (%s) and %s (%s) would both be kept in the ConfigMap %s: rename a directory", other.Name, other.File, bp.Name, bp.File, name))
			continue
		}
		owner[name] = bp
	}
	return names, errors.Join(errs...)
}

// configMap stores bp as inrun run --from-configmaps reads it, in the
// ConfigMap name: the Blueprint under load.KeyBlueprint, and each file it
// names (its crd.file, the CRD manifest of a uses: crd:) under its base
// name. A used Blueprint has a ConfigMap of its own.
func configMap(bp *ir.Blueprint, name, namespace string) (*corev1.ConfigMap, error) {
	if bp.File == "" {
		return nil, fmt.Errorf("blueprint %s was not read from a file: there is nothing to store", bp.Name)
	}
	data := map[string]string{}
	b, err := os.ReadFile(bp.File)
	if err != nil {
		return nil, err
	}
	data[load.KeyBlueprint] = string(b)
	files := []string{}
	if f := bp.Resource.CRDFile; f != "" {
		files = append(files, f)
	}
	for _, u := range bp.Uses {
		if u.Compiled == nil && u.File != "" {
			files = append(files, u.File)
		}
	}
	from := map[string]string{load.KeyBlueprint: filepath.Base(bp.File)}
	for _, f := range files {
		key := filepath.Base(f)
		if other, ok := from[key]; ok && other != f {
			return nil, fmt.Errorf("blueprint %s names %s and %s, which a ConfigMap, being flat, keeps under one key %s: rename one", bp.Name, other, f, key)
		}
		from[key] = f
		b, err := os.ReadFile(filepath.Join(filepath.Dir(bp.File), f))
		if err != nil {
			return nil, err
		}
		data[key] = string(b)
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: load.ConfigMapSelector()},
		Data:       data,
	}, nil
}

// deployment runs the image with args, as the ServiceAccount name, under
// the restricted Pod Security Standard.
func deployment(name string, labels map[string]string, namespace, image string, pull corev1.PullPolicy, replicas int32, args []string) *appsv1.Deployment {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("probes")}}}
	}
	liveness, readiness := probe("/healthz"), probe("/readyz")
	liveness.InitialDelaySeconds = 15
	liveness.PeriodSeconds = 20
	readiness.InitialDelaySeconds = 5
	readiness.PeriodSeconds = 10
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            name,
					TerminationGracePeriodSeconds: ptr(int64(40)), // the runtime's 30-second graceful shutdown, and some
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(int64(65532)),
						RunAsGroup:     ptr(int64(65532)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "runtime",
						Image:           image,
						ImagePullPolicy: pull,
						Args:            args,
						Ports: []corev1.ContainerPort{
							{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
							{Name: "probes", ContainerPort: ProbePort, Protocol: corev1.ProtocolTCP},
						},
						LivenessProbe:  liveness,
						ReadinessProbe: readiness,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr(false),
							ReadOnlyRootFilesystem:   ptr(true),
							RunAsNonRoot:             ptr(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						// The root filesystem is read-only: Go's temporary
						// files go here.
						VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
					}},
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

// FileName names the file an object is written to, in apply order when
// the names are sorted.
func FileName(i int, u *unstructured.Unstructured) string {
	return fmt.Sprintf("%02d-%s-%s.yaml", i, strings.ToLower(u.GetKind()), u.GetName())
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }
