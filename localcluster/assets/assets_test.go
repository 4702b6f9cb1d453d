package assets

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// fakeAssets fills dir with shell scripts that answer the version probes
// the way the real binaries do, and records them in a manifest as Ensure
// would.
func fakeAssets(t *testing.T, dir string) {
	t.Helper()
	for name, probe := range versionProbes {
		script := fmt.Sprintf("#!/bin/sh\necho '%s'\n", probe.want)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, StagesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, StagesDir, "pod-ready.yaml"), []byte("kind: Stage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &manifest{Versions: map[string]string{}, Files: map[string]string{}}
	for _, g := range groups() {
		files := append([]string{}, g.binaries...)
		if g.name == "kwok" {
			files = append(files, StagesDir+"/pod-ready.yaml")
		}
		if err := m.record(dir, g, files); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.write(dir); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	err := Check(dir)
	if !IsMissing(err) || !strings.Contains(err.Error(), "etcd does not exist") || !strings.Contains(err.Error(), BuildCommand) {
		t.Fatalf("Check(empty dir) = %v, want etcd missing and the build command", err)
	}

	fakeAssets(t, dir)
	if err := Check(dir); err != nil {
		t.Fatalf("Check(complete dir) = %v", err)
	}

	os.Chmod(filepath.Join(dir, Kwok), 0o644)
	if err := Check(dir, Etcd, KubeAPIServer); err != nil {
		t.Errorf("Check(dir, etcd, kube-apiserver) = %v, want nil: kwok is not asked for", err)
	}
	if err := Check(dir); !IsMissing(err) || !strings.Contains(err.Error(), "kwok is not executable") {
		t.Errorf("Check(dir) = %v, want kwok not executable", err)
	}
}

func TestCheckRejectsOtherVersions(t *testing.T) {
	dir := t.TempDir()
	fakeAssets(t, dir)
	m, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Versions["kubernetes"] = "v1.36.0"
	if err := m.write(dir); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir, Etcd); !IsMissing(err) || !strings.Contains(err.Error(), "v1.36.0") {
		t.Errorf("Check = %v, want a MissingError naming v1.36.0", err)
	}
}

// TestEnsureVerifiesBeforeReuse shows that Ensure reuses verified assets
// without the go command, and rebuilds a file whose checksum changed.
func TestEnsureVerifiesBeforeReuse(t *testing.T) {
	dir := t.TempDir()
	fakeAssets(t, dir)
	var out bytes.Buffer
	opts := Options{Dir: dir, Progress: &out, GoCommand: "inrun-test-no-such-go"}
	if _, err := Ensure(context.Background(), opts); err != nil {
		t.Fatalf("Ensure over verified assets: %v\n%s", err, &out)
	}
	if want := "kubectl " + KubernetesVersion + " is at " + filepath.Join(dir, Kubectl); !strings.Contains(out.String(), want) {
		t.Errorf("Ensure printed\n%s\nwant a line with %q", &out, want)
	}

	f, err := os.OpenFile(filepath.Join(dir, KubeScheduler), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# changed\n")
	f.Close()
	out.Reset()
	_, err = Ensure(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "needs the go command") {
		t.Fatalf("Ensure over a changed kube-scheduler: %v, want it to try to build", err)
	}
}

func TestEnsureRejectsUnstampedVersion(t *testing.T) {
	dir := t.TempDir()
	fakeAssets(t, dir)
	script := "#!/bin/sh\necho 'Kubernetes v0.0.0-master'\n"
	if err := os.WriteFile(filepath.Join(dir, KubeAPIServer), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m, _ := readManifest(dir)
	for _, g := range groups() {
		if g.name == "kubernetes" {
			m.record(dir, g, g.binaries)
		}
	}
	m.write(dir)
	err := m.verify(context.Background(), dir, groups()[1])
	if err == nil || !strings.Contains(err.Error(), "v0.0.0-master") {
		t.Errorf("verify = %v, want it to report the unstamped version", err)
	}
}

func TestStagingReplaces(t *testing.T) {
	const gomod = `module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require k8s.io/api v0.0.0

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	example.com/fork => example.com/fork v1.2.3
)

replace k8s.io/kubectl => ./staging/src/k8s.io/kubectl
`
	f, err := modfile.Parse("go.mod", []byte(gomod), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := stagingReplaces(f)
	want := map[string]string{"k8s.io/api": "v0.37.2", "k8s.io/client-go": "v0.37.2", "k8s.io/kubectl": "v0.37.2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stagingReplaces = %v, want %v", got, want)
	}
	if len(f.Godebug) != 1 {
		t.Errorf("the godebug line was not parsed: %v", f.Godebug)
	}
}

func TestLineCounter(t *testing.T) {
	c := &lineCounter{}
	if got := c.status(); got != "downloading modules, 0 so far" {
		t.Errorf("status = %q", got)
	}
	fmt.Fprint(c, "go: downloading k8s.io/api v0.37.2\n# comment\nk8s.io/api/core/v1\nk8s.io/kuber")
	fmt.Fprint(c, "netes/cmd/kube-apiserver\n")
	if got := c.status(); got != "2 packages compiled" {
		t.Errorf("status = %q, want 2 packages compiled", got)
	}
}

func TestVersionTag(t *testing.T) {
	if got, want := VersionTag(), "v1.37.2-etcd3.6.16-kwok0.8.0"; got != want {
		t.Errorf("VersionTag() = %q, want %q", got, want)
	}
}

// TestBuiltAssetsVerify checks the assets "make assets" built, if any, the
// way Ensure does before it reuses them.
func TestBuiltAssetsVerify(t *testing.T) {
	dir, err := DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	// Ensure verifies every group, the registry beside the control plane
	// included: a cache built before it was added is not complete yet.
	if err := Check(dir, append(append(append([]string{}, Binaries...), Tools...), StagesDir)...); err != nil {
		if os.Getenv("INRUN_REQUIRE_ASSETS") == "1" {
			t.Fatal(err)
		}
		t.Skipf("skipping: %v", err)
	}
	var out bytes.Buffer
	if _, err := Ensure(context.Background(), Options{Dir: dir, Progress: &out, GoCommand: "inrun-test-no-such-go"}); err != nil {
		t.Fatalf("Ensure: %v\n%s", err, &out)
	}
}
