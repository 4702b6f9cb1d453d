package expr

import (
	"slices"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// TestBaseEnv keeps baseEnv alike the API server's base environment: the
// same functions and macros, and the same expressions refused, but for
// literals with items of different types.
func TestBaseEnv(t *testing.T) {
	ours, err := baseEnv()
	if err != nil {
		t.Fatal(err)
	}
	theirs := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).NewExpressionsEnv()
	names := func(env *cel.Env) []string {
		var out []string
		for name := range env.Functions() {
			out = append(out, name)
		}
		for _, m := range env.Macros() {
			out = append(out, "macro "+m.Function())
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	if a, b := names(ours), names(theirs); !slices.Equal(a, b) {
		t.Errorf("functions differ from the API server's:\nours   %v\ntheirs %v", a, b)
	}
	for _, src := range []string{
		`duration("1x") == duration("1s")`,
		`"a".matches("(")`,
		`timestamp("yesterday") > timestamp("2020-01-01T00:00:00Z")`,
	} {
		_, iss := ours.Compile(src)
		_, theirIss := theirs.Compile(src)
		if iss.Err() == nil || theirIss.Err() == nil {
			t.Errorf("%s: ours %v, the API server's %v; want both refused", src, iss.Err(), theirIss.Err())
		}
	}
	const mixed = `{"name": "http", "port": 80}`
	if _, iss := ours.Compile(mixed); iss.Err() != nil {
		t.Errorf("%s: %v; kro accepts it", mixed, iss.Err())
	}
	if _, iss := theirs.Compile(mixed); iss.Err() == nil {
		t.Errorf("%s: the API server's environment accepts it now; baseEnv may follow it again", mixed)
	}
}
