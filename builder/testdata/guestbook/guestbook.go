// Package guestbook registers the guestbook controller and its API types:
// the registration lines, all that is new beside a kubebuilder project.
package guestbook

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/inrun/inrun/components"

	webappv1 "example.com/guestbook/api/v1"
	"example.com/guestbook/internal/controller"
)

func init() {
	components.RegisterScheme("webapp.inrun.dev/v1", webappv1.AddToScheme)
	components.RegisterController("guestbook", func(mgr ctrl.Manager) error {
		return (&controller.GuestbookReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr)
	})
}
