package components_test

import (
	"strings"
	"testing"

	"github.com/inrun/inrun/components"
)

// webApp is what inrun generate api writes for the remote pack's CRD, in
// short: its status preserves unknown fields, which the struct cannot hold.
type webApp struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Metadata   struct {
		Name string `json:"name,omitempty"`
	} `json:"metadata,omitempty"`
	Spec struct {
		Image    string `json:"image,omitempty"`
		Replicas *int32 `json:"replicas,omitempty"`
	} `json:"spec,omitempty"`
	Status struct {
		ObservedGeneration *int64 `json:"observedGeneration,omitempty"`
	} `json:"status,omitempty"`
}

func cr(spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "example.inrun.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": "hello"},
		"spec":     spec,
		"status":   map[string]any{"observedGeneration": int64(2), "phase": "Greeted"},
	}
}

// TestDecode: an object as a hook is given it (whole numbers int64)
// becomes the typed value; a field the type does not have (a preserved
// status field) is dropped, a field spelt in another case is not read, and
// a value of the wrong type is an error naming the type.
func TestDecode(t *testing.T) {
	app, err := components.Decode[webApp](cr(map[string]any{"image": "nginx:1.27", "replicas": int64(3)}))
	if err != nil {
		t.Fatal(err)
	}
	if app.Metadata.Name != "hello" || app.Spec.Image != "nginx:1.27" || app.Spec.Replicas == nil || *app.Spec.Replicas != 3 ||
		app.Status.ObservedGeneration == nil || *app.Status.ObservedGeneration != 2 {
		t.Errorf("Decode = %+v", app)
	}

	app, err = components.Decode[webApp](cr(map[string]any{"Replicas": int64(3)}))
	if err != nil || app.Spec.Replicas != nil {
		t.Errorf("Decode of spec.Replicas = %+v, %v; want replicas unset", app, err)
	}

	_, err = components.Decode[webApp](cr(map[string]any{"replicas": "three"}))
	if err == nil || !strings.Contains(err.Error(), "decoding into *components_test.webApp") {
		t.Errorf("Decode of a string into an int32 = %v", err)
	}
}
