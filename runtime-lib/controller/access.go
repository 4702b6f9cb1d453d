package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/reconciler"
)

// CheckAccess asks the API server whether the runtime may list and watch
// the custom resource, every child kind of bps and every kind their
// externalRefs read, in each of namespaces (none: in all namespaces), as a
// runtime confined to them (WatchNamespaces) needs. A custom resource it
// cannot watch is an error: nothing could run. Child kinds it cannot watch
// are returned, each with an error that says what to grant, so that the runtime can run without them and report
// them on every custom resource instead of failing to start.
func CheckAccess(ctx context.Context, c client.Client, bps []*ir.Blueprint, namespaces []string) (map[schema.GroupVersionKind]error, error) {
	unavailable := map[schema.GroupVersionKind]error{}
	var fatal []string
	for _, bp := range bps {
		r := bp.Resource
		if missing, err := denied(ctx, c, r.Group, r.Plural, namespaces); err != nil {
			return nil, err
		} else if missing != "" {
			fatal = append(fatal, fmt.Sprintf("%s (%s)", missing, bp.Name))
		}
		for _, ch := range reconciler.OwnedKinds(bp) {
			if unavailable[ch.GroupVersionKind] != nil {
				continue
			}
			missing, err := denied(ctx, c, ch.Group, ch.Plural, namespaces)
			if err != nil {
				return nil, err
			}
			if missing != "" {
				unavailable[ch.GroupVersionKind] = fmt.Errorf("the runtime may not %s: its %s children are left as they are; grant what `inrun rbac` prints",
					missing, ch.Kind)
			}
		}
		// Objects externalRefs read are listed and watched too. One
		// read by name works without (it is read again every 30 seconds
		// instead); one by selector does not.
		for _, ch := range bp.Children {
			if !ch.External || unavailable[ch.GroupVersionKind] != nil {
				continue
			}
			missing, err := denied(ctx, c, ch.Group, ch.Plural, namespaces)
			if err != nil {
				return nil, err
			}
			if missing != "" {
				unavailable[ch.GroupVersionKind] = fmt.Errorf("the runtime may not %s: externalRef %q cannot watch the %s objects it reads; grant what `inrun rbac` prints",
					missing, ch.ID, ch.Kind)
			}
		}
	}
	if len(fatal) > 0 {
		return nil, fmt.Errorf("the runtime may not %s; grant what `inrun rbac` prints", strings.Join(fatal, "; "))
	}
	return unavailable, nil
}

// denied says what of list and watch the runtime may not do on resource,
// cluster-wide when there are no namespaces, else in which of them ("list
// or watch services in namespace shop"); "" when it may do both.
func denied(ctx context.Context, c client.Client, group, resource string, namespaces []string) (string, error) {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var verbs, where []string
	for _, verb := range []string{"list", "watch"} {
		allowed := true
		for _, ns := range namespaces {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: verb, Namespace: ns},
			}}
			if err := c.Create(ctx, review); err != nil {
				return "", fmt.Errorf("checking access to %s: %w", qualified(group, resource), err)
			}
			if !review.Status.Allowed {
				allowed = false
				if ns != metav1.NamespaceAll && !slices.Contains(where, ns) {
					where = append(where, ns)
				}
			}
		}
		if !allowed {
			verbs = append(verbs, verb)
		}
	}
	if len(verbs) == 0 {
		return "", nil
	}
	what := strings.Join(verbs, " or ") + " " + qualified(group, resource)
	if len(where) > 0 {
		what += " in namespace " + strings.Join(where, ", ")
	}
	return what, nil
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}
