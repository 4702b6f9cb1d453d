package shard

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func TestBucketSelectors(t *testing.T) {
	in := labels.NewSelector().Add(In(LabelBucket, []int{0, 17, 255}))
	if got, want := in.String(), LabelBucket+" in (0,17,255)"; got != want {
		t.Errorf("In = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		set  labels.Set
		in   bool
		none bool
	}{
		{labels.Set{LabelBucket: "17"}, true, false},
		{labels.Set{LabelBucket: "18"}, false, false},
		{labels.Set{LabelBucket: "none"}, false, false},
		{labels.Set{}, false, true},
		{labels.Set{LabelOwnerBucket: "17"}, false, true},
	} {
		if got := in.Matches(tc.set); got != tc.in {
			t.Errorf("%q matches %v = %v, want %v", in, tc.set, got, tc.in)
		}
		if got := Unlabelled().Matches(tc.set); got != tc.none {
			t.Errorf("%q matches %v = %v, want %v", Unlabelled(), tc.set, got, tc.none)
		}
	}
	empty := labels.NewSelector().Add(In(LabelBucket, nil))
	for b := 0; b < DefaultBuckets; b++ {
		if empty.Matches(labels.Set{LabelBucket: strconv.Itoa(b)}) {
			t.Fatalf("the selector of no buckets %q matches bucket %d", empty, b)
		}
	}
	uid := types.UID("6f1c7a39-2b1e-4f5c-9d7e-0a8b3c4d5e6f")
	if got, want := BucketValue(uid, DefaultBuckets), strconv.Itoa(Bucket(uid, DefaultBuckets)); got != want {
		t.Errorf("BucketValue = %q, want %q", got, want)
	}
}
