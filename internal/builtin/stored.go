package builtin

import (
	"encoding/base64"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// SecretAsStored makes u, about to be written, what the API server stores
// of it when it is a Secret: stringData merged into data, base64-encoded (a
// stringData key wins over the same data key), and dropped. The runtime
// writes its Secret children so, for the live object to hold every field
// it applied; the simulator's store admits every Secret so. A stringData
// that is not a map of strings is left as it is, for the write to be
// refused as the API server's decoding refuses it.
func SecretAsStored(u *unstructured.Unstructured) {
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Secret" {
		return
	}
	raw, found := u.Object["stringData"]
	sd, ok := raw.(map[string]any)
	if !found || (!ok && raw != nil) {
		return
	}
	for _, v := range sd {
		if _, ok := v.(string); !ok {
			return
		}
	}
	if len(sd) > 0 {
		data, _ := u.Object["data"].(map[string]any)
		if data == nil {
			data = map[string]any{}
			u.Object["data"] = data
		}
		for k, v := range sd {
			data[k] = base64.StdEncoding.EncodeToString([]byte(v.(string)))
		}
	}
	delete(u.Object, "stringData")
}
