package compiler

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/ir"
)

// value converts a YAML node into an ir.Value, splitting strings into
// literal text and ${...} expressions.
func (d *decoder) value(n *yaml.Node) *ir.Value {
	n = yamlpos.Resolve(n)
	v := &ir.Value{Pos: d.Pos(n)}
	switch n.Kind {
	case yaml.MappingNode:
		v.Kind = ir.Map
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				d.add(d.Pos(k), diag.WrongType, "", "map keys must be strings")
				continue
			}
			if seen[k.Value] {
				d.add(d.Pos(k), diag.InvalidValue, "remove one of them", "%s is set twice", k.Value)
				continue
			}
			seen[k.Value] = true
			if k.Value == "<<" {
				d.add(d.Pos(k), diag.InvalidValue, "write the fields out", "YAML merge keys are not supported")
				continue
			}
			if strings.Contains(k.Value, "${") {
				// Only values are evaluated: the key would reach the API
				// server as written.
				d.add(d.Pos(k), diag.InvalidValue, "write the whole map as one expression, quoted for YAML, such as matchLabels: '${ {self.spec.label: \"true\"} }'",
					"the key %s holds an expression, and keys are not evaluated", k.Value)
				continue
			}
			v.Fields = append(v.Fields, ir.Field{Key: k.Value, KeyPos: d.Pos(k), Value: d.value(val)})
		}
	case yaml.SequenceNode:
		v.Kind = ir.List
		for _, it := range n.Content {
			v.Items = append(v.Items, d.value(it))
		}
	case yaml.ScalarNode:
		d.scalar(n, v)
	default:
		v.Kind = ir.Null
	}
	return v
}

func (d *decoder) scalar(n *yaml.Node, v *ir.Value) {
	switch n.ShortTag() {
	case "!!null":
		v.Kind = ir.Null
		return
	case "!!bool":
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			v.Kind, v.Literal = ir.Literal, b
			return
		}
	case "!!int":
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
			v.Kind, v.Literal = ir.Literal, i
			return
		}
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			v.Kind, v.Literal = ir.Literal, f
			return
		}
	}
	d.text(n, v)
}

// text splits a string scalar into literal text and expressions.
func (d *decoder) text(n *yaml.Node, v *ir.Value) {
	start := d.Pos(n)
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		start.Col++
	}
	parts, err := scanTemplate(n.Value)
	if err != nil {
		p := start
		p.Col += err.offset
		d.add(p, diag.ExprSyntax, err.hint, "%s", err.msg)
		v.Kind, v.Literal = ir.Literal, n.Value
		return
	}
	for i := range parts {
		if x := parts[i].Expr; x != nil {
			// Where the source line reads the value verbatim up to the
			// expression, point at the expression; where escapes, folding
			// or a block scalar make them differ, point at the scalar.
			x.Pos = d.Pos(n)
			if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 && d.Line(start.Line) != "" {
				line := []rune(d.Line(start.Line))
				want := n.Value[:parts[i].offset] + x.Source
				if col := start.Col - 1; col <= len(line) && strings.HasPrefix(string(line[col:]), want) {
					x.Pos.Col = start.Col + utf8.RuneCountInString(n.Value[:parts[i].offset])
				}
			}
		}
	}
	switch {
	case len(parts) == 0:
		v.Kind, v.Literal = ir.Literal, ""
	case len(parts) == 1 && parts[0].Expr == nil:
		v.Kind, v.Literal = ir.Literal, parts[0].Text
	case len(parts) == 1:
		v.Kind, v.Expr = ir.Expression, parts[0].Expr
	default:
		v.Kind = ir.Interpolation
		for _, p := range parts {
			v.Parts = append(v.Parts, p.Part)
		}
	}
}

// scannedPart is an ir.Part with the byte offset of its expression's source.
type scannedPart struct {
	ir.Part
	offset int
}

type scanError struct {
	offset int
	msg    string
	hint   string
}

// scanTemplate splits s into text and ${...} expressions. It counts braces
// and skips CEL string literals, so map literals and "}" inside strings do
// not end an expression early. $${ is a literal ${.
func scanTemplate(s string) ([]scannedPart, *scanError) {
	var parts []scannedPart
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			parts = append(parts, scannedPart{Part: ir.Part{Text: text.String()}})
			text.Reset()
		}
	}
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			text.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			text.WriteByte(s[i])
			i++
			continue
		}
		start := i + 2
		end, ok := exprEnd(s, start)
		if !ok {
			return nil, &scanError{offset: i, msg: "unterminated ${ expression", hint: "close it with }"}
		}
		src := strings.TrimSpace(s[start:end])
		if src == "" {
			return nil, &scanError{offset: i, msg: "empty ${} expression", hint: "write a CEL expression inside, or $${ for a literal ${"}
		}
		flush()
		lead := len(s[start:end]) - len(strings.TrimLeft(s[start:end], " \t\n"))
		parts = append(parts, scannedPart{Part: ir.Part{Expr: &ir.Expr{Source: src}}, offset: start + lead})
		i = end + 1
	}
	flush()
	return parts, nil
}

// exprEnd returns the index of the } that closes an expression starting at
// start.
func exprEnd(s string, start int) (int, bool) {
	depth := 0
	for i := start; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '\'', '"':
			// Skip a CEL string literal, honouring backslash escapes.
			for i++; i < len(s) && s[i] != ch; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i, true
			}
			depth--
		}
	}
	return 0, false
}
