// Package register is what this example adds to kubebuilder's output, with
// blueprint.yaml: the Memcached API types and the unchanged
// MemcachedReconciler, registered with inrun as kubebuilder's cmd/main.go
// adds them to its manager.
package register

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/inrun/inrun/components"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
	"example.com/memcached-operator/internal/controller"
)

func init() {
	components.RegisterScheme("cache.example.com/v1alpha1", cachev1alpha1.AddToScheme)
	components.RegisterController("memcached", func(mgr ctrl.Manager) error {
		return (&controller.MemcachedReconciler{
			Client:   mgr.GetClient(),
			Scheme:   mgr.GetScheme(),
			Recorder: mgr.GetEventRecorder("memcached-controller"),
		}).SetupWithManager(mgr)
	})
}
