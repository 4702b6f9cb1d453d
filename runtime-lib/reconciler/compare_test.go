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
