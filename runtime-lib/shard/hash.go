package shard

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultBuckets is the number of buckets custom resources are spread over:
// enough that four replicas get shares within a few percent of each other.
const DefaultBuckets = 256

// Hash is the 64-bit FNV-1a hash of uid, as KEP-5866's sharded list and
// watch computes it for object.metadata.uid.
func Hash(uid types.UID) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return h.Sum64()
}

// Bucket is the bucket of a custom resource with this UID, among n: the
// hash scaled to [0, n), so that each bucket is one contiguous range of
// hashes (see Range).
func Bucket(uid types.UID, n int) int {
	hi, _ := bits.Mul64(Hash(uid), uint64(n))
	return int(hi)
}

// Range is the half-open range of hashes [start, end) of bucket b among n;
// end is 0 for the last bucket, meaning 2^64. It is what a KEP-5866 shard
// selector of the bucket would name.
func Range(b, n int) (start, end uint64) {
	return first(b, n), first(b+1, n)
}

// first is the smallest hash in bucket b: ceil(b * 2^64 / n).
func first(b, n int) uint64 {
	if b >= n {
		return 0
	}
	q, r := bits.Div64(uint64(b), 0, uint64(n))
	if r != 0 {
		q++
	}
	return q
}

// Assign gives each of n buckets to one of members by rendezvous hashing:
// bucket b goes to the member with the highest score(member, b). A member
// that joins takes from each other member only the buckets it now scores
// highest on, about 1/len(members) of them, and one that leaves hands on
// only its own. The result maps each member to its sorted buckets; with no
// members it is empty.
func Assign(members []string, n int) map[string][]int {
	out := map[string][]int{}
	if len(members) == 0 {
		return out
	}
	ms := append([]string(nil), members...)
	sort.Strings(ms) // ties go to the same member whatever the order
	seeds := make([]uint64, len(ms))
	for i, m := range ms {
		h := fnv.New64a()
		_, _ = h.Write([]byte(m))
		seeds[i] = h.Sum64()
	}
	for b := 0; b < n; b++ {
		best, bestScore := 0, uint64(0)
		for i, s := range seeds {
			if sc := mix(s ^ mix(uint64(b)+1)); i == 0 || sc > bestScore {
				best, bestScore = i, sc
			}
		}
		out[ms[best]] = append(out[ms[best]], b)
	}
	return out
}

// mix is splitmix64's finaliser: FNV alone scores neighbouring buckets too
// alike for rendezvous hashing to spread them evenly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// formatBuckets writes a bucket set as the Lease annotation holds it: a
// comma-separated list of bucket numbers and ranges ("0-3,17").
func formatBuckets(set []bool) string {
	var out []byte
	for b := 0; b < len(set); b++ {
		if !set[b] {
			continue
		}
		e := b
		for e+1 < len(set) && set[e+1] {
			e++
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(out, int64(b), 10)
		if e > b {
			out = append(out, '-')
			out = strconv.AppendInt(out, int64(e), 10)
		}
		b = e
	}
	return string(out)
}

// parseBuckets reads formatBuckets' form into set, ignoring what does not
// parse or falls outside it: a Lease written by a replica with another
// bucket count holds nothing this one can name.
func parseBuckets(s string, set []bool) {
	for len(s) > 0 {
		part := s
		if i := strings.IndexByte(s, ','); i >= 0 {
			part, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		lo, hi := part, part
		if i := strings.IndexByte(part, '-'); i >= 0 {
			lo, hi = part[:i], part[i+1:]
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b >= len(set) || a > b {
			continue
		}
		for i := a; i <= b; i++ {
			set[i] = true
		}
	}
}

// Selector is the KEP-5866 shard selector of a set of buckets among n:
// one shardRange of object.metadata.uid per run of neighbouring buckets,
// joined by ||. It is what a replica's informers would send as
// ListOptions.ShardSelector where the API server has the
// ShardedListAndWatch feature; empty for no buckets.
func Selector(buckets []int, n int) string {
	set := make([]bool, n)
	for _, b := range buckets {
		if b >= 0 && b < n {
			set[b] = true
		}
	}
	var parts []string
	for b := 0; b < n; b++ {
		if !set[b] {
			continue
		}
		e := b
		for e+1 < n && set[e+1] {
			e++
		}
		start, _ := Range(b, n)
		_, end := Range(e, n)
		hi := "0x10000000000000000" // 2^64, the end of the last bucket
		if end != 0 || e+1 < n {
			hi = fmt.Sprintf("0x%016x", end)
		}
		parts = append(parts, fmt.Sprintf("shardRange(object.metadata.uid, '0x%016x', '%s')", start, hi))
		b = e
	}
	return strings.Join(parts, " || ")
}
