package reconciler

import "testing"

func TestContains(t *testing.T) {
	live := map[string]any{
		"spec": map[string]any{
			"replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "resources": map[string]any{"limits": map[string]any{"cpu": "500m"}}},
			}}},
		},
	}
	for _, tc := range []struct {
		name string
		want map[string]any
		ok   bool
	}{
		{"same", map[string]any{"spec": map[string]any{"replicas": 2.0}}, true},
		{"zero value the server dropped", map[string]any{"spec": map[string]any{"paused": false, "minReadySeconds": int64(0), "strategy": map[string]any{}}}, true},
		{"quantity written another way", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "web", "resources": map[string]any{"limits": map[string]any{"cpu": "0.5"}}},
		}}}}}, true},
		{"different quantity", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "web", "resources": map[string]any{"limits": map[string]any{"cpu": "1"}}},
		}}}}}, false},
		{"changed", map[string]any{"spec": map[string]any{"replicas": int64(3)}}, false},
		{"set where absent", map[string]any{"spec": map[string]any{"paused": true}}, false},
		{"text is not a quantity", map[string]any{"spec": map[string]any{"replicas": "two"}}, false},
	} {
		if got := contains(live, tc.want); got != tc.ok {
			t.Errorf("%s: contains = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestSameQuantity(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		same       bool
	}{
		{"500m", "0.5", true},
		{"1k", "1000", true},
		{"1e3", "1000", true},
		{"1E", "1e18", true},
		{"1Ei", "1152921504606846976", true},
		{"1Gi", "1G", false},
		// Applied hashes that happen to read as numbers: a huge exponent
		// must not be expanded (it would never finish), only told apart.
		{"1234567812345678", "12e9876543210987", false},
		{"12e9876543210987", "12e9876543210987", true},
		// Beyond the bound, two spellings are only the same as text.
		{"3e31", "30e30", false},
	} {
		if got := contains(tc.have, tc.want); got != tc.same {
			t.Errorf("contains(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.same)
		}
	}
}
