// Package diagtest checks diagnostics against expectations written inline
// in the bad input itself, after go/types' check tests: a YAML comment on
// the line a diagnostic points at,
//
//	replcas: 2 # ERROR E0016 "unknown field spec\.replcas"
//
// names its code and a regexp that must match the message followed by
// "; " and the hint, when there is one. A line may hold several ERROR
// comments. Every diagnostic must match a comment on its line and every
// comment a diagnostic. Every file format Inrun reads is tested this way.
package diagtest

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/inrun/inrun/internal/diag"
)

// errorRE matches one expectation: a code, then a regexp in double quotes
// in which \" stands for a quote.
var errorRE = regexp.MustCompile(`ERROR\s+(E\d{4})\s+"((?:[^"\\]|\\.)*)"`)

// Expectation is one ERROR comment.
type Expectation struct {
	Line int
	Code string
	RX   *regexp.Regexp
	used bool
}

// Expectations returns the ERROR comments of src, in line order. A
// malformed comment fails t.
func Expectations(t testing.TB, file string, src []byte) []*Expectation {
	t.Helper()
	var out []*Expectation
	for i, line := range strings.Split(string(src), "\n") {
		_, comment, ok := strings.Cut(line, "#")
		if !ok {
			continue
		}
		for _, m := range errorRE.FindAllStringSubmatch(comment, -1) {
			rx, err := regexp.Compile(strings.ReplaceAll(m[2], `\"`, `"`))
			if err != nil {
				t.Errorf("%s:%d: bad ERROR regexp: %v", file, i+1, err)
				continue
			}
			out = append(out, &Expectation{Line: i + 1, Code: m[1], RX: rx})
		}
		if strings.Contains(comment, "ERROR") && len(errorRE.FindAllString(comment, -1)) != strings.Count(comment, "ERROR") {
			t.Errorf("%s:%d: malformed ERROR comment; write # ERROR E0000 \"regexp\"", file, i+1)
		}
	}
	return out
}

// Text is what an ERROR regexp is matched against: the message, then the
// hint, as Diagnostic.Error prints them.
func Text(d *diag.Diagnostic) string {
	if d.Hint == "" {
		return d.Msg
	}
	return d.Msg + "; " + d.Hint
}

// Check requires err to hold exactly the diagnostics src's ERROR comments
// expect, sorted by position, every one on a line of file. It returns the
// diagnostics that point elsewhere (another file, or no line), which the
// caller may check on its own; they are not errors here when allowElsewhere
// is true.
func Check(t testing.TB, file string, src []byte, err error, allowElsewhere bool) (elsewhere diag.List) {
	t.Helper()
	want := Expectations(t, file, src)
	if len(want) == 0 {
		t.Fatalf("%s has no ERROR comment", file)
	}
	if err == nil {
		t.Fatalf("%s was accepted", file)
	}
	got := diag.All(err)
	if len(got) == 0 {
		t.Fatalf("the error holds no diagnostic: %v", err)
	}
	if !slices.IsSortedFunc(got, ComparePos) {
		t.Errorf("diagnostics are not sorted by position:\n%v", err)
	}
	for _, d := range got {
		if d.Pos.File != file || !d.Pos.IsValid() {
			if !allowElsewhere {
				t.Errorf("%s: diagnostic outside the file's lines: %v", file, d)
			}
			elsewhere = append(elsewhere, d)
			continue
		}
		if !match(want, d) {
			t.Errorf("%s:%d: unexpected diagnostic: %v", file, d.Pos.Line, d)
		}
	}
	for _, w := range want {
		if !w.used {
			t.Errorf("%s:%d: missing diagnostic %s %q; got:\n%v", file, w.Line, w.Code, w.RX, err)
		}
	}
	return elsewhere
}

// match marks and reports the first unused expectation d fulfils.
func match(want []*Expectation, d *diag.Diagnostic) bool {
	for _, w := range want {
		if !w.used && w.Line == d.Pos.Line && w.Code == d.Code.String() && w.RX.MatchString(Text(d)) {
			w.used = true
			return true
		}
	}
	return false
}

// ComparePos orders diagnostics as diag.List.Sort does, by position.
func ComparePos(a, b *diag.Diagnostic) int {
	return cmp.Or(
		cmp.Compare(a.Pos.File, b.Pos.File),
		cmp.Compare(a.Pos.Line, b.Pos.Line),
		cmp.Compare(a.Pos.Col, b.Pos.Col),
	)
}
