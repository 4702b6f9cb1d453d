package builtin

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate returns what the API server's validation of a built-in kind
// refuses in u's spec, for the mistakes a Blueprint makes most: a
// workload whose selector does not match its pod template, a Job whose
// pods restart Always, a CronJob schedule that does not parse, a
// PodDisruptionBudget with both bounds, a Service with unnamed ports, an
// Ingress path without pathType, containers and volumes that do not add
// up, and every enum field (imagePullPolicy, protocol, a strategy's type)
// with a value outside its set (EnumValues). Each refusal has the API
// server's path and message; a conformance test holds them to a real API
// server's.
//
// It is not the API server's validation, which lives in k8s.io/kubernetes
// and which no module can depend on: a spec it passes may still be
// refused on a cluster. An object whose fields do not have their types
// is left to the schema's check and passes here.
func Validate(u *unstructured.Unstructured) field.ErrorList {
	validate, ok := specRules[u.GroupVersionKind().GroupKind()]
	if !ok {
		return nil
	}
	return validate(u.Object)
}

var specRules = map[schema.GroupKind]func(map[string]any) field.ErrorList{
	{Group: "apps", Kind: "Deployment"}: typed(func(d *appsv1.Deployment) field.ErrorList {
		errs := validateWorkload(d.Spec.Selector, &d.Spec.Template, "deployment")
		s := d.Spec.Strategy
		if r := s.RollingUpdate; r != nil {
			return append(errs, validateStrategy(field.NewPath("spec", "strategy"), s.Type, true, r.MaxUnavailable, r.MaxSurge)...)
		}
		return append(errs, validateStrategy(field.NewPath("spec", "strategy"), s.Type, false, nil, nil)...)
	}, reflect.TypeFor[appsv1.DeploymentStrategyType]()),
	{Group: "apps", Kind: "ReplicaSet"}: typed(func(r *appsv1.ReplicaSet) field.ErrorList {
		return validateWorkload(r.Spec.Selector, &r.Spec.Template, "deployment")
	}),
	{Group: "apps", Kind: "StatefulSet"}: typed(validateStatefulSet),
	{Group: "apps", Kind: "DaemonSet"}: typed(func(d *appsv1.DaemonSet) field.ErrorList {
		errs := validateWorkload(d.Spec.Selector, &d.Spec.Template, "daemonset")
		s := d.Spec.UpdateStrategy
		if r := s.RollingUpdate; r != nil {
			return append(errs, validateStrategy(field.NewPath("spec", "updateStrategy"), s.Type, true, r.MaxUnavailable, r.MaxSurge)...)
		}
		return append(errs, validateStrategy(field.NewPath("spec", "updateStrategy"), s.Type, false, nil, nil)...)
	}, reflect.TypeFor[appsv1.DaemonSetUpdateStrategyType]()),
	{Group: "batch", Kind: "Job"}:     typed(func(j *batchv1.Job) field.ErrorList { return validateJob(&j.Spec, field.NewPath("spec")) }),
	{Group: "batch", Kind: "CronJob"}: typed(validateCronJob),
	{Kind: "Pod"}: typed(func(p *corev1.Pod) field.ErrorList {
		return validatePodSpec(&p.Spec, field.NewPath("spec"), nil)
	}),
	{Kind: "Service"}: typed(validateService, reflect.TypeFor[corev1.ServiceType](), reflect.TypeFor[corev1.ServiceExternalTrafficPolicy]()),
	{Group: "policy", Kind: "PodDisruptionBudget"}:      typed(validatePDB),
	{Group: "networking.k8s.io", Kind: "Ingress"}:       typed(validateIngress),
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}: typed(validateNetworkPolicy, reflect.TypeFor[corev1.Protocol]()),
	// Its enum fields alone (accessModes, volumeMode).
	{Kind: "PersistentVolumeClaim"}: typed(func(*corev1.PersistentVolumeClaim) field.ErrorList { return nil }),
}

// typed converts an object to T before validate reads it, and checks its
// enum fields but those of the types in own, which validate checks.
// Conversion fails only on fields of the wrong type, which the schema
// reports.
func typed[T any](validate func(*T) field.ErrorList, own ...reflect.Type) func(map[string]any) field.ErrorList {
	return func(obj map[string]any) field.ErrorList {
		t := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, t); err != nil {
			return nil
		}
		return append(validate(t), enumErrors(t, own...)...)
	}
}

