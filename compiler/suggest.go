package compiler

import "github.com/inrun/inrun/internal/suggest"

// closest returns the candidate nearest to s, if one is near enough to be
// what was meant.
func closest(s string, candidates []string) (string, bool) {
	return suggest.Closest(s, candidates)
}

func didYouMean(s string, candidates []string) string {
	if c, ok := closest(s, candidates); ok {
		return "did you mean " + c + "?"
	}
	return ""
}
