package handwritten

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Options configure the controller.
type Options struct {
	// Workers is how many Websites are reconciled at once. Default 8.
	Workers int
	// FieldOwner is the server-side apply field manager. Default
	// "website-operator".
	FieldOwner string
	// Headless gives the Services clusterIP: None.
	Headless bool
}

func (o *Options) setDefaults() {
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.FieldOwner == "" {
		o.FieldOwner = "website-operator"
	}
}

// Setup adds the Website controller to mgr, whose scheme must know the
// Website types (AddToScheme).
func Setup(mgr ctrl.Manager, opts Options) error {
	opts.setDefaults()
	r := &Reconciler{Client: mgr.GetClient(), FieldOwner: client.FieldOwner(opts.FieldOwner), Headless: opts.Headless}
	return ctrl.NewControllerManagedBy(mgr).
		Named("website").
		For(&Website{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Workers}).
		Complete(r)
}

// Reconciler reconciles Websites.
type Reconciler struct {
	client.Client
	FieldOwner client.FieldOwner
	// Headless gives the Services clusterIP: None.
	Headless bool
}

var _ reconcile.Reconciler = &Reconciler{}

// Reconcile applies a Website's Deployment and Service and reports the
// Deployment's ready replicas in the Website's status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var site Website
	if err := r.Get(ctx, req.NamespacedName, &site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !site.DeletionTimestamp.IsZero() {
		// Owner references let garbage collection delete the children.
		return ctrl.Result{}, nil
	}

	deployment := desiredDeployment(&site)
	if err := r.Apply(ctx, deployment, r.FieldOwner, client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("applying Deployment %s: %w", site.Name, err)
	}
	service := desiredService(&site, r.Headless)
	if err := r.Apply(ctx, service, r.FieldOwner, client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("applying Service %s: %w", site.Name, err)
	}

	// Apply filled deployment in with the live object, status included.
	status := desiredStatus(&site, deployment)
	if equality.Semantic.DeepEqual(site.Status, status) {
		return ctrl.Result{}, nil
	}
	if err := r.Status().Apply(ctx, statusApply(&site, status), r.FieldOwner, client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("applying the status: %w", err)
	}
	return ctrl.Result{}, nil
}

func labelsFor(site *Website) map[string]string {
	return map[string]string{"app": site.Name}
}

func ownerReference(site *Website) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(GroupVersion.String()).
		WithKind("Website").
		WithName(site.Name).
		WithUID(site.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

func desiredDeployment(site *Website) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(site.Name, site.Namespace).
		WithLabels(labelsFor(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(site.Spec.Replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labelsFor(site))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labelsFor(site)).
				WithSpec(corev1ac.PodSpec().
					WithContainers(corev1ac.Container().
						WithName("web").
						WithImage(site.Spec.Image).
						WithPorts(corev1ac.ContainerPort().
							WithName("http").
							WithContainerPort(site.Spec.Port))))))
}

func desiredService(site *Website, headless bool) *corev1ac.ServiceApplyConfiguration {
	spec := corev1ac.ServiceSpec().
		WithSelector(labelsFor(site)).
		WithPorts(corev1ac.ServicePort().
			WithName("http").
			WithPort(site.Spec.Port).
			WithTargetPort(intstr.FromString("http")))
	if headless {
		spec.WithClusterIP(corev1.ClusterIPNone)
	}
	return corev1ac.Service(site.Name, site.Namespace).
		WithLabels(labelsFor(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(spec)
}

// desiredStatus reports the live Deployment d. Conditions keep their
// lastTransitionTime while their status holds.
func desiredStatus(site *Website, d *appsv1ac.DeploymentApplyConfiguration) WebsiteStatus {
	var ready int32
	if d.Status != nil && d.Status.ReadyReplicas != nil {
		ready = *d.Status.ReadyReplicas
	}
	status := WebsiteStatus{
		ReadyReplicas:      ready,
		URL:                fmt.Sprintf("http://%s.%s.svc:%d", site.Name, site.Namespace, site.Spec.Port),
		ObservedGeneration: site.Generation,
	}
	if len(site.Status.Conditions) > 0 {
		status.Conditions = append([]metav1.Condition(nil), site.Status.Conditions...)
	}
	cond := metav1.Condition{
		Type:               "Ready",
		Status:             metav1.ConditionFalse,
		Reason:             "DeploymentNotReady",
		Message:            fmt.Sprintf("%d of %d replicas are ready", ready, site.Spec.Replicas),
		ObservedGeneration: site.Generation,
	}
	if deploymentReady(d) {
		cond.Status, cond.Reason = metav1.ConditionTrue, "DeploymentReady"
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return status
}

// deploymentReady is true once the Deployment controller has rolled out
// the current spec and every replica is ready and available.
func deploymentReady(d *appsv1ac.DeploymentApplyConfiguration) bool {
	if d.Status == nil || d.Generation == nil || d.Spec == nil {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return deref(s.ObservedGeneration) >= *d.Generation &&
		deref(s.UpdatedReplicas) >= want &&
		deref(s.ReadyReplicas) >= want &&
		deref(s.AvailableReplicas) >= want
}

func deref[T int32 | int64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}
