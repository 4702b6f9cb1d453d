package ir_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/ir"
)

// TestOneBlueprintPerKind: two Blueprints of one kind are refused, naming
// both; one Blueprint met twice (run, and used by another) is one.
func TestOneBlueprintPerKind(t *testing.T) {
	website := schema.GroupVersionKind{Group: "example.inrun.dev", Version: "v1", Kind: "Website"}
	a := &ir.Blueprint{Name: "hello-website", File: "a/blueprint.yaml", Resource: ir.Resource{GroupVersionKind: website}}
	b := &ir.Blueprint{Name: "live-status", File: "b/blueprint.yaml", Resource: ir.Resource{GroupVersionKind: website}}
	again := &ir.Blueprint{Name: "hello-website", File: "configmap inrun-system/hello", Resource: ir.Resource{GroupVersionKind: website}}
	if err := ir.OneBlueprintPerKind([]*ir.Blueprint{a, again}); err != nil {
		t.Errorf("one Blueprint twice: %v", err)
	}
	err := ir.OneBlueprintPerKind([]*ir.Blueprint{a, b})
	if err == nil || !strings.Contains(err.Error(), `Blueprints "hello-website" (a/blueprint.yaml) and "live-status" (b/blueprint.yaml) both reconcile example.inrun.dev/v1 Website`) {
		t.Errorf("two Blueprints of one kind: %v", err)
	}
}
