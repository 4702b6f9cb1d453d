package components

import (
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// Decode converts obj, an object as hooks and reconcilers are given it (a
// TransformRequest's Object, say), into T, typically the custom resource's
// Go type that inrun generate api wrote from the Blueprint's CRD:
//
//	app, err := components.Decode[v1.WebApp](req.Object)
//
// It goes through JSON as the API server and controller-runtime's typed
// client read objects: field names match case-sensitively, a value of the
// wrong type is an error, and a field T does not have is dropped, not an
// error. The API server has already checked the object against its CRD,
// so such a field is one the CRD preserves unchecked
// (x-kubernetes-preserve-unknown-fields, such as a status a reconciler
// writes freely), which the generated struct cannot hold, or one of a CRD
// newer than the types: inrun generate api --check catches that at build
// time (make registry), where it can be fixed. Read a preserved field from
// obj itself.
func Decode[T any](obj map[string]any) (*T, error) {
	out := new(T)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("decoding into %T: %w", out, err)
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, out); err != nil {
		return nil, fmt.Errorf("decoding into %T: %w", out, err)
	}
	return out, nil
}
