package sdk

import (
	"strings"
)

// FieldError is one problem in a request or a Result: where it is, what is
// wrong, and what would be valid.
type FieldError struct {
	// Path is the JSON path of the offending value, e.g.
	// resources[2].metadata.name or labels["app.kubernetes.io/name"].
	// Empty when the problem is the document as a whole.
	Path string
	// Problem says what is wrong, as the rest of a sentence that starts
	// with the path: "is required", "must be a string, not a number".
	Problem string
	// Valid says what would be accepted, when that is not obvious.
	Valid string
}

// Error renders "path problem (valid)".
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Path != "" {
		b.WriteByte(' ')
	}
	b.WriteString(e.Problem)
	if e.Valid != "" {
		b.WriteString(" (")
		b.WriteString(e.Valid)
		b.WriteByte(')')
	}
	return b.String()
}

// ErrorList is every problem found in one document, in the order the
// fields are documented in.
type ErrorList []*FieldError

// Error renders every problem on one line, separated by "; ", so that the
// whole list fits in a condition message or an Event.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.As find the individual FieldErrors.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns the list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
