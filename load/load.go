package load

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/inputfile"
)

// Source is one Blueprint, ready for the compiler.
type Source struct {
	// Name is the Blueprint's name in diagnostics: its path as the user
	// gave it, or configmap/<namespace>/<name>/blueprint.yaml.
	Name string
	// Data is the Blueprint's YAML.
	Data []byte
	// Files are the files the Blueprint names.
	Files Files
}

// Files reads the files a Blueprint names, by the path it writes for them
// (relative to the Blueprint's directory).
type Files interface {
	// ReadFile returns the file's content; a missing file is an error
	// for which errors.Is(err, fs.ErrNotExist) holds.
	ReadFile(name string) ([]byte, error)
	// Path names the file in diagnostics.
	Path(name string) string
}

// DefaultFile is the Blueprint a directory holds.
const DefaultFile = "blueprint.yaml"

// File reads the Blueprint at path; the files it names are read from its
// directory. A file that cannot be read is one diagnostic naming it.
func File(path string) (*Source, error) {
	data, err := inputfile.Read(path)
	if err != nil {
		hint := ""
		if errors.Is(err, fs.ErrNotExist) {
			hint = "run inrun in a directory with a " + DefaultFile + ", pass its path, or create one with inrun init"
		}
		var l diag.List
		l.Add(diag.Pos{File: path}, diag.UnreadableFile, hint, "cannot read Blueprint: %s", pathErrorText(err))
		return nil, l.Err()
	}
	return &Source{Name: path, Data: data, Files: Dir(filepath.Dir(path))}, nil
}

// Dir is the files of a directory on disk. A name is relative to it
// unless absolute.
type Dir string

// ReadFile reads name from the directory.
func (d Dir) ReadFile(name string) ([]byte, error) { return inputfile.Read(d.Path(name)) }

// Path joins name to the directory.
func (d Dir) Path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(string(d), filepath.FromSlash(name))
}

// FS reads the Blueprint name from fsys, as go:embed keeps the packs; the
// files it names are read from name's directory in fsys.
func FS(fsys fs.FS, name string) (*Source, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		var l diag.List
		l.Add(diag.Pos{File: name}, diag.UnreadableFile, "", "cannot read Blueprint: %s", pathErrorText(err))
		return nil, l.Err()
	}
	return &Source{Name: name, Data: data, Files: fsFiles{fsys: fsys, dir: path.Dir(name)}}, nil
}

type fsFiles struct {
	fsys fs.FS
	dir  string
}

func (f fsFiles) ReadFile(name string) ([]byte, error) { return fs.ReadFile(f.fsys, f.Path(name)) }
func (f fsFiles) Path(name string) string              { return path.Join(f.dir, name) }

// Blueprints stored in the cluster are ConfigMaps: Inrun installs no CRDs
// of its own.
const (
	// LabelRole marks a ConfigMap as holding a Blueprint:
	// inrun.dev/role=blueprint.
	LabelRole = "inrun.dev/role"
	// RoleBlueprint is LabelRole's value.
	RoleBlueprint = "blueprint"
	// KeyBlueprint is the data key holding the Blueprint. Other keys are
	// files the Blueprint names, by base name: crd.file:
	// manifests/crd.yaml reads the key crd.yaml.
	KeyBlueprint = "blueprint.yaml"
)

// ConfigMapSelector selects the ConfigMaps that hold Blueprints.
func ConfigMapSelector() map[string]string { return map[string]string{LabelRole: RoleBlueprint} }

// ConfigMap reads the Blueprint a ConfigMap holds under KeyBlueprint.
func ConfigMap(cm *corev1.ConfigMap) (*Source, error) {
	dir := path.Join("configmap", cm.Namespace, cm.Name)
	src, ok := cm.Data[KeyBlueprint]
	if !ok {
		var l diag.List
		l.Add(diag.Pos{File: dir}, diag.MissingField, "put the Blueprint under the key "+KeyBlueprint, "the ConfigMap has no %q key", KeyBlueprint)
		return nil, l.Err()
	}
	return &Source{Name: path.Join(dir, KeyBlueprint), Data: []byte(src), Files: configMapFiles{cm: cm, dir: dir}}, nil
}

// configMapFiles are a ConfigMap's other keys. A ConfigMap is flat: crd.file:
// manifests/crd.yaml is the key crd.yaml.
type configMapFiles struct {
	cm  *corev1.ConfigMap
	dir string
}

func (f configMapFiles) ReadFile(name string) ([]byte, error) {
	if v, ok := f.cm.Data[path.Base(name)]; ok {
		return []byte(v), nil
	}
	return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
}

func (f configMapFiles) Path(name string) string { return path.Join(f.dir, path.Base(name)) }

// pathErrorText is err's cause without the path, which the diagnostic
// already names.
func pathErrorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Bytes is a Blueprint given as data, named name in diagnostics; the files
// it names are read from name's directory on disk. Tests and standard input
// use it.
func Bytes(name string, data []byte) *Source {
	return &Source{Name: name, Data: data, Files: Dir(filepath.Dir(name))}
}
