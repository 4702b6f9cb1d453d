package load

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

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

// Opener is implemented by Files that keep other Blueprints their own way,
// as ConfigMaps do (one a ConfigMap). Files without it open a Blueprint as
// any other file, its own files read from its directory.
type Opener interface {
	// Open returns the Blueprint at name (a path the Blueprint writes,
	// relative to its directory). A missing one is an error for which
	// errors.Is(err, fs.ErrNotExist) holds.
	Open(name string) (*Source, error)
}

// Open returns another Blueprint s names (uses: blueprint:), by the path s
// writes for it: its Name is what diagnostics call it, and the files it
// names are read from its own directory.
func (s *Source) Open(name string) (*Source, error) {
	if o, ok := s.Files.(Opener); ok {
		return o.Open(name)
	}
	data, err := s.Files.ReadFile(name)
	if err != nil {
		return nil, err
	}
	dir := path.Dir(filepath.ToSlash(name))
	return &Source{Name: s.Files.Path(name), Data: data, Files: subFiles{parent: s.Files, dir: dir}}, nil
}

// subFiles are the files of a directory below (or beside) a Blueprint's,
// read through the Blueprint's own Files.
type subFiles struct {
	parent Files
	dir    string
}

func (f subFiles) ReadFile(name string) ([]byte, error) { return f.parent.ReadFile(f.join(name)) }
func (f subFiles) Path(name string) string              { return f.parent.Path(f.join(name)) }

func (f subFiles) join(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return path.Join(f.dir, filepath.ToSlash(name))
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

// ConfigMap reads the Blueprint a ConfigMap holds under KeyBlueprint. A
// Blueprint it uses cannot be read: ConfigMaps.Load reads those.
func ConfigMap(cm *corev1.ConfigMap) (*Source, error) { return ConfigMaps{}.Load(cm) }

// ConfigMaps reads Blueprints kept in ConfigMaps, each in its own. A
// ConfigMap is flat, so a Blueprint another one uses (uses: blueprint:
// database/blueprint.yaml) is kept in a ConfigMap of its own, in the same
// namespace, named after its directory (database), or after the file when
// it is not called blueprint.yaml (db.yaml: db).
type ConfigMaps struct {
	// Get reads a ConfigMap: the one holding a Blueprint that another
	// uses. It returns nil and no error when there is none. Nil: such a
	// Blueprint cannot be read.
	Get func(namespace, name string) (*corev1.ConfigMap, error)
}

// Load reads the Blueprint a ConfigMap holds under KeyBlueprint.
func (c ConfigMaps) Load(cm *corev1.ConfigMap) (*Source, error) {
	dir := path.Join("configmap", cm.Namespace, cm.Name)
	src, ok := cm.Data[KeyBlueprint]
	if !ok {
		var l diag.List
		l.Add(diag.Pos{File: dir}, diag.MissingField, "put the Blueprint under the key "+KeyBlueprint, "the ConfigMap has no %q key", KeyBlueprint)
		return nil, l.Err()
	}
	return &Source{Name: path.Join(dir, KeyBlueprint), Data: []byte(src), Files: configMapFiles{cm: cm, dir: dir, get: c.Get}}, nil
}

// UsedConfigMap names the ConfigMap that keeps the Blueprint another one
// uses by the path name: its directory, or its file without the extension
// when that is not blueprint.yaml.
func UsedConfigMap(name string) string {
	name = path.Clean(filepath.ToSlash(name))
	if base := path.Base(name); base != KeyBlueprint {
		return strings.TrimSuffix(base, path.Ext(base))
	}
	return path.Base(path.Dir(name))
}

// configMapFiles are a ConfigMap's other keys. A ConfigMap is flat: crd.file:
// manifests/crd.yaml is the key crd.yaml.
type configMapFiles struct {
	cm  *corev1.ConfigMap
	dir string
	get func(namespace, name string) (*corev1.ConfigMap, error)
}

func (f configMapFiles) ReadFile(name string) ([]byte, error) {
	if v, ok := f.cm.Data[path.Base(name)]; ok {
		return []byte(v), nil
	}
	return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
}

func (f configMapFiles) Path(name string) string { return path.Join(f.dir, path.Base(name)) }

// Open reads a used Blueprint from its own ConfigMap (see ConfigMaps),
// which must be labelled as one, so that the runtime runs it too.
func (f configMapFiles) Open(name string) (*Source, error) {
	cmName := UsedConfigMap(name)
	if cmName == "" || cmName == "." || cmName == ".." || cmName == "/" {
		return nil, fmt.Errorf("in a ConfigMap, a used Blueprint is kept in its own ConfigMap, named after its directory or file; %q names none", name)
	}
	if f.get == nil {
		return nil, fmt.Errorf("the used Blueprint is kept in the ConfigMap %s/%s, which this reader cannot read", f.cm.Namespace, cmName)
	}
	other, err := f.get(f.cm.Namespace, cmName)
	if err != nil {
		return nil, fmt.Errorf("the used Blueprint is kept in the ConfigMap %s/%s: %w", f.cm.Namespace, cmName, err)
	}
	if other == nil {
		return nil, notExist(fmt.Sprintf("the used Blueprint is kept in the ConfigMap %s/%s, which does not exist: create it with the Blueprint and its CRD, labelled %s=%s", f.cm.Namespace, cmName, LabelRole, RoleBlueprint))
	}
	if other.Labels[LabelRole] != RoleBlueprint {
		return nil, fmt.Errorf("the ConfigMap %s/%s keeps the used Blueprint but is not labelled %s=%s, so the runtime does not run it: label it", other.Namespace, other.Name, LabelRole, RoleBlueprint)
	}
	return ConfigMaps{Get: f.get}.Load(other)
}

// notExist is a missing file that is not a file: errors.Is(err,
// fs.ErrNotExist) holds, and its text says what is missing.
type notExist string

func (e notExist) Error() string        { return string(e) }
func (e notExist) Is(target error) bool { return target == fs.ErrNotExist }

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
