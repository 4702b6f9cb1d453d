package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"replicas", "image", "port", "deployment", "service"}
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"replcas", "replicas", true},
		{"Replicas", "replicas", true},
		{"imgae", "image", true}, // a swap is one edit
		{"depl", "deployment", true},
		{"xyz", "", false},
		{"de", "", false}, // too short to be an abbreviation
	} {
		got, ok := Closest(tc.in, known)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
