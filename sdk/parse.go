package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// parse reads one JSON document into maps, slices and scalars, as
// encoding/json does into an any, with two differences that strictness
// needs: a key given twice in one object is reported instead of the last
// one silently winning, and numbers become int64 when they are integers
// and float64 otherwise, the forms Kubernetes' unstructured objects use.
func (c *checker) parse(data []byte) (any, bool) {
	if len(bytes.TrimSpace(data)) == 0 {
		c.add("", "the "+c.doc+" is empty", "send one JSON object")
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &jsonParser{c: c, dec: dec}
	v, err := p.value("")
	if err == nil {
		if _, err = dec.Token(); err == io.EOF {
			return v, true
		}
	}
	c.add("", fmt.Sprintf("the %s is not valid JSON: %s", c.doc, syntaxError(data)), "send one JSON object")
	return nil, false
}

type jsonParser struct {
	c   *checker
	dec *json.Decoder
}

func (p *jsonParser) value(path string) (any, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := map[string]any{}
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				key := kt.(string) // the decoder only yields string keys
				child := field(path, key)
				v, err := p.value(child)
				if err != nil {
					return nil, err
				}
				if _, dup := m[key]; dup {
					p.c.add(child, "is given twice", "give each field once")
				}
				m[key] = v
			}
			_, err := p.dec.Token() // '}'
			return m, err
		case '[':
			s := []any{}
			for p.dec.More() {
				v, err := p.value(index(path, len(s)))
				if err != nil {
					return nil, err
				}
				s = append(s, v)
			}
			_, err := p.dec.Token() // ']'
			return s, err
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) {
			p.c.add(path, fmt.Sprintf("is %s, a number too large to represent", t), "")
			return float64(0), nil
		}
		return f, nil
	}
	return tok, nil // string, bool or nil
}

// syntaxError describes what makes data invalid JSON, with the line and
// column of the first bad byte. The token reader above finds that data is
// invalid but not always where: encoding/json's Unmarshal does.
func syntaxError(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	var syn *json.SyntaxError
	switch {
	case err == nil:
		return "it could not be read" // the token reader and Unmarshal disagree
	case !errors.As(err, &syn):
		return err.Error()
	case syn.Offset >= int64(len(data)):
		return "it ends too early"
	}
	line, col := 1, 1
	for _, b := range data[:syn.Offset-1] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%v at line %d, column %d", err, line, col)
}

// normalizeNumbers turns the float64s encoding/json produces into int64
// where they are whole numbers, in place, so that objects built with
// json.Unmarshal look like the ones parse returns.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeNumbers(e)
		}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
	}
	return v
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64, json.Number, int, int32, float32:
		return "a number"
	}
	return fmt.Sprintf("a Go %T", v)
}
