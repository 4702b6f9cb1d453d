// Package suggest finds what a person probably meant: the known name
// closest to a misspelt one, for "did you mean" hints in every error Inrun
// reports.
package suggest

import "strings"

// Closest returns the candidate nearest to s, when one is near enough to be
// what was meant: within a few edits (a swap of neighbours counts as one),
// or else one that s abbreviates (depl for deployment).
func Closest(s string, candidates []string) (string, bool) {
	best, bestDist, prefixed := "", -1, ""
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := distance(ls, lc)
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
		if prefixed == "" && len(s) >= 3 && strings.HasPrefix(lc, ls) {
			prefixed = c
		}
	}
	switch {
	case bestDist >= 0 && bestDist <= max(2, len(s)/3):
		return best, true
	case prefixed != "":
		return prefixed, true
	}
	return "", false
}

// distance is the optimal string alignment distance: insertions, deletions,
// substitutions, and swaps of two neighbours ("objetcs"), each one edit.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
