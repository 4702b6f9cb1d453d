package diag

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// Pos is a position in a source file. Line and Col are 1-based; a zero Line
// means the position names the file only.
type Pos struct {
	File string
	Line int
	Col  int
}

// String renders the position as file:line:col, the form editors jump to.
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.File == "":
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// IsValid reports whether the position names a line.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Diagnostic is one problem: where it is, its class, what is wrong and,
// where it helps, what would be valid.
type Diagnostic struct {
	Pos  Pos
	Code Code
	Msg  string
	Hint string
}

// Error renders "file:line:col: CODE message; hint".
func (d *Diagnostic) Error() string {
	var b strings.Builder
	if d.Pos.File != "" || d.Pos.IsValid() {
		b.WriteString(d.Pos.String())
		b.WriteString(": ")
	}
	b.WriteString(d.Code.String())
	b.WriteByte(' ')
	b.WriteString(d.Msg)
	if d.Hint != "" {
		b.WriteString("; ")
		b.WriteString(d.Hint)
	}
	return b.String()
}

// List collects the diagnostics of one read. The zero value is empty and
// ready to use.
type List []*Diagnostic

// Add appends a diagnostic whose message is format applied to args.
func (l *List) Add(pos Pos, code Code, hint, format string, args ...any) {
	*l = append(*l, &Diagnostic{Pos: pos, Code: code, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Append appends every diagnostic err holds (see All); an error that holds
// none is appended as one diagnostic at pos with code.
func (l *List) Append(pos Pos, code Code, err error) {
	if err == nil {
		return
	}
	if ds := All(err); len(ds) > 0 {
		*l = append(*l, ds...)
		return
	}
	*l = append(*l, &Diagnostic{Pos: pos, Code: code, Msg: err.Error()})
}

// Sort orders the list by file, line and column, then code and message,
// and drops exact duplicates.
func (l List) Sort() List {
	slices.SortStableFunc(l, func(a, b *Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(l, func(a, b *Diagnostic) bool { return *a == *b })
}

// Err returns nil for an empty list, and otherwise a *multierror.Error
// holding every diagnostic, sorted, printed one per line.
func (l List) Err() error {
	if len(l) == 0 {
		return nil
	}
	merr := &multierror.Error{ErrorFormat: formatLines}
	for _, d := range slices.Clone(l).Sort() {
		merr.Errors = append(merr.Errors, d)
	}
	return merr
}

func formatLines(errs []error) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// All returns the diagnostics err holds: those of a list's Err, joined or
// wrapped ones included, or err itself when it is a *Diagnostic. It returns
// nil when err holds none.
func All(err error) List {
	var out List
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *Diagnostic:
			out = append(out, e)
		case *multierror.Error:
			for _, inner := range e.Errors {
				walk(inner)
			}
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	return out
}
