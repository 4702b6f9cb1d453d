package builder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// With is one module to compile in, as --with MODULE[@VERSION][=PATH]
// gives it: a module path, and a version from the module proxy or a local
// directory.
type With struct {
	Module  string
	Version string
	// Dir is the local directory of the module; empty for a version.
	Dir string
}

func (w With) String() string {
	s := w.Module
	if w.Version != "" {
		s += "@" + w.Version
	}
	if w.Dir != "" {
		s += "=" + w.Dir
	}
	return s
}

// ParseWith reads MODULE[@VERSION][=PATH].
func ParseWith(s string) (With, error) {
	var w With
	rest, dir, hasDir := strings.Cut(s, "=")
	if hasDir {
		if dir == "" {
			return w, fmt.Errorf("--with %s: the path after = is empty; write MODULE=../local/dir", s)
		}
		w.Dir = dir
	}
	w.Module, w.Version, _ = strings.Cut(rest, "@")
	if err := module.CheckPath(w.Module); err != nil {
		return w, fmt.Errorf("--with %s: %v; write MODULE[@VERSION][=PATH], such as example.com/webapp@v1.2.0", s, err)
	}
	if w.Version != "" && !semver.IsValid(w.Version) && w.Version != "latest" {
		return w, fmt.Errorf("--with %s: version %q is not a semantic version such as v1.2.0 (or latest)", s, w.Version)
	}
	if w.Dir == "" && w.Version == "" {
		w.Version = "latest"
	}
	return w, nil
}

// GoMod is a module's go.mod, and where it was read from.
type GoMod struct {
	With With
	// File is the go.mod's path, for messages.
	File string
	Data []byte
}

// ReadGoMod reads w's go.mod: from its directory, or through the go
// command (go mod download), which fetches a version from the module
// proxy or the module cache.
func ReadGoMod(ctx context.Context, w With) (*GoMod, error) {
	if w.Dir != "" {
		file := filepath.Join(w.Dir, "go.mod")
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w, err)
		}
		return &GoMod{With: w, File: file, Data: data}, nil
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", w.Module+"@"+w.Version)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	cmd.Dir = os.TempDir() // outside any module, which would constrain it
	out, err := cmd.Output()
	var info struct {
		Version string
		GoMod   string
		Error   string
	}
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || err != nil {
		msg := info.Error
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s: fetching its go.mod: %s", w, msg)
	}
	data, err := os.ReadFile(info.GoMod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w, err)
	}
	w.Version = info.Version
	return &GoMod{With: w, File: info.GoMod, Data: data}, nil
}

// Pinned returns the requirements of inrun's go.mod that every module
// compiled into it must agree with, by module path: controller-runtime
// and the k8s.io modules.
func Pinned(inrunGoMod []byte) (map[string]string, error) {
	f, err := modfile.ParseLax("go.mod", inrunGoMod, nil)
	if err != nil {
		return nil, fmt.Errorf("reading inrun's go.mod: %w", err)
	}
	out := map[string]string{}
	for _, r := range f.Require {
		if r.Mod.Path == "sigs.k8s.io/controller-runtime" || staging(r.Mod.Path, r.Mod.Version) {
			out[r.Mod.Path] = r.Mod.Version
		}
	}
	return out, nil
}

// staging reports whether version of path is that of a Kubernetes staging
// module (k8s.io/api, apimachinery, client-go, ...), whose minor is
// Kubernetes' own: v0.37.2 for Kubernetes 1.37. Other k8s.io modules
// (klog/v2, utils, kube-openapi at v0.0.0 pseudo-versions) keep versions
// of their own, which modules may choose.
func staging(path, version string) bool {
	return strings.HasPrefix(path, "k8s.io/") && semver.Major(version) == "v0" && majorMinor(version) != "v0.0"
}

// majorMinor is v's "v0.25" part.
func majorMinor(v string) string { return semver.MajorMinor(v) }

// CheckVersions reports, for every module, each requirement of a module
// inrun pins (Pinned) at another minor version than inrun's, with both
// versions and the fix; nil when all agree. A Kubernetes staging module
// that inrun does not require itself is held to the minor of k8s.io/api,
// which they share. Every module and every mismatch is reported at once.
func CheckVersions(pins map[string]string, mods []*GoMod) error {
	k8sMinor := majorMinor(pins["k8s.io/api"])
	var errs []error
	for _, m := range mods {
		f, err := modfile.ParseLax(m.File, m.Data, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.With, err))
			continue
		}
		var bad []string
		var fixes []string
		for _, r := range f.Require {
			want, ok := pins[r.Mod.Path]
			wantMinor := majorMinor(want)
			switch {
			case ok:
			case staging(r.Mod.Path, r.Mod.Version) && k8sMinor != "":
				// A staging module inrun does not require: it still
				// comes from inrun's Kubernetes.
				wantMinor = k8sMinor
			default:
				continue
			}
			if majorMinor(r.Mod.Version) == wantMinor {
				continue
			}
			if ok {
				bad = append(bad, fmt.Sprintf("%s %s (inrun has %s)", r.Mod.Path, r.Mod.Version, want))
				fixes = append(fixes, r.Mod.Path+"@"+want)
			} else {
				bad = append(bad, fmt.Sprintf("%s %s (inrun's Kubernetes modules are %s.x)", r.Mod.Path, r.Mod.Version, wantMinor))
				fixes = append(fixes, r.Mod.Path+"@"+wantMinor)
			}
		}
		if len(bad) == 0 {
			continue
		}
		sort.Strings(fixes)
		name := f.Module.Mod.Path
		if name == "" {
			name = m.With.Module
		}
		who := m.With.Module
		if m.With.Version != "" {
			who += "@" + m.With.Version
		}
		errs = append(errs, fmt.Errorf("%s (%s) requires %s: Go would build one version for both, and the difference would show as compile errors in code that is neither yours nor inrun's. Fix: in %s, run go get %s && go mod tidy; or build it into an inrun that has those versions",
			who, m.File, strings.Join(bad, ", "), name, strings.Join(fixes, " ")))
	}
	return errors.Join(errs...)
}
