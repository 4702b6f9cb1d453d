package controller

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// CheckAccess asks the API server whether the runtime may list and watch
// the custom resource, every child kind of bps and every kind their
// externalRefs read, in namespace ("" for all
// namespaces). A custom resource it cannot watch is an error: nothing could
// run. Child kinds it cannot watch are returned, each with an error that
// says what to grant, so that the runtime can run without them and report
// them on every custom resource instead of failing to start.
func CheckAccess(ctx context.Context, c client.Client, bps []*ir.Blueprint, namespace string) (map[schema.GroupVersionKind]error, error) {
	unavailable := map[schema.GroupVersionKind]error{}
	var fatal []string
	for _, bp := range bps {
		r := bp.Resource
		if missing, err := denied(ctx, c, r.Group, r.Plural, namespace); err != nil {
			return nil, err
		} else if len(missing) > 0 {
			fatal = append(fatal, fmt.Sprintf("%s %s (%s)", strings.Join(missing, ", "), r.Plural, bp.Name))
		}
		for _, ch := range reconciler.OwnedKinds(bp) {
			if unavailable[ch.GroupVersionKind] != nil {
				continue
			}
			missing, err := denied(ctx, c, ch.Group, ch.Plural, namespace)
			if err != nil {
				return nil, err
			}
			if len(missing) > 0 {
				unavailable[ch.GroupVersionKind] = fmt.Errorf("the runtime may not %s %s: its %s children are left as they are; grant what `inrun rbac` prints",
					strings.Join(missing, " or "), qualified(ch.Group, ch.Plural), ch.Kind)
			}
		}
		// Objects externalRefs read are listed and watched too. One
		// read by name works without (it is read again every 30 seconds
		// instead); one by selector does not.
		for _, ch := range bp.Children {
			if !ch.External || unavailable[ch.GroupVersionKind] != nil {
				continue
			}
			missing, err := denied(ctx, c, ch.Group, ch.Plural, namespace)
			if err != nil {
				return nil, err
			}
			if len(missing) > 0 {
				unavailable[ch.GroupVersionKind] = fmt.Errorf("the runtime may not %s %s: externalRef %q cannot watch the %s objects it reads; grant what `inrun rbac` prints",
					strings.Join(missing, " or "), qualified(ch.Group, ch.Plural), ch.ID, ch.Kind)
			}
		}
	}
	if len(fatal) > 0 {
		return nil, fmt.Errorf("the runtime may not %s; grant what `inrun rbac` prints", strings.Join(fatal, "; "))
	}
	return unavailable, nil
}

func denied(ctx context.Context, c client.Client, group, resource, namespace string) ([]string, error) {
	var missing []string
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb, Namespace: namespace},
		}}
		if err := c.Create(ctx, review); err != nil {
			return nil, fmt.Errorf("checking access to %s: %w", qualified(group, resource), err)
		}
		if !review.Status.Allowed {
			missing = append(missing, verb)
		}
	}
	return missing, nil
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}
