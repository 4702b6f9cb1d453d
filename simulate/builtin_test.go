package simulate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/simulate"
)

// TestEveryBuiltinKindSimulates applies a child of every built-in kind a
// Blueprint may use, in one simulated reconcile: each must be written as
// on an API server, where one (NetworkPolicy) used to fail with "expected
// objects with types from the same schema".
func TestEveryBuiltinKindSimulates(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata: {name: every}\ncrd: {file: ../packs/website/manifests/crd.yaml}\nonReconcile:\n")
	kinds := compiler.BuiltinKinds()
	for i, k := range kinds {
		fmt.Fprintf(&b, "  - id: k%d\n    template:\n      apiVersion: %s\n      kind: %s\n      metadata:\n        name: every-%d\n", i, k.GroupVersion(), k.Kind, i)
		if spec, ok := validSpecs[k.Kind]; ok {
			fmt.Fprintf(&b, "      spec: %s\n", spec)
		}
	}
	out := runWebsite(t, compileBlueprint(t, "every.yaml", []byte(b.String())), "every", nil, 1)
	for _, e := range out.Last().Errors {
		t.Errorf("%v", e)
	}
	if n := len(out.Children); n != len(kinds) {
		t.Errorf("%d of %d kinds were written", n, len(kinds))
	}
}

// validSpecs are the least spec the API server takes for the kinds whose
// spec it validates beyond their types (builtin.Validate).
var validSpecs = map[string]string{
	"Deployment":  podTemplate("selector: {matchLabels: {app: x}}, ", "Always"),
	"ReplicaSet":  podTemplate("selector: {matchLabels: {app: x}}, ", "Always"),
	"DaemonSet":   podTemplate("selector: {matchLabels: {app: x}}, ", "Always"),
	"StatefulSet": podTemplate("selector: {matchLabels: {app: x}}, ", "Always"),
	"Job":         podTemplate("", "Never"),
	"CronJob":     "{schedule: '@daily', jobTemplate: {spec: " + podTemplate("", "Never") + "}}",
	"Pod":         "{containers: [{name: x, image: x}]}",
	"Service":     "{ports: [{port: 80}]}",
	"Ingress":     "{defaultBackend: {service: {name: x, port: {number: 80}}}}",
}

func podTemplate(selector, restart string) string {
	return "{" + selector + "template: {metadata: {labels: {app: x}}, spec: {restartPolicy: " + restart + ", containers: [{name: x, image: x}]}}}"
}

// TestBuiltinSpecRefused has a child the API server would refuse (a
// Deployment whose selector does not match its pod template): it is not
// stored, and the pass fails with the API server's message.
func TestBuiltinSpecRefused(t *testing.T) {
	bp := websiteChildren(t, "web", `  - id: deployment
    template:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: "${self.metadata.name}"}
      spec:
        selector: {matchLabels: {app: "${self.metadata.name}"}}
        template:
          metadata: {labels: {app: web}}
          spec:
            containers: [{name: web, image: "${self.spec.image}"}]
`)
	for name, refused := range map[string]bool{"web": false, "shop": true} {
		out := runWebsite(t, bp, name, nil, 1)
		errs := fmt.Sprint(out.Last().Errors)
		want := `Deployment.apps "shop" is invalid: spec.template.metadata.labels: Invalid value: {"app":"web"}: ` + "`selector` does not match template `labels`"
		if got := strings.Contains(errs, want); got != refused {
			t.Errorf("%s: errors %s; want the refusal %v", name, errs, refused)
		}
		if stored := len(out.Children["deployment"]) == 1; stored == refused {
			t.Errorf("%s: Deployment stored %v", name, stored)
		}
	}
}

// TestMapIterationIsOrdered renders a list from a map, and from the CR's
// labels, in every pass alike: keys in order, not Go's random map order
// (the child was written again on every pass).
func TestMapIterationIsOrdered(t *testing.T) {
	bp := websiteChildren(t, "order", `  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "${self.metadata.name}"}
      data:
        conf: '${ {"h": 8, "c": 3, "a": 1, "f": 6, "b": 2, "g": 7, "e": 5, "d": 4}.transformList(k, v, k + "=" + string(v)).join(",") }'
        labels: '${ self.metadata.?labels.orValue({}).map(k, k).join(",") }'
`)
	labels := map[string]any{}
	for _, k := range []string{"z", "y", "x", "w", "v", "u", "t", "s"} {
		labels[k] = "1"
	}
	for range 10 {
		out := runWebsite(t, bp, "o", labels, 2)
		if len(out.Children["config"]) != 1 {
			t.Fatalf("errors %v", out.Last().Errors)
		}
		data := out.Children["config"][0].Object["data"].(map[string]any)
		if data["conf"] != "a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8" || data["labels"] != "s,t,u,v,w,x,y,z" || out.IdleWrites != 0 {
			t.Fatalf("data %v, idle writes %d; want the keys in order, and nothing written again", data, out.IdleWrites)
		}
	}
}

// TestUnknownFieldOfABuiltinKind: a field a map names that the kind does
// not have is refused as the API server refuses it, naming it. (check
// finds a literal key; this one is computed.)
func TestUnknownFieldOfABuiltinKind(t *testing.T) {
	bp := websiteChildren(t, "typo", `  - id: service
    template:
      apiVersion: v1
      kind: Service
      metadata: {name: "${self.metadata.name}"}
      spec:
        ports: '${ [{"port": 80, "target" + "Prt": 8080}] }'
`)
	out := runWebsite(t, bp, "web", nil, 1)
	if errs := fmt.Sprint(out.Last().Errors); !strings.Contains(errs, `.spec.ports[port=80,protocol="TCP"].targetPrt: field not declared in schema`) {
		t.Errorf("errors %s; want the unknown field named", errs)
	}
}

// runWebsite runs a Website of the website pack's CRD, named name in the
// default namespace with labels, through passes of a Simulator of bp.
func runWebsite(t *testing.T, bp *ir.Blueprint, name string, labels map[string]any, passes int) *simulate.Outcome {
	t.Helper()
	sim, err := simulate.New(bp)
	if err != nil {
		t.Fatal(err)
	}
	metadata := map[string]any{"name": name, "namespace": "default"}
	if labels != nil {
		metadata["labels"] = labels
	}
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "Website",
		"metadata": metadata,
		"spec":     map[string]any{"image": "nginx", "replicas": int64(1)},
	}}
	out, err := sim.Run(context.Background(), simulate.Input{CR: cr, Passes: passes})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// websiteChildren compiles the Blueprint name, of the website pack's CRD,
// with children, YAML items of its onReconcile.
func websiteChildren(t *testing.T, name, children string) *ir.Blueprint {
	t.Helper()
	return compileBlueprint(t, name+".yaml", []byte("apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata: {name: "+name+"}\ncrd: {file: ../packs/website/manifests/crd.yaml}\nonReconcile:\n"+children))
}
