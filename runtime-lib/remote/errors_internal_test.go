package remote

import "testing"

// TestExcerpt: a reply's body is shown on one line, at most maxBody bytes,
// without the control characters a terminal would act on.
func TestExcerpt(t *testing.T) {
	for body, want := range map[string]string{
		"\x1b[31mERROR\x1b[0m <b>no</b>\n\tdatabase": "[31mERROR[0m <b>no</b> database",
		"bell\a and nul\x00":                         "bell and nul",
		"bad \xff utf-8":                             "bad � utf-8",
	} {
		if got := excerpt([]byte(body)); got != want {
			t.Errorf("excerpt(%q) = %q, want %q", body, got, want)
		}
	}
	long := make([]byte, 500)
	for i := range long {
		long[i] = 'a'
	}
	if got := excerpt(long); len(got) != maxBody+len("…") {
		t.Errorf("excerpt of 500 bytes is %d bytes, want %d and an ellipsis", len(got), maxBody)
	}
}
