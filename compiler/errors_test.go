package compiler_test

import (
	"cmp"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/inrun/inrun/compiler"
	"github.com/inrun/inrun/components"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/load"
	"github.com/inrun/inrun/sdk"
)

// This file is the compiler's check_test, after go/types: every Blueprint in
// testdata/errors is wrong on purpose, and says inline which diagnostics it
// expects, as YAML comments on the line the diagnostic points at:
//
//	replcas: 2 # ERROR E0016 "unknown field spec\.replcas"
//
// The code must match exactly and the quoted regexp must match the message
// followed by "; " and the hint, when there is one. A line may hold several
// ERROR comments. Every diagnostic must match a comment on its line and
// every comment must match a diagnostic. Diagnostics that point into
// another file (a CRD manifest) or at no line are tested in
// TestErrorsElsewhere instead.

// errorRE matches one expectation: a code, then a regexp in double quotes
// in which \" stands for a quote.
var errorRE = regexp.MustCompile(`ERROR\s+(E\d{4})\s+"((?:[^"\\]|\\.)*)"`)

// expectation is one ERROR comment.
type expectation struct {
	line int
	code string
	rx   *regexp.Regexp
	used bool
}

// expectations returns the ERROR comments of src by line.
func expectations(t *testing.T, file string, src []byte) []*expectation {
	t.Helper()
	var out []*expectation
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
			out = append(out, &expectation{line: i + 1, code: m[1], rx: rx})
		}
		if strings.Contains(comment, "ERROR") && len(errorRE.FindAllString(comment, -1)) != strings.Count(comment, "ERROR") {
			t.Errorf("%s:%d: malformed ERROR comment; write # ERROR E0000 \"regexp\"", file, i+1)
		}
	}
	return out
}

// text is what an ERROR regexp is matched against: the message, then the
// hint, as Error prints them.
func text(e *diag.Diagnostic) string {
	if e.Hint == "" {
		return e.Msg
	}
	return e.Msg + "; " + e.Hint
}

