package reconciler

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// upToDate reports whether live already holds everything desired says,
// including the applied hash, so that applying it would change nothing.
func upToDate(desired, live *unstructured.Unstructured) bool {
	return contains(live.Object, desired.Object)
}

// contains reports whether have holds want: every key of a map, every item
// of a list of the same length, scalars equal (numbers by value).
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if wv == nil || isEmpty(wv) {
					continue
				}
				return false
			}
			if !contains(hv, wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return have == nil || isEmpty(have)
	}
	if wn, ok := number(want); ok {
		hn, ok := number(have)
		return ok && hn == wn
	}
	if have == want {
		return true
	}
	return sameQuantity(have, want)
}

// sameQuantity reports whether two strings are one resource quantity
// written two ways: the API server stores "0.5" as "500m".
func sameQuantity(have, want any) bool {
	hs, ok1 := have.(string)
	ws, ok2 := want.(string)
	if !ok1 || !ok2 || !plausibleQuantity(hs) || !plausibleQuantity(ws) {
		return false
	}
	hq, err1 := resource.ParseQuantity(hs)
	wq, err2 := resource.ParseQuantity(ws)
	return err1 == nil && err2 == nil && hq.Cmp(wq) == 0
}

// maxQuantityExponent bounds the decimal exponent of a string compared as
// a quantity. Any string can be compared, and one such as the hex hash
// "12e9876543210987" reads as 12×10^9876543210987, which
// resource.ParseQuantity never finishes parsing; real quantities stay far
// below this.
const maxQuantityExponent = 30

// plausibleQuantity is false for a string whose exponent is beyond
// maxQuantityExponent either way.
func plausibleQuantity(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 || s[i+1:] == "" || s[i+1:] == "i" {
		return true // no exponent, or the suffix E (exa) or Ei (exbi)
	}
	exp, err := strconv.Atoi(s[i+1:])
	return err == nil && exp >= -maxQuantityExponent && exp <= maxQuantityExponent
}

// isEmpty is true for the values the API server may drop: empty maps and
// lists, and the zero values of omitempty fields (false, 0, "").
func isEmpty(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case bool:
		return !t
	case string:
		return t == ""
	}
	if n, ok := number(v); ok {
		return n == 0
	}
	return false
}

func number(v any) (float64, bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true
	case int:
		return float64(t), true
	case int32:
		return float64(t), true
	case float64:
		return t, true
	}
	return 0, false
}

// equalJSON reports whether two JSON-like values are equal, numbers by
// value.
func equalJSON(a, b any) bool {
	return contains(a, b) && contains(b, a)
}
