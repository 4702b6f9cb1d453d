package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// warmUp makes one Website, Deployment and Service the way the runs do,
// so that the first run does not pay for what the API server and the
// controllers set up on first use (the Website's storage and schema, the
// first Deployment's informers).
func (b *bench) warmUp(ctx context.Context) error {
	const ns = "bench-warmup"
	start := time.Now()
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var site *unstructured.Unstructured
	if err := b.loader.create(ctx, ns, 1, func(u *unstructured.Unstructured) { site = u }); err != nil {
		return err
	}
	l, err := startLimit(ctx, b.cfg, ns, 1, b.opts.headless)
	if err != nil {
		return err
	}
	defer l.stop()
	l.created(site)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := b.dyn.Resource(websiteGVR).Namespace(ns).Get(ctx, site.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return websiteReady(got), nil
	})
	if err != nil {
		return fmt.Errorf("warming up: the first Website did not become ready: %w", err)
	}
	// A Deployment of two replicas, as the edits make.
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "warmup", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "warmup"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "warmup"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := b.cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := b.cs.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return deploymentReady(got), nil
	})
	if err != nil {
		return fmt.Errorf("warming up: the first Deployment did not become ready: %w", err)
	}
	l.stop()
	if err := b.cleanup(ctx, ns); err != nil {
		return err
	}
	b.printf("Warmed up in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}
