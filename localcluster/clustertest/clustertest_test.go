package clustertest

import "testing"

func TestNamePrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"TestApply", "testapply-"},
		{"TestApply/with_prune#01", "testapply-with-prune-01-"},
		{"TestAVeryLongNameThatGoesOnAndOnAndOnPastTheLimit/sub", "testaverylongnamethatgoesonandonandonpas-"},
		{"///", "test-"},
	} {
		if got := namePrefix(tc.in); got != tc.want {
			t.Errorf("namePrefix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
