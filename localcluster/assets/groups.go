package assets

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// A group is a set of assets built by one go build from one module.
type group struct {
	// name keys the group in the manifest.
	name string
	// module and version are what the group is built from.
	module  string
	version string
	// binaries are the files the group puts in the assets directory; the
	// kwok group adds its stage files too.
	binaries []string
	// estimate is how long a first build took on two cores, for the
	// progress line, so a newcomer knows how long to wait.
	estimate string
	// build compiles the group's files into out, an empty directory that
	// Ensure then moves into the assets directory.
	build func(ctx context.Context, b *builder, out string) error
}

// owns reports whether a manifest entry belongs to g.
func (g group) owns(name string) bool {
	for _, bin := range g.binaries {
		if name == bin {
			return true
		}
	}
	return g.name == "kwok" && strings.HasPrefix(name, StagesDir+"/")
}

// title names the binaries of g for people, as in "kube-apiserver,
// kube-scheduler and kubectl".
func (g group) title() string {
	if len(g.binaries) == 1 {
		return g.binaries[0]
	}
	return strings.Join(g.binaries[:len(g.binaries)-1], ", ") + " and " + g.binaries[len(g.binaries)-1]
}

// groups returns the groups in build order: the quick builds first, so that
// a first run shows finished steps early.
func groups() []group {
	return []group{
		{
			name:     "etcd",
			module:   "go.etcd.io/etcd/server/v3",
			version:  EtcdVersion,
			binaries: []string{Etcd},
			estimate: "about 30s",
			build:    buildEtcd,
		},
		{
			name:     "kubernetes",
			module:   "k8s.io/kubernetes",
			version:  KubernetesVersion,
			binaries: []string{KubeAPIServer, KubeControllerManager, KubeScheduler, Kubectl},
			estimate: "about 9 minutes",
			build:    buildKubernetes,
		},
		{
			name:     "kwok",
			module:   "sigs.k8s.io/kwok",
			version:  KwokVersion,
			binaries: []string{Kwok},
			estimate: "about 2 minutes",
			build:    buildKwok,
		},
		{
			name:     "registry",
			module:   "github.com/distribution/distribution/v3",
			version:  RegistryVersion,
			binaries: []string{Registry},
			estimate: "about 2 minutes",
			build:    buildRegistry,
		},
	}
}

func buildRegistry(ctx context.Context, b *builder, out string) error {
	mod, err := b.newModule(ctx, "github.com/distribution/distribution/v3", RegistryVersion, nil)
	if err != nil {
		return err
	}
	defer mod.remove()
	return b.goBuild(ctx, mod, "registry", filepath.Join(out, Registry), "", "github.com/distribution/distribution/v3/cmd/registry")
}

func buildEtcd(ctx context.Context, b *builder, out string) error {
	mod, err := b.newModule(ctx, "go.etcd.io/etcd/server/v3", EtcdVersion, nil)
	if err != nil {
		return err
	}
	defer mod.remove()
	// etcd's main package is the root of its server module.
	return b.goBuild(ctx, mod, "etcd", filepath.Join(out, Etcd), "", "go.etcd.io/etcd/server/v3")
}

func buildKubernetes(ctx context.Context, b *builder, out string) error {
	mod, err := b.newModule(ctx, "k8s.io/kubernetes", KubernetesVersion, stagingReplaces)
	if err != nil {
		return err
	}
	defer mod.remove()
	if len(mod.replaces) == 0 {
		return fmt.Errorf("k8s.io/kubernetes@%s has no ./staging replaces in its go.mod; cannot build it outside its repository", KubernetesVersion)
	}

	// Without these, every binary reports v0.0.0-master, and clients
	// such as kubectl warn about the skew.
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	var ldflags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ldflags = append(ldflags,
			"-X "+pkg+".gitVersion="+KubernetesVersion,
			"-X "+pkg+".gitMajor="+major,
			"-X "+pkg+".gitMinor="+minor)
	}
	// One go build for all four shares the compile work of their common
	// packages, which is most of it.
	return b.goBuild(ctx, mod, "kube-apiserver, kube-controller-manager, kube-scheduler and kubectl", out+string(filepath.Separator),
		strings.Join(ldflags, " "),
		"k8s.io/kubernetes/cmd/kube-apiserver",
		"k8s.io/kubernetes/cmd/kube-controller-manager",
		"k8s.io/kubernetes/cmd/kube-scheduler",
		"k8s.io/kubernetes/cmd/kubectl")
}

// stagingReplaces returns the replaces a module that requires
// k8s.io/kubernetes needs. Kubernetes replaces every k8s.io/* staging module
// with a directory of its own repository; those replaces do not apply to a
// module that requires it, so the throwaway module repeats each one,
// pointing at the published copy of that staging module: v1.X.Y of
// Kubernetes is v0.X.Y of its staging modules.
func stagingReplaces(kubernetes *modfile.File) map[string]string {
	version := "v0" + strings.TrimPrefix(KubernetesVersion, "v1")
	r := map[string]string{}
	for _, rep := range kubernetes.Replace {
		if strings.HasPrefix(rep.New.Path, "./staging/") {
			r[rep.Old.Path] = version
		}
	}
	return r
}

// kwokStages are the Stage files, inside the kwok module, that make a fake
// Node Ready and Pods Running, Ready and, when deleted, gone. They are the
// "fast" stages: every transition happens at once.
var kwokStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/pod/fast/*.yaml",
}

func buildKwok(ctx context.Context, b *builder, out string) error {
	mod, err := b.newModule(ctx, "sigs.k8s.io/kwok", KwokVersion, nil)
	if err != nil {
		return err
	}
	defer mod.remove()
	if err := b.goBuild(ctx, mod, "kwok", filepath.Join(out, Kwok), "", "sigs.k8s.io/kwok/cmd/kwok"); err != nil {
		return err
	}

	if err := os.MkdirAll(filepath.Join(out, StagesDir), 0o755); err != nil {
		return err
	}
	copied := 0
	for _, pattern := range kwokStages {
		matches, err := filepath.Glob(filepath.Join(mod.upstreamDir, pattern))
		if err != nil {
			return err
		}
		for _, src := range matches {
			if filepath.Base(src) == "kustomization.yaml" {
				continue
			}
			if err := copyFile(src, filepath.Join(out, StagesDir, filepath.Base(src))); err != nil {
				return err
			}
			copied++
		}
	}
	if copied == 0 {
		return fmt.Errorf("found no kwok stage files in %s", mod.upstreamDir)
	}
	return nil
}

// copyFile copies src to dst with mode 0644; files in the module cache are
// read-only, and the copies must be replaceable by a later build.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
