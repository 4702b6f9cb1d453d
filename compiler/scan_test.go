package compiler

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// part is a scannedPart spelled out: literal text, or an expression's
// source and its byte offset in the scalar.
type part struct {
	Text   string
	Expr   string
	Offset int
}

func parts(ps []scannedPart) []part {
	var out []part
	for _, p := range ps {
		if p.Expr != nil {
			out = append(out, part{Expr: p.Expr.Source, Offset: p.offset})
		} else {
			out = append(out, part{Text: p.Text})
		}
	}
	return out
}

func TestScanTemplate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []part
	}{
		{"", nil},
		{"plain text", []part{{Text: "plain text"}}},
		{"${a}", []part{{Expr: "a", Offset: 2}}},
		{"${ a.b }", []part{{Expr: "a.b", Offset: 3}}},
		{"x${a}y${b}z", []part{{Text: "x"}, {Expr: "a", Offset: 3}, {Text: "y"}, {Expr: "b", Offset: 8}, {Text: "z"}}},
		{"${a}${b}", []part{{Expr: "a", Offset: 2}, {Expr: "b", Offset: 6}}},

		// Braces of map literals nest.
		{`${{"a": 1}}`, []part{{Expr: `{"a": 1}`, Offset: 2}}},
		{`${{"a": {"b": 1}}["a"]}-x`, []part{{Expr: `{"a": {"b": 1}}["a"]`, Offset: 2}, {Text: "-x"}}},
		// A } or { inside a string literal does not count.
		{`${"}"}`, []part{{Expr: `"}"`, Offset: 2}}},
		{`${'}'}`, []part{{Expr: `'}'`, Offset: 2}}},
		{`${"{"}`, []part{{Expr: `"{"`, Offset: 2}}},
		{`${{"}": "{"}}`, []part{{Expr: `{"}": "{"}`, Offset: 2}}},
		{`${"it's"}`, []part{{Expr: `"it's"`, Offset: 2}}},
		{`${'say "}"'}`, []part{{Expr: `'say "}"'`, Offset: 2}}},
		// Escaped quotes do not end a string literal.
		{`${"a\"}"}`, []part{{Expr: `"a\"}"`, Offset: 2}}},
		{`${'a\'}'}`, []part{{Expr: `'a\'}'`, Offset: 2}}},
		{`${"a\\"}b`, []part{{Expr: `"a\\"`, Offset: 2}, {Text: "b"}}},

		// $${ is a literal ${, wherever it is.
		{"$${a}", []part{{Text: "${a}"}}},
		{"x$${a}y", []part{{Text: "x${a}y"}}},
		{"$${a}${b}", []part{{Text: "${a}"}, {Expr: "b", Offset: 7}}},
		{"${a}$${b}", []part{{Expr: "a", Offset: 2}, {Text: "${b}"}}},
		// A $ before $${ is text: the escape is the last two $ of a run.
		{"$$${a}", []part{{Text: "$${a}"}}},
		{"$$${", []part{{Text: "$${"}}},
		// A lone $ or { is text.
		{"$a {b} $ {c} $", []part{{Text: "$a {b} $ {c} $"}}},
		{"}", []part{{Text: "}"}}},

		// Multi-line expressions keep their newlines.
		{"${a &&\n  b}", []part{{Expr: "a &&\n  b", Offset: 2}}},
		{"${\n  a}", []part{{Expr: "a", Offset: 5}}},
	} {
		got, err := scanTemplate(tt.in)
		if err != nil {
			t.Errorf("scanTemplate(%q): %s", tt.in, err.msg)
			continue
		}
		if diff := cmp.Diff(tt.want, parts(got)); diff != "" {
			t.Errorf("scanTemplate(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestScanTemplateErrors(t *testing.T) {
	for _, tt := range []struct {
		in     string
		offset int
		msg    string
	}{
		{"${", 0, "unterminated ${ expression"},
		{"${a", 0, "unterminated ${ expression"},
		{"x-${a", 2, "unterminated ${ expression"},
		{"${a}-${b", 5, "unterminated ${ expression"},
		{`${{"a": 1}`, 0, "unterminated ${ expression"},
		{`${"}`, 0, "unterminated ${ expression"},
		{`${"a\"}`, 0, "unterminated ${ expression"},
		{`${'}'`, 0, "unterminated ${ expression"},
		{`${a\`, 0, "unterminated ${ expression"},
		{`${"\`, 0, "unterminated ${ expression"},
		{"${}", 0, "empty ${} expression"},
		{"a ${  } b", 2, "empty ${} expression"},
		{"${\n}", 0, "empty ${} expression"},
		{"$${a}${}", 5, "empty ${} expression"},
	} {
		got, err := scanTemplate(tt.in)
		if err == nil {
			t.Errorf("scanTemplate(%q) = %v, want error %q", tt.in, parts(got), tt.msg)
			continue
		}
		if err.offset != tt.offset || err.msg != tt.msg || err.hint == "" {
			t.Errorf("scanTemplate(%q): error %q at %d (hint %q), want %q at %d", tt.in, err.msg, err.offset, err.hint, tt.msg, tt.offset)
		}
	}
}
