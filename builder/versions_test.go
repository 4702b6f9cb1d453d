package builder_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	inrun "github.com/inrun/inrun"
	"github.com/inrun/inrun/builder"
)

// module writes a go.mod requiring reqs into a directory of its own.
func module(t *testing.T, path string, reqs ...string) builder.With {
	t.Helper()
	dir := t.TempDir()
	src := "module " + path + "\n\ngo 1.26\n\nrequire (\n"
	for _, r := range reqs {
		src += "\t" + r + "\n"
	}
	src += ")\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := builder.ParseWith(path + "=" + dir)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// pins are those of this inrun's own go.mod, as a built inrun has them.
func pins(t *testing.T) map[string]string {
	t.Helper()
	data, err := inrun.Source.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	p, err := builder.Pinned(data)
	if err != nil {
		t.Fatal(err)
	}
	if p["sigs.k8s.io/controller-runtime"] == "" || p["k8s.io/api"] == "" || p["k8s.io/client-go"] == "" {
		t.Fatalf("Pinned = %v, want controller-runtime, k8s.io/api and client-go", p)
	}
	if _, ok := p["k8s.io/klog/v2"]; ok {
		t.Errorf("Pinned holds k8s.io/klog/v2, whose versions are its own: %v", p)
	}
	return p
}

// TestCheckVersions: a module pinned to another controller-runtime or
// Kubernetes minor is refused before anything is compiled, with both
// versions and the go get that fixes it; one at inrun's minors, with
// other patch versions and modules of its own, passes.
func TestCheckVersions(t *testing.T) {
	p := pins(t)
	cr, api := p["sigs.k8s.io/controller-runtime"], p["k8s.io/api"]
	read := func(ws ...builder.With) []*builder.GoMod {
		var out []*builder.GoMod
		for _, w := range ws {
			m, err := builder.ReadGoMod(context.Background(), w)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	good := module(t, "example.com/good",
		"sigs.k8s.io/controller-runtime "+minorOf(cr)+".0",
		"k8s.io/api "+minorOf(api)+".0",
		"k8s.io/kubectl "+minorOf(api)+".1", // a staging module inrun lacks, at its Kubernetes
		"k8s.io/klog/v2 v2.90.0",
		"k8s.io/utils v0.0.0-20200101000000-000000000000",
		"github.com/google/go-cmp v0.6.0",
	)
	if err := builder.CheckVersions(p, read(good)); err != nil {
		t.Fatalf("a module at inrun's minors was refused: %v", err)
	}
	skewed := module(t, "example.com/skewed",
		"sigs.k8s.io/controller-runtime v0.19.4",
		"k8s.io/client-go v0.31.2",
		"k8s.io/kubectl v0.31.2",
	)
	err := builder.CheckVersions(p, read(good, skewed))
	if err == nil {
		t.Fatal("a module pinned to another controller-runtime minor passed")
	}
	msg := err.Error()
	for _, want := range []string{
		"example.com/skewed (",
		"requires sigs.k8s.io/controller-runtime v0.19.4 (inrun has " + cr + "), k8s.io/client-go v0.31.2 (inrun has " + p["k8s.io/client-go"] + "), k8s.io/kubectl v0.31.2 (inrun's Kubernetes modules are " + minorOf(api) + ".x)",
		"Fix: in example.com/skewed, run go get k8s.io/client-go@" + p["k8s.io/client-go"] + " k8s.io/kubectl@" + minorOf(api) + " sigs.k8s.io/controller-runtime@" + cr + " && go mod tidy",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error:\n%s\nwant it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, "example.com/good") {
		t.Errorf("error names the module that agrees:\n%s", msg)
	}
}

func minorOf(v string) string { return v[:strings.LastIndexByte(v, '.')] }

func TestParseWith(t *testing.T) {
	for in, want := range map[string]builder.With{
		"example.com/webapp":                  {Module: "example.com/webapp", Version: "latest"},
		"example.com/webapp@v1.2.0":           {Module: "example.com/webapp", Version: "v1.2.0"},
		"example.com/webapp=../webapp":        {Module: "example.com/webapp", Dir: "../webapp"},
		"example.com/webapp@v1.2.0=../webapp": {Module: "example.com/webapp", Version: "v1.2.0", Dir: "../webapp"},
	} {
		got, err := builder.ParseWith(in)
		if err != nil || got != want {
			t.Errorf("ParseWith(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"Example.com/../x":       "--with Example.com/../x:",
		"example.com/webapp@1.2": `version "1.2" is not a semantic version`,
		"example.com/webapp=":    "the path after = is empty",
	} {
		if _, err := builder.ParseWith(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWith(%q) = %v, want %q", in, err, want)
		}
	}
}