// validateStrategy checks a Deployment's or DaemonSet's update strategy
// type. The API server refuses it at the strategy, which it prints as its
// internal type: JSON with the Go field names, and a rollingUpdate (when
// set) of values, not pointers.
func validateStrategy[T ~string](path *field.Path, typ T, rolling bool, maxUnavailable, maxSurge *intstr.IntOrString) field.ErrorList {
	if typ == "" || supported(typ) {
		return nil // empty is defaulted to RollingUpdate
	}
	type rollingUpdate struct{ MaxUnavailable, MaxSurge intstr.IntOrString }
	s := struct {
		Type          T
		RollingUpdate *rollingUpdate
	}{Type: typ}
	if rolling {
		s.RollingUpdate = &rollingUpdate{}
		if maxUnavailable != nil {
			s.RollingUpdate.MaxUnavailable = *maxUnavailable
		}
		if maxSurge != nil {
			s.RollingUpdate.MaxSurge = *maxSurge
		}
	}
	return field.ErrorList{field.NotSupported(path, s, enumValues[T]())}
}

// validateNetworkPolicy checks its ports' protocols, which the API server
// lists in another order here than in pods and Services.
func validateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	var errs field.ErrorList
	order := []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	rules := func(kind string, n int, ports func(int) []networkingv1.NetworkPolicyPort) {
		for i := range n {
			for j, p := range ports(i) {
				if p.Protocol != nil && !supported(*p.Protocol) {
					errs = append(errs, field.NotSupported(field.NewPath("spec", kind).Index(i).Child("ports").Index(j).Child("protocol"), *p.Protocol, order))
				}
			}
		}
	}
	rules("ingress", len(np.Spec.Ingress), func(i int) []networkingv1.NetworkPolicyPort { return np.Spec.Ingress[i].Ports })
	rules("egress", len(np.Spec.Egress), func(i int) []networkingv1.NetworkPolicyPort { return np.Spec.Egress[i].Ports })
	// Label keys and values in selectors, as the API server checks them.
	errs = append(errs, metav1validation.ValidateLabelSelector(&np.Spec.PodSelector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "podSelector"))...)
	peers := func(kind, side string, n int, peers func(int) []networkingv1.NetworkPolicyPeer) {
		for i := range n {
			for j, peer := range peers(i) {
				at := field.NewPath("spec", kind).Index(i).Child(side).Index(j)
				if peer.PodSelector != nil {
					errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, metav1validation.LabelSelectorValidationOptions{}, at.Child("podSelector"))...)
				}
				if peer.NamespaceSelector != nil {
					errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, at.Child("namespaceSelector"))...)
				}
			}
		}
	}
	peers("ingress", "from", len(np.Spec.Ingress), func(i int) []networkingv1.NetworkPolicyPeer { return np.Spec.Ingress[i].From })
	peers("egress", "to", len(np.Spec.Egress), func(i int) []networkingv1.NetworkPolicyPeer { return np.Spec.Egress[i].To })
	return errs
}

// validateWorkload is the apps kinds' rule: a selector that selects
// something and matches the pod template, whose pods restart Always.
func validateWorkload(sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, kind string) field.ErrorList {
	errs := validateSelector(sel, tmpl, kind)
	return append(errs, validatePodSpec(&tmpl.Spec, field.NewPath("spec", "template", "spec"), []corev1.RestartPolicy{corev1.RestartPolicyAlways})...)
}

// validateStatefulSet is the apps rule, where a container may mount a
// volumeClaimTemplate by its name as well as a volume.
func validateStatefulSet(s *appsv1.StatefulSet) field.ErrorList {
	errs := validateSelector(s.Spec.Selector, &s.Spec.Template, "statefulset")
	claims := make([]string, len(s.Spec.VolumeClaimTemplates))
	for i, c := range s.Spec.VolumeClaimTemplates {
		claims[i] = c.Name
	}
	return append(errs, validatePodSpec(&s.Spec.Template.Spec, field.NewPath("spec", "template", "spec"), []corev1.RestartPolicy{corev1.RestartPolicyAlways}, claims...)...)
}

// validateSelector: a selector that selects something and matches the
// pod template's labels.
func validateSelector(sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, kind string) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch {
	case sel == nil:
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	case len(sel.MatchLabels)+len(sel.MatchExpressions) == 0:
		errs = append(errs, field.Invalid(spec.Child("selector"), sel, "empty selector is invalid for "+kind))
	}
	// No selector selects nothing, so it matches no template either; an
	// empty one selects everything.
	if s, err := metav1.LabelSelectorAsSelector(sel); err == nil && !s.Empty() && !s.Matches(labels.Set(tmpl.Labels)) {
		errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

func validateJob(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	return validatePodSpec(&spec.Template.Spec, path.Child("template", "spec"), []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})
}

