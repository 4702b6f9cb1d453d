package assets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// manifestName is the file, inside an assets directory, that records what
// Ensure built there.
const manifestName = "manifest.json"

// manifest records, per group, the version built and, per file, its sha256.
// A file whose checksum no longer matches was changed behind Ensure's back
// (a partial copy, a different build) and is rebuilt.
type manifest struct {
	// Versions maps a group name ("kubernetes", "etcd", "kwok") to the
	// version its files were built from.
	Versions map[string]string `json:"versions"`
	// Files maps a path relative to the assets directory to its hex sha256.
	Files map[string]string `json:"files"`
}

func readManifest(dir string) (*manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, err
	}
	m := &manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, manifestName), err)
	}
	if m.Versions == nil {
		m.Versions = map[string]string{}
	}
	if m.Files == nil {
		m.Files = map[string]string{}
	}
	return m, nil
}

// write replaces the manifest atomically, so a reader never sees half of it.
func (m *manifest) write(dir string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".manifest-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, manifestName))
}

// record replaces what the manifest knows about g with files as they are now
// on disk.
func (m *manifest) record(dir string, g group, files []string) error {
	for name := range m.Files {
		if g.owns(name) {
			delete(m.Files, name)
		}
	}
	for _, name := range files {
		sum, err := sha256File(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		m.Files[name] = sum
	}
	m.Versions[g.name] = g.version
	return nil
}

// verify checks that every file of g is present, matches its recorded
// checksum, and, for binaries, reports the expected version when run.
func (m *manifest) verify(ctx context.Context, dir string, g group) error {
	if m.Versions[g.name] != g.version {
		if m.Versions[g.name] == "" {
			return fmt.Errorf("not built yet")
		}
		return fmt.Errorf("built at %s, want %s", m.Versions[g.name], g.version)
	}
	var files []string
	for name := range m.Files {
		if g.owns(name) {
			files = append(files, name)
		}
	}
	for _, bin := range g.binaries {
		if _, ok := m.Files[bin]; !ok {
			return fmt.Errorf("%s is not in the manifest", bin)
		}
	}
	for _, name := range files {
		sum, err := sha256File(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if sum != m.Files[name] {
			return fmt.Errorf("%s does not match the checksum recorded when it was built", name)
		}
	}
	for _, bin := range g.binaries {
		if err := probeVersion(ctx, filepath.Join(dir, bin)); err != nil {
			return err
		}
	}
	return nil
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// versionProbes says how to ask each binary its version and what the answer
// must contain. An unstamped Kubernetes build answers "v0.0.0-master", which
// this catches.
var versionProbes = map[string]struct {
	args []string
	want string
}{
	Etcd:                  {[]string{"--version"}, "etcd Version: " + strings.TrimPrefix(EtcdVersion, "v")},
	KubeAPIServer:         {[]string{"--version"}, "Kubernetes " + KubernetesVersion},
	KubeControllerManager: {[]string{"--version"}, "Kubernetes " + KubernetesVersion},
	KubeScheduler:         {[]string{"--version"}, "Kubernetes " + KubernetesVersion},
	Kubectl:               {[]string{"version", "--client"}, "Client Version: " + KubernetesVersion},
	Kwok:                  {[]string{"--version"}, KwokVersion},
	Registry:              {[]string{"--version"}, "distribution/v3 " + RegistryVersion},
}

func probeVersion(ctx context.Context, path string) error {
	probe, ok := versionProbes[filepath.Base(path)]
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, probe.args...)
	// Keep the probe from reading a kubeconfig or a kwok config of the user.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+os.DevNull, "KWOK_WORKDIR="+os.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s failed: %v: %s", filepath.Base(path), strings.Join(probe.args, " "), err, bytes.TrimSpace(out))
	}
	if !bytes.Contains(out, []byte(probe.want)) {
		return fmt.Errorf("%s %s printed %q, want it to contain %q",
			filepath.Base(path), strings.Join(probe.args, " "), firstLine(out), probe.want)
	}
	return nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}
