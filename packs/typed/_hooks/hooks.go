// Package hooks holds the Go hooks of the hooks example's Blueprint:
// website.resources, a transform that gives the Deployment's container
// the requests and limits of its tier, and website.summary, a status hook
// that counts the ready Pods. They register by name from init; an inrun
// built with this module (make build) has them.
//
// They read the Website through api/v1, the Go types inrun generate api
// wrote from the CRD: a hook that reads a field the CRD does not have does
// not compile, and make registry fails when the CRD changed without them.
package hooks

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/sdk"

	v1 "example.com/typed-hooks/api/v1"
)

func init() {
	components.RegisterTransform("website.resources", resources)
	components.RegisterStatus("website.summary", summary)
}

// tiers are the requests and limits of each tier: a table, which a
// template would spell out as nested conditionals.
var tiers = map[string]struct{ cpu, memory, cpuLimit, memoryLimit string }{
	"small":  {"100m", "128Mi", "200m", "256Mi"},
	"medium": {"250m", "256Mi", "500m", "512Mi"},
	"large":  {"500m", "512Mi", "1", "1Gi"},
}

// resources sets the requests and limits of the Deployment's containers
// from the Website's spec.tier.
func resources(_ context.Context, req *components.TransformRequest) (*sdk.Resource, error) {
	site, err := components.Decode[v1.Website](req.Object)
	if err != nil {
		return nil, err
	}
	t, ok := tiers[site.Spec.Tier]
	if !ok {
		return nil, fmt.Errorf("spec.tier %q is not small, medium or large", site.Spec.Tier)
	}
	containers, _, _ := unstructured.NestedSlice(req.Child.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		c.(map[string]any)["resources"] = map[string]any{
			"requests": map[string]any{"cpu": t.cpu, "memory": t.memory},
			"limits":   map[string]any{"cpu": t.cpuLimit, "memory": t.memoryLimit},
		}
	}
	if err := unstructured.SetNestedSlice(req.Child.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return nil, err
	}
	return &req.Child, nil
}

// summary says how many of the wanted Pods are ready, and what each
// requests, from the Deployment as the pass left it.
func summary(_ context.Context, req *components.StatusRequest) (map[string]any, error) {
	deployments := req.Children["deployment"]
	if len(deployments) == 0 {
		return map[string]any{"summary": "no Deployment yet"}, nil
	}
	d, err := components.Decode[appsv1.Deployment](deployments[0])
	if err != nil {
		return nil, err
	}
	var want int32
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	out := map[string]any{"summary": fmt.Sprintf("%d/%d ready", d.Status.ReadyReplicas, want)}
	if containers := d.Spec.Template.Spec.Containers; len(containers) > 0 {
		if cpu, ok := containers[0].Resources.Requests["cpu"]; ok {
			out["cpu"] = cpu.String()
		}
	}
	return out, nil
}