func validateCronJob(c *batchv1.CronJob) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if c.Spec.Schedule == "" {
		errs = append(errs, field.Required(spec.Child("schedule"), ""))
	} else if _, err := cron.ParseStandard(c.Spec.Schedule); err != nil {
		errs = append(errs, field.Invalid(spec.Child("schedule"), c.Spec.Schedule, err.Error()))
	}
	return append(errs, validateJob(&c.Spec.JobTemplate.Spec, spec.Child("jobTemplate", "spec"))...)
}

// validatePodSpec checks a pod's containers, volumes and restart policy,
// after the API server's defaults (restartPolicy Always): restart are the
// policies the kind's pods may have, nil for any (the enum walk checks
// that a policy is one). Containers may mount claims (a StatefulSet's
// volumeClaimTemplates) too.
func validatePodSpec(pod *corev1.PodSpec, path *field.Path, restart []corev1.RestartPolicy, claims ...string) field.ErrorList {
	var errs field.ErrorList
	volumes := sets.New(claims...)
	for i, v := range pod.Volumes {
		p := path.Child("volumes").Index(i)
		invalid := dnsLabel(p.Child("name"), v.Name)
		errs = append(errs, invalid...)
		switch {
		case len(invalid) > 0: // a mount naming it is not found either
		case volumes.Has(v.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		default:
			volumes.Insert(v.Name)
		}
	}
	if len(pod.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), ""))
	}
	names := sets.New[string]()
	containers := func(list []corev1.Container, child string) {
		for i := range list {
			errs = append(errs, validateContainer(&list[i], path.Child(child).Index(i), names, volumes)...)
		}
	}
	containers(pod.InitContainers, "initContainers")
	containers(pod.Containers, "containers")

	// A pod's restart policy defaults to Always; a Job's pods must say
	// theirs, and are told so when they say Always. A value that is no
	// policy at all is refused twice, as the API server does: by the enum
	// walk, and here as not one the kind takes.
	policy := pod.RestartPolicy
	switch {
	case restart == nil || slices.Contains(restart, policy):
	case restart[0] != corev1.RestartPolicyAlways && (policy == "" || policy == corev1.RestartPolicyAlways):
		errs = append(errs, field.Required(path.Child("restartPolicy"), "valid values: "+quoted(restart)))
	case policy != "":
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), policy, restart))
	}
	return errs
}

