package compiler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/inrun/inrun/ir"
)

// Error is one diagnostic: a position in the Blueprint (or a file it names),
// a stable code, a message, and an optional hint on what would be valid.
type Error struct {
	Pos  ir.Pos
	Code Code
	Msg  string
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Pos.File != "" || e.Pos.IsValid() {
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	}
	b.WriteString(e.Code.String())
	b.WriteByte(' ')
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// ErrorList is every diagnostic of one compilation.
type ErrorList []*Error

func (l *ErrorList) add(pos ir.Pos, code Code, hint string, format string, args ...any) {
	*l = append(*l, &Error{Pos: pos, Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Sort orders the list by file, line and column, then code, and drops exact
// duplicates.
func (l ErrorList) Sort() ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}

// Err returns nil for an empty list, and otherwise a *multierror.Error
// holding every diagnostic in order, printed one per line.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	merr := &multierror.Error{ErrorFormat: formatList}
	for _, e := range l.Sort() {
		merr.Errors = append(merr.Errors, e)
	}
	return merr
}

func formatList(errs []error) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Errors returns the diagnostics inside err, as returned by Compile; nil
// when err holds none.
func Errors(err error) []*Error {
	merr, ok := err.(*multierror.Error)
	if !ok {
		return nil
	}
	out := make([]*Error, 0, len(merr.Errors))
	for _, e := range merr.Errors {
		if ce, ok := e.(*Error); ok {
			out = append(out, ce)
		}
	}
	return out
}
