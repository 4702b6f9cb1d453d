package e2e

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inrun/inrun/internal/match"
)

// mismatches and diff are the partial match simulate.yaml uses too.
func mismatches(have, want any) []string { return match.Mismatches(have, want) }

func diff(have, want any) string { return match.Diff(have, want) }

// printStep prints a step's verdict and, when it failed, everything that
// helps see why.
func (r *run) printStep(s *StepResult) {
	label := "step " + itoa(s.Index) + ": " + s.Action
	switch {
	case s.Skipped:
		r.printf("  skip  %s (an earlier step failed)\n", label)
		return
	case s.Passed() && s.IdleSkipped != "":
		r.printf("  ok    %s (%s; no idle check: %s)\n", label, s.Duration.Round(100*time.Millisecond), s.IdleSkipped)
		return
	case s.Passed():
		r.printf("  ok    %s (%s)\n", label, s.Duration.Round(100*time.Millisecond))
		return
	case s.Err != nil:
		r.printf("  FAIL  %s (%s): %v\n", label, s.Duration.Round(100*time.Millisecond), s.Err)
		return
	case s.Timeout == 0: // expect.refused, judged at once
		r.printf("  FAIL  %s:\n", label)
	default:
		r.printf("  FAIL  %s: not within %s; last observed:\n", label, s.Timeout)
	}
	for _, f := range s.Failures {
		r.printf("        %s:\n", f.What)
		for _, p := range f.Problems {
			r.printf("          %s\n", p)
		}
		if f.Diff != "" {
			r.printf("          (-expected +observed)\n%s", indent(f.Diff, "          "))
		}
	}
	if len(s.Conditions) > 0 {
		r.printf("        the CR's conditions:\n")
		for _, c := range s.Conditions {
			r.printf("          %s\n", c)
		}
	}
	if len(s.Events) > 0 {
		r.printf("        the latest Events about the CR:\n")
		for _, e := range s.Events {
			r.printf("          %s\n", e)
		}
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + strings.TrimRight(strings.ReplaceAll(l, "\u00a0", " "), " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// sortEvents orders Events oldest first.
func sortEvents(items []corev1.Event) {
	slices.SortStableFunc(items, func(a, b corev1.Event) int {
		return eventTime(a).Compare(eventTime(b))
	})
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func itoa(i int) string {
	return strconv.Itoa(i)
}
