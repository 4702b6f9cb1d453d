package compiler

import "strings"

// closest returns the candidate nearest to s, if one is near enough to be
// what was meant.
func closest(s string, candidates []string) (string, bool) {
	best, bestDist, prefixed := "", -1, ""
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
		// A prefix is what an abbreviation looks like: depl for deployment.
		if prefixed == "" && len(s) >= 3 && strings.HasPrefix(strings.ToLower(c), strings.ToLower(s)) {
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

func didYouMean(s string, candidates []string) string {
	if c, ok := closest(s, candidates); ok {
		return "did you mean " + c + "?"
	}
	return ""
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