func validateContainer(c *corev1.Container, path *field.Path, names, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, dnsLabel(path.Child("name"), c.Name)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
		}
		names.Insert(c.Name)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), ""))
	}
	ports := sets.New[string]()
	for i, p := range c.Ports {
		pp := path.Child("ports").Index(i)
		if p.Name != "" {
			for _, msg := range validation.IsValidPortName(p.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), p.Name, msg))
			}
			if ports.Has(p.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			ports.Insert(p.Name)
		}
		errs = append(errs, portNumber(pp.Child("containerPort"), p.ContainerPort)...)
	}
	for i, m := range c.VolumeMounts {
		mp := path.Child("volumeMounts").Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(mp.Child("name"), ""))
		case !volumes.Has(m.Name):
			errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(mp.Child("mountPath"), ""))
		}
	}
	for name, request := range c.Resources.Requests {
		if limit, ok := c.Resources.Limits[name]; ok && request.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("resources", "requests"), request.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func validateService(s *corev1.Service) field.ErrorList {
	spec := field.NewPath("spec")
	errs := metav1validation.ValidateLabels(s.Spec.Selector, spec.Child("selector"))
	typ := s.Spec.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	if !supported(typ) {
		return append(errs, field.NotSupported(spec.Child("type"), typ, enumValues[corev1.ServiceType]()))
	}
	// Only a Service reachable from outside the cluster has an external
	// traffic policy, whatever its value.
	external := typ == corev1.ServiceTypeNodePort || typ == corev1.ServiceTypeLoadBalancer || (typ == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
	if etp := s.Spec.ExternalTrafficPolicy; etp != "" && !external {
		errs = append(errs, field.Invalid(spec.Child("externalTrafficPolicy"), etp, "may only be set for externally-accessible services"))
	} else if etp != "" && !supported(etp) {
		errs = append(errs, field.NotSupported(spec.Child("externalTrafficPolicy"), etp, enumValues[corev1.ServiceExternalTrafficPolicy]()))
	}
	headless := s.Spec.ClusterIP == corev1.ClusterIPNone
	if len(s.Spec.Ports) == 0 && !headless && typ != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(spec.Child("ports"), ""))
	}
	if typ == corev1.ServiceTypeExternalName && s.Spec.ExternalName == "" {
		errs = append(errs, field.Required(spec.Child("externalName"), ""))
	}
	names := sets.New[string]()
	for i, p := range s.Spec.Ports {
		pp := spec.Child("ports").Index(i)
		switch {
		case p.Name == "" && len(s.Spec.Ports) > 1:
			errs = append(errs, field.Required(pp.Child("name"), ""))
		case p.Name != "":
			errs = append(errs, dnsLabel(pp.Child("name"), p.Name)...)
			if names.Has(p.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), p.Name))
			}
			names.Insert(p.Name)
		}
		errs = append(errs, portNumber(pp.Child("port"), p.Port)...)
		switch {
		case p.TargetPort.Type == intstr.String:
			for _, msg := range validation.IsValidPortName(p.TargetPort.StrVal) {
				errs = append(errs, field.Invalid(pp.Child("targetPort"), p.TargetPort.StrVal, msg))
			}
		case p.TargetPort.IntVal != 0:
			errs = append(errs, portNumber(pp.Child("targetPort"), p.TargetPort.IntVal)...)
		}
		if p.NodePort != 0 && typ != corev1.ServiceTypeNodePort && typ != corev1.ServiceTypeLoadBalancer {
			errs = append(errs, field.Forbidden(pp.Child("nodePort"), fmt.Sprintf("may not be used when `type` is '%s'", typ)))
		}
	}
	return errs
}

func validatePDB(p *policyv1.PodDisruptionBudget) field.ErrorList {
	if p.Spec.MinAvailable != nil && p.Spec.MaxUnavailable != nil {
		// The API server prints its internal type, whose JSON has the Go
		// field names.
		spec := struct {
			MinAvailable               *intstr.IntOrString
			Selector                   *metav1.LabelSelector
			MaxUnavailable             *intstr.IntOrString
			UnhealthyPodEvictionPolicy *policyv1.UnhealthyPodEvictionPolicyType
		}{p.Spec.MinAvailable, p.Spec.Selector, p.Spec.MaxUnavailable, p.Spec.UnhealthyPodEvictionPolicy}
		return field.ErrorList{field.Invalid(field.NewPath("spec"), spec, "minAvailable and maxUnavailable cannot be both set")}
	}
	return nil
}

func validateIngress(ing *networkingv1.Ingress) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if len(ing.Spec.Rules) == 0 && ing.Spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(spec, nil, "either `defaultBackend` or `rules` must be specified"))
	}
	for i, rule := range ing.Spec.Rules {
		rp := spec.Child("rules").Index(i)
		if rule.Host != "" {
			host := strings.TrimPrefix(rule.Host, "*.")
			for _, msg := range validation.IsDNS1123Subdomain(host) {
				errs = append(errs, field.Invalid(rp.Child("host"), rule.Host, msg))
			}
		}
		if rule.HTTP == nil {
			continue
		}
		if len(rule.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(rp.Child("http", "paths"), ""))
		}
		for j, path := range rule.HTTP.Paths {
			pp := rp.Child("http", "paths").Index(j)
			switch {
			case path.PathType == nil:
				errs = append(errs, field.Required(pp.Child("pathType"), "pathType must be specified"))
			case !supported(*path.PathType):
				// The enum walk reports it, and the path is not checked.
			case *path.PathType != networkingv1.PathTypeImplementationSpecific || path.Path != "":
				if !strings.HasPrefix(path.Path, "/") {
					errs = append(errs, field.Invalid(pp.Child("path"), path.Path, "must be an absolute path"))
				}
			}
		}
	}
	return errs
}

func dnsLabel(path *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func portNumber(path *field.Path, port int32) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(path, port, msg))
	}
	return errs
}

// Validates reports whether Validate has rules for gk's objects.
func Validates(gk schema.GroupKind) bool {
	_, ok := specRules[gk]
	return ok
}

// quoted lists values as the API server lists them: "a", "b".
func quoted[T ~string](values []T) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
