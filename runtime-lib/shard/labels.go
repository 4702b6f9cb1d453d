package shard

import (
	"strconv"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// LabelBucket is a custom resource's own bucket, written by the
	// replicas (see Label) so that each caches only its buckets'.
	LabelBucket = "shard.inrun.dev/bucket"
	// LabelOwnerBucket is, on a child, the bucket of the custom resource
	// it was made for. It is not LabelBucket because a child may itself be
	// another Blueprint's custom resource, with a bucket of its own.
	LabelOwnerBucket = "shard.inrun.dev/owner-bucket"
	// FieldOwner is the field manager of the LabelBucket writes: they
	// touch nothing else.
	FieldOwner = "inrun-shard"
)

// BucketValue is the value of LabelBucket (or LabelOwnerBucket) for the
// custom resource with this UID, among n buckets.
func BucketValue(uid types.UID, n int) string {
	return strconv.Itoa(Bucket(uid, n))
}

// In is the label requirement "key in (buckets)". With no buckets it
// matches no object: a label selector cannot name an empty set, and no
// bucket is called "none".
func In(key string, buckets []int) labels.Requirement {
	values := make([]string, 0, len(buckets))
	for _, b := range buckets {
		values = append(values, strconv.Itoa(b))
	}
	if len(values) == 0 {
		values = []string{"none"}
	}
	r, err := labels.NewRequirement(key, selection.In, values)
	if err != nil {
		panic(err) // the key is a constant, the values numbers
	}
	return *r
}

// Unlabelled is the selector of the objects that have no LabelBucket yet.
func Unlabelled() labels.Selector {
	r, err := labels.NewRequirement(LabelBucket, selection.DoesNotExist, nil)
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}
