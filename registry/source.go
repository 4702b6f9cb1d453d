package registry

import (
	"fmt"
	"io/fs"
	"path"
	"runtime/debug"

	"github.com/inrun/inrun/load"
)

// Source is the pattern's Blueprint as the compiler reads it: the files it
// names come from the pattern, and nothing from disk.
func (p *Pattern) Source(ref string) *load.Source {
	return &load.Source{
		Name:  ref + "/" + BlueprintFile,
		Data:  p.Files[BlueprintFile],
		Files: patternFiles{p: p, ref: ref},
	}
}

type patternFiles struct {
	p   *Pattern
	ref string
}

func (f patternFiles) ReadFile(name string) ([]byte, error) {
	data, ok := f.p.Files[path.Clean(name)]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: f.Path(name), Err: fs.ErrNotExist}
	}
	return data, nil
}

func (f patternFiles) Path(name string) string { return f.ref + "/" + path.Clean(name) }

// InrunVersion is the version of this Inrun binary: its module version, or
// for a build from a checkout the commit it was built from.
func InrunVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += "-dirty"
	}
	return fmt.Sprintf("devel+%s", rev)
}
