package shard

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

// TestHashIsFNV1a pins the hash to 64-bit FNV-1a of the UID's bytes, the
// one KEP-5866 names, with the reference vectors of the FNV authors.
func TestHashIsFNV1a(t *testing.T) {
	for in, want := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c, "foobar": 0x85944171f73967e8} {
		if got := Hash(types.UID(in)); got != want {
			t.Errorf("Hash(%q) = %#x, want %#x", in, got, want)
		}
	}
}

// TestBucketsAreHashRanges checks that a UID's bucket is the one whose
// Range holds its hash, so that a bucket set can be written as shard
// selectors.
func TestBucketsAreHashRanges(t *testing.T) {
	for _, n := range []int{1, 3, 256, 1000} {
		for i := 0; i < 2000; i++ {
			uid := types.UID(fmt.Sprintf("0b5e8a1c-%04d-4d6e-9f00-%012d", i, i*7919))
			b := Bucket(uid, n)
			if b < 0 || b >= n {
				t.Fatalf("n=%d: bucket %d out of range", n, b)
			}
			start, end := Range(b, n)
			h := Hash(uid)
			if h < start || (end != 0 && h >= end) {
				t.Fatalf("n=%d: hash %#x of bucket %d is outside [%#x, %#x)", n, h, b, start, end)
			}
		}
	}
}

func members(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("inrun-7c9d8f-%d", i)
	}
	return out
}

// TestAssignGivesEveryBucketOnce checks that the buckets are split, each
// to exactly one member, and evenly enough.
func TestAssignGivesEveryBucketOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		got := Assign(members(n), DefaultBuckets)
		seen := map[int]string{}
		for m, bs := range got {
			for _, b := range bs {
				if other, dup := seen[b]; dup {
					t.Fatalf("%d members: bucket %d given to %s and %s", n, b, other, m)
				}
				seen[b] = m
			}
			// Binomial spread: 4 standard deviations is a bug, not chance.
			p := 1 / float64(n)
			mean, sd := p*DefaultBuckets, math.Sqrt(DefaultBuckets*p*(1-p))
			if math.Abs(float64(len(bs))-mean) > 4*sd+1 {
				t.Errorf("%d members: %s has %d buckets, expected about %.0f", n, m, len(bs), mean)
			}
		}
		if len(seen) != DefaultBuckets {
			t.Fatalf("%d members: %d buckets assigned, want %d", n, len(seen), DefaultBuckets)
		}
	}
}

// TestAssignMovesLittle checks rendezvous hashing's promise: a member
// joining takes buckets only for itself, about 1/n of them (2→3 moves at
// most 40%), and one leaving hands on only its own.
func TestAssignMovesLittle(t *testing.T) {
	owner := func(ms []string) map[int]string {
		out := map[int]string{}
		for m, bs := range Assign(ms, DefaultBuckets) {
			for _, b := range bs {
				out[b] = m
			}
		}
		return out
	}
	for n := 1; n <= 7; n++ {
		before, after := owner(members(n)), owner(members(n+1))
		joined := members(n + 1)[n]
		moved := 0
		for b, m := range after {
			if m != before[b] {
				moved++
				if m != joined {
					t.Fatalf("%d→%d: bucket %d moved from %s to %s, not to the member that joined", n, n+1, b, before[b], m)
				}
			}
		}
		if n == 2 && moved > DefaultBuckets*40/100 {
			t.Errorf("2→3 members moved %d of %d buckets, more than 40%%", moved, DefaultBuckets)
		}
		t.Logf("%d→%d members: %d of %d buckets moved (%.0f%%)", n, n+1, moved, DefaultBuckets, 100*float64(moved)/DefaultBuckets)
	}
	// The order members are listed in changes nothing.
	ms := members(4)
	a, b := Assign(ms, DefaultBuckets), Assign([]string{ms[3], ms[1], ms[0], ms[2]}, DefaultBuckets)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("Assign depends on the order of its members")
	}
}

func TestBucketSetRoundTrip(t *testing.T) {
	set := make([]bool, 20)
	for _, b := range []int{0, 1, 2, 3, 7, 9, 10, 19} {
		set[b] = true
	}
	s := formatBuckets(set)
	if s != "0-3,7,9-10,19" {
		t.Fatalf("formatBuckets = %q", s)
	}
	got := make([]bool, 20)
	parseBuckets(s+",x,30,5-2", got)
	if fmt.Sprint(got) != fmt.Sprint(set) {
		t.Fatalf("parseBuckets(%q) = %v, want %v", s, got, set)
	}
}

// TestSelectorIsTheAPIServers checks Hash, Bucket and Selector against the
// API server's own sharding code (k8s.io/apimachinery/pkg/sharding): the
// selector of a bucket set matches exactly the objects whose UID falls in
// one of its buckets.
func TestSelectorIsTheAPIServers(t *testing.T) {
	if got := Selector([]int{0, 1}, 4); got != "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')" {
		t.Errorf("Selector(0,1 of 4) = %s", got)
	}
	if got := Selector([]int{3}, 4); got != "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')" {
		t.Errorf("Selector(3 of 4) = %s", got)
	}
	mine := []int{0, 5, 6, 7, 100, 101, 254, 255}
	sel := Selector(mine, DefaultBuckets)
	var reqs []sharding.ShardRangeRequirement
	rangeRE := regexp.MustCompile(`^shardRange\(object\.metadata\.uid, '(0x[0-9a-f]{16})', '(0x[0-9a-f]{16,17})'\)$`)
	for _, part := range strings.Split(sel, " || ") {
		m := rangeRE.FindStringSubmatch(part)
		if m == nil {
			t.Fatalf("%q is not a shardRange", part)
		}
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: m[1], End: m[2]})
	}
	if len(reqs) != 4 {
		t.Errorf("%s: %d ranges for 4 runs of buckets", sel, len(reqs))
	}
	apiserver := sharding.NewSelector(reqs...)
	in := map[int]bool{}
	for _, b := range mine {
		in[b] = true
	}
	matched := 0
	for i := 0; i < 5000; i++ {
		uid := types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i*2654435761))
		if got, want := sharding.HashField(string(uid)), fmt.Sprintf("%016x", Hash(uid)); got != want {
			t.Fatalf("the API server hashes %s to %s, Hash to %s", uid, got, want)
		}
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: uid}}
		ok, err := apiserver.Matches(obj)
		if err != nil {
			t.Fatal(err)
		}
		if ok != in[Bucket(uid, DefaultBuckets)] {
			t.Fatalf("%s (bucket %d): the API server's selector matches %v", uid, Bucket(uid, DefaultBuckets), ok)
		}
		if ok {
			matched++
		}
	}
	if matched == 0 {
		t.Fatal("no UID fell in the buckets: the test proves nothing")
	}
}
