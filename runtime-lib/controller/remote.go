package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/inrun/inrun/expr"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/remote"
)

// RemoteClient builds the Caller of bp's remote reconciler: the contract's
// HTTP client, or the mapping onto an existing API (reconcile.api), which
// evaluates its expressions with progs. Its bearer token, when the Blueprint
// names a Secret, is read from the cluster at each call, so a rotated token
// is used at once.
func RemoteClient(bp *ir.Blueprint, progs *expr.Programs, r client.Reader) (remote.Caller, error) {
	spec := bp.Reconcile.Remote
	opts := remote.OptionsFor(spec)
	opts.CABundle = []byte(spec.CABundle)
	if ref := spec.TokenSecret; ref != nil {
		opts.TokenSource = func(ctx context.Context) (string, error) {
			secret := &corev1.Secret{}
			if err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
				return "", fmt.Errorf("reading the reconciler's token from Secret %s/%s: %w", ref.Namespace, ref.Name, err)
			}
			token, ok := secret.Data[ref.Key]
			if !ok {
				return "", fmt.Errorf("Secret %s/%s has no key %q for the reconciler's token", ref.Namespace, ref.Name, ref.Key)
			}
			return string(token), nil
		}
	}
	if spec.API != nil {
		return remote.NewAPI(bp, progs, remote.APIOptions{Timeout: opts.Timeout, TokenSource: opts.TokenSource, CABundle: opts.CABundle})
	}
	c, err := remote.New(opts)
	if err != nil {
		return nil, fmt.Errorf("blueprint %s: the remote reconciler: %w", bp.Name, err)
	}
	return c, nil
}
