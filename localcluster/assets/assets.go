package assets

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The versions the assets are built from. They are fixed: the control plane
// flags in package localcluster were measured against exactly these.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.6.16"
	KwokVersion       = "v0.8.0"
	// RegistryVersion is the CNCF Distribution registry's, the OCI
	// registry tests and --dev push patterns to.
	RegistryVersion = "v3.1.2"
)

// The file names of the binaries inside an assets directory. Etcd,
// KubeAPIServer and Kubectl are the names envtest looks for.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kubectl               = "kubectl"
	Kwok                  = "kwok"
	// Registry is the CNCF Distribution registry (cmd/registry); it is
	// not part of the control plane, so Binaries leaves it out.
	Registry = "registry"
)

// StagesDir is the subdirectory of an assets directory that holds the kwok
// Stage files, one --config flag each.
const StagesDir = "kwok-stages"

// EnvDir is the environment variable that, when set, names the assets
// directory instead of the per-version cache directory.
const EnvDir = "INRUN_ASSETS_DIR"

// BuildCommand is the inrun command that builds missing assets; errors
// from Check name it, and the Makefile's "assets" target runs it.
const BuildCommand = "inrun cluster assets"

// Binaries lists every binary an assets directory holds, in build order.
var Binaries = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kubectl, Kwok}

// Tools lists the binaries an assets directory holds beside the control
// plane: the OCI registry the pattern registry's tests run against.
var Tools = []string{Registry}

// Options configures Ensure.
type Options struct {
	// Dir is the assets directory. Defaults to DefaultDir.
	Dir string

	// Progress receives a line per step, a heartbeat while a build runs, and
	// where the binaries are at the end. Nil discards progress.
	Progress io.Writer

	// GoCommand is the go command that builds the binaries. Defaults to "go"
	// found on PATH.
	GoCommand string
}

func (o *Options) setDefaults() error {
	if o.Dir == "" {
		dir, err := DefaultDir()
		if err != nil {
			return err
		}
		o.Dir = dir
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.GoCommand == "" {
		o.GoCommand = "go"
	}
	return nil
}

// VersionTag names one set of versions, and so one cache directory, such as
// "v1.37.2-etcd3.6.16-kwok0.8.0".
func VersionTag() string {
	return KubernetesVersion + "-etcd" + strings.TrimPrefix(EtcdVersion, "v") + "-kwok" + strings.TrimPrefix(KwokVersion, "v")
}

// DefaultDir returns the assets directory used when none is given: the value
// of $INRUN_ASSETS_DIR if set, otherwise inrun/controlplane/<VersionTag> under
// the user's cache directory. The CLI, the Makefile and tests all resolve the
// directory this way, so a build made by one is found by the others.
func DefaultDir() (string, error) {
	if dir := os.Getenv(EnvDir); dir != "" {
		return filepath.Abs(dir)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a cache directory for the control plane assets (set %s): %w", EnvDir, err)
	}
	return filepath.Join(cache, "inrun", "controlplane", VersionTag()), nil
}

// MissingError reports an asset that is absent or unusable. Its message names
// the file and says how to build it.
type MissingError struct {
	// Dir is the assets directory that was checked.
	Dir string
	// Name is the missing file, relative to Dir.
	Name string
	// Reason says what is wrong with it, such as "does not exist".
	Reason string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("control plane asset %s %s in %s; build the assets with `make assets` or `%s` (about 10 minutes the first time)",
		e.Name, e.Reason, e.Dir, BuildCommand)
}

// IsMissing reports whether err, or an error it wraps, is a *MissingError.
func IsMissing(err error) bool {
	var m *MissingError
	return errors.As(err, &m)
}

// Check reports whether dir holds the named assets (every one of Binaries
// and StagesDir when no name is given), without building or running
// anything. It returns a *MissingError for the first that is absent or
// unusable, or for a directory whose manifest records other versions.
//
// Check is cheap enough to call before every cluster start. Ensure does the
// thorough verification of checksums and version output.
func Check(dir string, names ...string) error {
	if len(names) == 0 {
		names = append(append(names, Binaries...), StagesDir)
	}
	// A directory without a manifest is accepted, so that one filled by
	// other means (setup-envtest, say) serves a Minimal cluster.
	if m, err := readManifest(dir); err == nil {
		for _, g := range groups() {
			if v, ok := m.Versions[g.name]; ok && v != g.version {
				return &MissingError{Dir: dir, Name: g.binaries[0], Reason: fmt.Sprintf("was built from %s, not %s", v, g.version)}
			}
		}
	}
	for _, name := range names {
		if name == StagesDir {
			if stages, err := StageFiles(dir); err != nil || len(stages) == 0 {
				return &MissingError{Dir: dir, Name: StagesDir, Reason: "holds no kwok stage files"}
			}
			continue
		}
		if err := checkExecutable(filepath.Join(dir, name)); err != nil {
			return &MissingError{Dir: dir, Name: name, Reason: err.Error()}
		}
	}
	return nil
}

// StageFiles returns the kwok Stage files in dir, sorted by name.
func StageFiles(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, StagesDir, "*.yaml"))
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("does not exist")
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("is not a regular file")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("is not executable")
	}
	return nil
}
