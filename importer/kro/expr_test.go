package kro

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRewriteExpr(t *testing.T) {
	vars := map[string]bool{"deployment": true, "job": true, "config": true, "secret": true}
	builtins := map[string]schema.GroupVersionKind{"secret": {Version: "v1", Kind: "Secret"}}
	for _, tc := range []struct {
		src, want string
		problems  []string // each problem as "offset: message"
	}{
		{src: `schema.spec.name`, want: `self.spec.name`},
		{src: `schema.metadata.name + "-x"`, want: `self.metadata.name + "-x"`},
		// Text inside string literals is text, not a reference.
		{src: `"schema.spec.name is " + schema.spec.name`, want: `"schema.spec.name is " + self.spec.name`},
		{src: `'schema' + schema.spec.x + "${schema.spec.y}"`, want: `'schema' + self.spec.x + "${schema.spec.y}"`},
		// A field of schema, or an id that merely contains it, is not the variable.
		{src: `deployment.schema.x + myschema.y`, want: `deployment.schema.x + myschema.y`},
		// A comprehension variable named schema shadows it.
		{src: `schema.spec.items.map(schema, schema.name)`, want: `self.spec.items.map(schema, schema.name)`},
		{src: `[1].all(x, x < size(schema.spec.items))`, want: `[1].all(x, x < size(self.spec.items))`},
		// Spelling is kept: quotes, spaces, optionals.
		{src: `schema.spec.?tls.orValue({})  ?  'a' : "b"`, want: `self.spec.?tls.orValue({})  ?  'a' : "b"`},
		{src: `has(schema.spec.x)`, want: `has(self.spec.x)`},
		// A field compared with null is has().
		{src: `job.status.completionTime != null`, want: `has(job.status.completionTime)`},
		{src: `null != job.status.completionTime`, want: `has(job.status.completionTime)`},
		{src: `schema.spec.x == null || deployment.status.conditions[0].type != null`, want: `!has(self.spec.x) || has(deployment.status.conditions[0].type)`},
		{src: `config.data.?x != null`, want: `config.data.?x != null`},
		{src: `schema.spec.x != null ? 1 : 2`, want: `has(self.spec.x) ? 1 : 2`},
		// Functions a Blueprint has.
		{src: `base64.encode(hash.sha256(schema.spec.name))`, want: `base64.encode(hash.sha256(self.spec.name))`},
		{src: `json.marshal({"a": schema.spec.a}).size() + lists.range(3).sum()`, want: `json.marshal({"a": self.spec.a}).size() + lists.range(3).sum()`},
		{src: `schema.spec.items.sortBy(i, i.name)`, want: `self.spec.items.sortBy(i, i.name)`},
		// Macros whose expansion calls functions of CEL's own (cel.@mapInsert).
		{src: `schema.spec.m.transformMap(k, v, v + 1).size() + schema.spec.l.transformMapEntry(i, v, {v: i}).size()`, want: `self.spec.m.transformMap(k, v, v + 1).size() + self.spec.l.transformMapEntry(i, v, {v: i}).size()`},
		{src: `schema.spec.name.reverse()`, want: `self.spec.name.reverse()`},
		// Functions it does not.
		{src: `hash.md5(schema.spec.name)`, want: `hash.md5(self.spec.name)`,
			problems: []string{"0: kro's hash.md5() has no equivalent"}},
		{src: `schema.spec.on ? {"a": 1} : omit()`, want: `self.spec.on ? {"a": 1} : omit()`,
			problems: []string{"28: kro's omit() has no equivalent"}},
		{src: `schema.spec.m.omit(["a"])`, want: `self.spec.m.omit(["a"])`},
		// A method on a name that is no variable is the compiler's to report.
		{src: `deploymnet.status.size()`, want: `deploymnet.status.size()`},
		{src: `schema.spec.name.toUpper()`, want: `self.spec.name.toUpper()`,
			problems: []string{"17: function toUpper is not one a Blueprint has; a Blueprint"}},
		{src: `deployment.status.x.md5()`, want: `deployment.status.x.md5()`,
			problems: []string{"20: function md5 is not"}},
		// A built-in object's apiVersion and kind, which a Blueprint does
		// not read, are the literals they are; a field of that name
		// deeper down, or of another variable, is kept.
		{src: `secret.apiVersion == "v1" ? secret.?kind.orValue("") : secret.data.kind`, want: `"v1" == "v1" ? optional.of("Secret").orValue("") : secret.data.kind`},
		{src: `[secret].map(secret, secret.kind)`, want: `[secret].map(secret, secret.kind)`},
		// Syntax errors are reported, the expression kept.
		{src: `schema.spec.x +`, want: `schema.spec.x +`,
			problems: []string{"15: ${schema.spec.x +} does not parse"}},
	} {
		got, probs := rewriteExpr(tc.src, vars, builtins)
		if got != tc.want {
			t.Errorf("rewriteExpr(%s)\n got %s\nwant %s", tc.src, got, tc.want)
		}
		var gotProbs []string
		for _, p := range probs {
			gotProbs = append(gotProbs, strconv.Itoa(p.offset)+": "+p.msg+"; "+p.hint)
		}
		if len(gotProbs) != len(tc.problems) {
			t.Errorf("rewriteExpr(%s): problems\n got %q\nwant %q", tc.src, gotProbs, tc.problems)
			continue
		}
		for i := range gotProbs {
			if !strings.HasPrefix(gotProbs[i], tc.problems[i]) {
				t.Errorf("rewriteExpr(%s): problem %d\n got %q\nwant prefix %q", tc.src, i, gotProbs[i], tc.problems[i])
			}
		}
	}
}

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []segment
		out  string // joinSegments
	}{
		{in: "plain", want: []segment{{text: "plain"}}, out: "plain"},
		{in: "${a}", want: []segment{{text: "a", expr: true, offset: 2}}, out: "${a}"},
		{in: "x-${a}-${b.c}", want: []segment{{text: "x-"}, {text: "a", expr: true, offset: 4}, {text: "-", offset: 6}, {text: "b.c", expr: true, offset: 9}}, out: "x-${a}-${b.c}"},
		// Map literals and braces in strings do not end an expression.
		{in: `${{"a": "}"}}`, want: []segment{{text: `{"a": "}"}`, expr: true, offset: 2}}, out: `${{"a": "}"}}`},
		// kro leaves an unclosed ${ as text; a Blueprint needs $${ for that.
		{in: "cost: ${", want: []segment{{text: "cost: ${"}}, out: "cost: $${"},
		// kro keeps a $ before an expression.
		{in: "$${a}", want: []segment{{text: "$"}, {text: "a", expr: true, offset: 3}}, out: `${"$"}${a}`},
	} {
		got, err := scan(tc.in)
		if err != nil {
			t.Errorf("scan(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("scan(%q)\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
		if out := joinSegments(got); out != tc.out {
			t.Errorf("joinSegments(scan(%q)) = %q, want %q", tc.in, out, tc.out)
		}
	}
	if _, err := scan("${a(${b})}"); err != errNested {
		t.Errorf("scan of a nested expression: err = %v, want errNested", err)
	}
}
