package expr

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

func TestReadPaths(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("d", cel.DynType), cel.Variable("other", cel.DynType), cel.OptionalTypes())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		src  string
		want []string // dotted; "" reads d whole
	}{
		{"d.status.readyReplicas", []string{"status.readyReplicas"}},
		{"d.status.readyReplicas == other.spec.replicas", []string{"status.readyReplicas"}},
		{"d.?status.?readyReplicas.orValue(0)", []string{"status.readyReplicas"}},
		{"d.metadata.labels['app']", []string{"metadata.labels"}},
		{"has(d.status.ready)", []string{"status"}},
		{"d.status.conditions.exists(c, c.type == 'Ready')", []string{"status.conditions"}},
		{"string(d)", []string{""}},
		{"[d.spec.a, d.spec.b]", []string{"spec.a", "spec.b"}},
		{"other.status.x", nil},
	} {
		ast, iss := env.Compile(tt.src)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", tt.src, iss.Err())
		}
		var got []string
		for _, p := range ReadPaths(ast.NativeRep().Expr(), "d") {
			got = append(got, strings.Join(p, "."))
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ReadPaths(%s) = %q, want %q", tt.src, got, tt.want)
		}
	}
}