func TestErrors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/errors/*.yaml")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			checkErrors(t, file)
		})
	}
}

func checkErrors(t *testing.T, file string) {
	checkErrorsWith(t, file, compiler.Options{})
}

// TestErrorsRegistered is TestErrors for testdata/typed, compiled as an
// inrun with Go reconcilers webapp and billing, the transform sidecar, the
// args hook sizing, the status hook summary and the controller guestbook
// compiled in would compile them.
func TestErrorsRegistered(t *testing.T) {
	reg := &components.Registry{}
	for _, name := range []string{"webapp", "billing"} {
		reg.RegisterReconciler(name, func(components.ReconcilerOptions) (sdk.Func, error) { return nil, nil })
	}
	reg.RegisterTransform("sidecar", func(context.Context, *components.TransformRequest) (*sdk.Resource, error) { return nil, nil })
	reg.RegisterArgs("sizing", func(context.Context, *components.ArgsRequest) (map[string]any, error) { return nil, nil })
	reg.RegisterStatus("summary", func(context.Context, *components.StatusRequest) (map[string]any, error) { return nil, nil })
	reg.RegisterController("guestbook", func(manager.Manager) error { return nil })
	files, err := filepath.Glob("testdata/typed/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/typed/*.yaml: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			checkErrorsWith(t, file, compiler.Options{Components: reg})
		})
	}
}

func checkErrorsWith(t *testing.T, file string, opts compiler.Options) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := expectations(t, file, src)
	if len(want) == 0 {
		t.Fatalf("%s has no ERROR comment", file)
	}
	bp, err := compiler.Compile(load.Bytes(file, src), opts)
	if err == nil {
		t.Fatalf("%s compiled without error", file)
	}
	if bp != nil {
		t.Errorf("Compile returned a Blueprint and an error")
	}
	got := diag.All(err)
	if len(got) == 0 {
		t.Fatalf("Compile error holds no diagnostic: %v", err)
	}
	if !slices.IsSortedFunc(got, comparePos) {
		t.Errorf("diagnostics are not sorted by position:\n%v", err)
	}
	for _, e := range got {
		if e.Pos.File != file || !e.Pos.IsValid() {
			t.Errorf("%s: diagnostic outside the file's lines (test it in TestErrorsElsewhere): %v", file, e)
			continue
		}
		if !match(want, e) {
			t.Errorf("%s:%d: unexpected diagnostic: %v", file, e.Pos.Line, e)
		}
	}
	for _, w := range want {
		if !w.used {
			t.Errorf("%s:%d: missing diagnostic %s %q", file, w.line, w.code, w.rx)
		}
	}
}

// match marks and reports the first unused expectation e fulfils.
func match(want []*expectation, e *diag.Diagnostic) bool {
	for _, w := range want {
		if !w.used && w.line == e.Pos.Line && w.code == e.Code.String() && w.rx.MatchString(text(e)) {
			w.used = true
			return true
		}
	}
	return false
}

func comparePos(a, b *diag.Diagnostic) int {
	return cmp.Or(
		cmp.Compare(a.Pos.File, b.Pos.File),
		cmp.Compare(a.Pos.Line, b.Pos.Line),
		cmp.Compare(a.Pos.Col, b.Pos.Col),
	)
}

// wantError is a diagnostic expected by a table test: its position as
// Pos.String prints it, its code, and a regexp over message and hint.
type wantError struct {
	pos  string
	code diag.Code
	rx   string
}

// elsewhereTests are Blueprints whose diagnostics cannot be written inline:
// they point into the CRD manifest, or at no line at all.
var elsewhereTests = []struct {
	name  string
	src   string
	files map[string]string // files ReadFile serves, by path
	want  []wantError
}{{
	name: "unknown anchor",
	src:  header + "  file: manifests/crd.yaml\nonReconcile: *children\n",
	want: []wantError{{"testdata/blueprint.yaml", diag.InvalidYAML, `^invalid YAML: unknown anchor 'children' referenced$`}},
}, {
	name:  "CRD not YAML",
	src:   header + "  file: crd.yaml\n",
	files: map[string]string{"testdata/crd.yaml": "spec: [\n"},
	want:  []wantError{{"testdata/crd.yaml:1:1", diag.InvalidCRD, `^crd.file "crd.yaml" is not a valid CustomResourceDefinition: `}},
}, {
	name:  "CRD with unknown field",
	src:   header + "  file: crd.yaml\n",
	files: map[string]string{"testdata/crd.yaml": strings.Replace(websiteCRD, "  scope:", "  scoop:", 1)},
	want:  []wantError{{"testdata/crd.yaml:1:1", diag.InvalidCRD, `not a valid CustomResourceDefinition: .*unknown field "scoop"`}},
}, {
	name:  "not a CRD",
	src:   header + "  file: crd.yaml\n",
	files: map[string]string{"testdata/crd.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"},
	want:  []wantError{{"testdata/crd.yaml:1:1", diag.InvalidCRD, `^crd.file "crd.yaml" holds v1 ConfigMap; the file must hold an apiextensions.k8s.io/v1 CustomResourceDefinition$`}},
}, {
	name:  "CRD without names",
	src:   header + "  file: crd.yaml\n",
	files: map[string]string{"testdata/crd.yaml": strings.Replace(websiteCRD, "    plural: websites\n", "", 1)},
	want:  []wantError{{"testdata/crd.yaml:1:1", diag.InvalidCRD, `^crd.file "crd.yaml" has no group, kind or plural; set spec.group`}},
}, {
	name:  "CRD the API server refuses",
	src:   header + "  file: crd.yaml\n",
	files: map[string]string{"testdata/crd.yaml": strings.Replace(websiteCRD, "                  default: 2\n", "                  default: 2\n                  enum: [1, 3]\n", 1)},
	want:  []wantError{{"testdata/crd.yaml:31:28", diag.InvalidCRD, `^the API server would refuse this CRD when it is installed: spec.versions\[0\].schema.openAPIV3Schema.properties\[spec\].properties\[replicas\].default: Unsupported value: 2: supported values: "1", "3"; fix the CRD`}},
}, {
	name:  "CRD without storage version",
	src:   header + "  file: crd.yaml\n",
	files: map[string]string{"testdata/crd.yaml": strings.Replace(websiteCRD, "storage: true", "storage: false", 1)},
	want:  []wantError{{"testdata/crd.yaml:1:1", diag.InvalidCRD, `^crd.file "crd.yaml" has no storage version; mark one version storage: true$`}},
}, {
	name:  "CRD without schema",
	src:   header + "  file: crd.yaml\n",
	files: map[string]string{"testdata/crd.yaml": websiteCRD[:strings.Index(websiteCRD, "      schema:")]},
	want:  []wantError{{"testdata/crd.yaml:1:1", diag.InvalidCRD, `^version v1 of websites.example.inrun.dev has no schema; add schema.openAPIV3Schema`}},
}, {
	name: "CRD not structural",
	src:  header + "  file: manifests/nonstructural.yaml\n",
	want: []wantError{{"testdata/manifests/nonstructural.yaml:1:1", diag.InvalidCRD, `^schema of gadgets.example.inrun.dev v1 is not structural: .*'patternProperties' is not supported; Kubernetes requires a structural schema`}},
}, {
	// A field without a type makes a schema non-structural: the API server
	// rejects the CRD, and CEL cannot type the field.
	name: "CRD field without type",
	src:  header + "  file: manifests/untyped.yaml\nemit:\n  status:\n    extra: ${self.spec.extra}\n",
	want: []wantError{{"testdata/manifests/untyped.yaml:1:1", diag.InvalidCRD, `^schema of widgets.example.inrun.dev v1 is not structural: .*properties\[spec\]\.properties\[extra\]\.type: Required value`}},
}}

// overlay serves files from a map, by their path, before the disk.
type overlay struct {
	load.Dir
	files map[string]string
}

func (o overlay) ReadFile(name string) ([]byte, error) {
	if s, ok := o.files[o.Path(name)]; ok {
		return []byte(s), nil
	}
	return o.Dir.ReadFile(name)
}

// header starts a Blueprint up to its crd section.
const header = "apiVersion: inrun.dev/v1alpha1\nkind: Blueprint\nmetadata:\n  name: x\ncrd:\n"

// websiteCRD is testdata/manifests/crd.yaml, for table tests that break it.
var websiteCRD = func() string {
	b, err := os.ReadFile("testdata/manifests/crd.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestErrorsElsewhere(t *testing.T) {
	for _, tt := range elsewhereTests {
		t.Run(tt.name, func(t *testing.T) {
			src := load.Bytes("testdata/blueprint.yaml", []byte(tt.src))
			src.Files = overlay{Dir: "testdata", files: tt.files}
			bp, err := compiler.Compile(src, compiler.Options{})
			if err == nil {
				t.Fatalf("compiled without error")
			}
			if bp != nil {
				t.Errorf("Compile returned a Blueprint and an error")
			}
			got := diag.All(err)
			for i := range max(len(got), len(tt.want)) {
				switch {
				case i >= len(got):
					t.Errorf("missing diagnostic %s %s %q", tt.want[i].pos, tt.want[i].code, tt.want[i].rx)
				case i >= len(tt.want):
					t.Errorf("unexpected diagnostic %v", got[i])
				default:
					w, g := tt.want[i], got[i]
					if g.Pos.String() != w.pos || g.Code != w.code || !regexp.MustCompile(w.rx).MatchString(text(g)) {
						t.Errorf("diagnostic %d:\n got %v\nwant %s: %s %q", i, g, w.pos, w.code, w.rx)
					}
				}
			}
		})
	}
}

// otherFormats are the codes no Blueprint file reports inline: the test
// files' formats (e2e, simulate) test them, TestCompileFileMissing the
// Blueprint that cannot be read, importer/kro what an import cannot
// convert, and registry/stack what a Stack resolves to. NotImplemented has
// no section to report at the moment (migrate was the last reserved one).
var otherFormats = map[diag.Code]bool{diag.NotImplemented: true, diag.UnreadableFile: true, diag.DuplicateName: true, diag.NotConvertible: true, diag.UnresolvedPattern: true, diag.DeprecatedPattern: true}

// TestEveryCodeTested makes sure each Code in diag's codes.go that a
// Blueprint can get is expected by at least one testdata/errors file or
// table test, so that a new code comes with a test.
func TestEveryCodeTested(t *testing.T) {
	tested := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	typed, _ := filepath.Glob(filepath.Join("testdata", "typed", "*.yaml"))
	for _, file := range append(files, typed...) {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range expectations(t, file, src) {
			tested[w.code] = true
		}
	}
	for _, tt := range elsewhereTests {
		for _, w := range tt.want {
			tested[w.code.String()] = true
		}
	}
	names := codeNames(t)
	if got := diag.Code(len(names)); got != diag.DeprecatedPattern {
		t.Fatalf("codes.go declares %d codes, but DeprecatedPattern, the last, is %d: update this test's reading of codes.go", len(names), diag.DeprecatedPattern)
	}
	for i, name := range names {
		code := diag.Code(i + 1)
		if otherFormats[code] {
			continue
		}
		if !tested[code.String()] {
			t.Errorf("no test expects %s (%s)", name, code)
		}
	}
}

// codeNames returns the names of the Codes declared in codes.go, in order
// of value starting at 1, by reading the const block that starts with
// _ Code = iota.
func codeNames(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../internal/diag/codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST || len(gd.Specs) == 0 {
			continue
		}
		first := gd.Specs[0].(*ast.ValueSpec)
		if id, ok := first.Type.(*ast.Ident); !ok || id.Name != "Code" {
			continue
		}
		var names []string
		for _, s := range gd.Specs[1:] {
			vs := s.(*ast.ValueSpec)
			if vs.Type != nil || len(vs.Values) != 0 {
				t.Fatalf("codes.go: %s is not an iota code", vs.Names[0])
			}
			for _, n := range vs.Names {
				names = append(names, n.Name)
			}
		}
		return names
	}
	t.Fatal("codes.go: no const block of type Code")
	return nil
}

// TestInvalidYAMLLine checks the line of YAML syntax errors. The yaml
// package prints scanner errors with 1-based lines but parser errors (an
// unclosed flow collection, a bad indentation) with 0-based ones, so the
// compiler must not take its "line N" at face value.
func TestInvalidYAMLLine(t *testing.T) {
	for _, tt := range []struct {
		src  string
		line int
		hint string // the hint's start, when it is checked
	}{
		{"a: 1\nb:\n\tc: 2\n", 3, "replace the tab with spaces"}, // scanner: a tab
		{"a: 1\nb:\n  ports: []integer\n  c: 1\n", 3, `quote the value (ports: "[]integer")`},
		{"a: 1\nb: {name: ${self.spec.image}, c: d}\n", 2, "quote the expression inside the {...} or [...] ('${self.spec.image}')"},
		{"a: 1\nb: c: d\n", 2, ""},           // scanner: mapping values not allowed
		{"a: 1\nb: \"x\n", 2, ""},            // scanner: unterminated quote
		{"a: 1\nb: {x: 1\nc: 2\n", 2, ""},    // parser: unclosed flow mapping
		{"a: 1\nb:\n  c: 1\n d: 2\n", 4, ""}, // parser: did not find expected key
		{"a: 1\n- b\n", 2, ""},               // parser: a list item in a map
		{"a: 1\nb:\n  - c\n  d: 2\n", 4, ""}, // parser: names the sequence's first line; the key that breaks it is found
		{"a: 1\nb: [1,\nc: 2\n  }\n", 2, ""}, // parser: unclosed flow sequence
		{"a: 1\nb: {x: !t}\n", 2, ""},        // scanner: a tag read into the flow's end; column 8
		{"a: 1\nb: ${x ? 1 : 2}\n", 2, ""},   // scanner: ": " in an unquoted value; column 12
		// parser: names line 2, where the list item's mapping starts; line
		// 7 is the one no key of it can be.
		{"x:\n  - id: s\n    template:\n    apiVersion: v1\n    metadata:\n        name: n\n      spec: 1\n", 7, ""},
	} {
		_, err := compiler.Compile(load.Bytes("f.yaml", []byte(tt.src)), compiler.Options{})
		errs := diag.All(err)
		if len(errs) != 1 || errs[0].Code != diag.InvalidYAML {
			t.Errorf("%q: got %v, want one %s", tt.src, err, diag.InvalidYAML)
			continue
		}
		if errs[0].Pos.Line != tt.line {
			t.Errorf("%q: %v: want line %d", tt.src, errs[0], tt.line)
		}
		if !strings.HasPrefix(errs[0].Hint, tt.hint) {
			t.Errorf("%q: hint %q, want %q", tt.src, errs[0].Hint, tt.hint)
		}
		if strings.Contains(tt.src, "!t}") && (errs[0].Pos.Col != 8 || !strings.Contains(errs[0].Hint, "space after the tag")) {
			t.Errorf("%q: %v: want column 8 and the hint to put a space after the tag", tt.src, errs[0])
		}
		if strings.Contains(tt.src, "? 1 : 2") && (errs[0].Pos.Col != 12 || !strings.Contains(errs[0].Hint, "quote the whole value")) {
			t.Errorf("%q: %v: want column 12 and the hint to quote the value", tt.src, errs[0])
		}
	}
}

func TestCompileFileMissing(t *testing.T) {
	_, err := compiler.CompileFile(filepath.Join(t.TempDir(), "blueprint.yaml"), compiler.Options{})
	errs := diag.All(err)
	if len(errs) != 1 {
		t.Fatalf("got %v, want one diagnostic", err)
	}
	e := errs[0]
	if e.Pos.IsValid() || e.Code != diag.UnreadableFile || !regexp.MustCompile(`^cannot read Blueprint: no such file or directory; .*inrun init`).MatchString(text(e)) {
		t.Errorf("got %v, want an UnreadableFile error without a line that suggests inrun init", e)
	}
}

// TestAliasBomb compiles a Blueprint of a few hundred bytes whose aliases
// expand to 100,000 values (one more level is a million, two more exhaust
// memory). The yaml package refuses such documents when it decodes them;
// the compiler, which walks the node tree itself, must refuse them too.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString(header + "  file: manifests/crd.yaml\nemit:\n  status:\n    l0: &l0 x\n")
	for i := 1; i <= 5; i++ {
		b.WriteString(fmt.Sprintf("    l%d: &l%d [", i, i))
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(fmt.Sprintf("*l%d", i-1))
		}
		b.WriteString("]\n")
	}
	_, err := compiler.Compile(load.Bytes("testdata/blueprint.yaml", []byte(b.String())), compiler.Options{})
	errs := diag.All(err)
	if len(errs) != 1 || errs[0].Code != diag.InvalidYAML || !strings.Contains(errs[0].Msg, "excessive aliasing") {
		t.Errorf("got %v, want one %s error about excessive aliasing", err, diag.InvalidYAML)
	}
}
