package e2e

import (
	"cmp"
	"slices"
	"strings"

	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/ir"
)

// Error is one problem with an e2e file: where it is, which case and field
// it concerns, what is wrong and, when there is one, what would be valid.
type Error struct {
	// Pos is the line and column in the e2e file (or, for a problem inside
	// a CR file, that file).
	Pos ir.Pos
	// Case names the case: its name, or cases[i] when it has none. Empty
	// for problems outside any case.
	Case string
	// Field is the path of the field within the case (or the file), such
	// as steps[1].timeout.
	Field string
	// Msg says what is wrong.
	Msg string
	// Hint says what would be valid.
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos.File != "" || e.Pos.IsValid() {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	if e.Case != "" {
		b.WriteString("case ")
		b.WriteString(e.Case)
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// ErrorList is every problem found in one e2e file. It is an error itself,
// printed one problem a line in file order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns nil for an empty list, otherwise the list sorted by position.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	sorted := slices.Clone(l)
	slices.SortStableFunc(sorted, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
		)
	})
	return sorted
}

// closest returns the candidate nearest to s when one is near enough to be
// what was meant.
func closest(s string, candidates []string) (string, bool) {
	return suggest.Closest(s, candidates)
}
