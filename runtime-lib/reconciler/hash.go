package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
)

// hashObject is the applied hash of obj (LabelAppliedHash): the first 8
// bytes of the SHA-256 of obj as encoding/json writes it, keys sorted. It
// writes the JSON of what an unstructured object holds itself, into a
// buffer it reuses, and leaves anything else to encoding/json: the bytes,
// and so the hash every child already carries, are the same, without
// encoding/json's reflection and key sorting, which cost more than the
// rest of decorating a child.
func hashObject(obj map[string]any) string {
	buf := hashBuffers.Get().(*[]byte)
	defer hashBuffers.Put(buf)
	b, ok := AppendJSON((*buf)[:0], obj)
	*buf = b
	if !ok {
		b = nil // as json.Marshal's error left nothing
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

var hashBuffers = sync.Pool{New: func() any { return new([]byte) }}

// AppendJSON appends v, an unstructured value, as json.Marshal writes it
// (keys sorted), in a fraction of its time; false when json.Marshal fails
// on it.
func AppendJSON(b []byte, v any) ([]byte, bool) {
	ok := true
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		return appendJSONString(b, v)
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendJSONString(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			if b, ok = AppendJSON(b, v[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = AppendJSON(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	// Floats, and anything else an object may hold: rare enough for
	// encoding/json, and exact.
	raw, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, raw...), true
}

// appendJSONString appends s quoted. A string of printable ASCII that
// encoding/json does not escape (it escapes quote, backslash, and <, > and
// & for HTML) is copied; encoding/json quotes any other.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, err := json.Marshal(s)
			if err != nil {
				return b, false
			}
			return append(b, raw...), true
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}
