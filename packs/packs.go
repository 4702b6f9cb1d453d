package packs

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// The "all:" prefix keeps files that a plain pattern would skip, so a pack
// that gains a dotfile (a .gitignore, say) copies it too.
//
//go:embed all:website all:declarative all:remote all:intent all:registry all:typed all:migration all:workflow
var content embed.FS

// Default is the pack `inrun init` copies when no pack is named.
const Default = "website"

// manifestFile is the pack's own metadata; it is read by List and not copied.
const manifestFile = "pack.yaml"

// blueprintFile marks a directory as an example.
const blueprintFile = "blueprint.yaml"

// ErrNotEmpty is returned, wrapped, by Copy when the target directory holds
// files and CopyOptions.Force is not set.
var ErrNotEmpty = errors.New("directory is not empty")

// Pack describes one embedded pack.
type Pack struct {
	// Name is what `inrun init --pack` takes.
	Name string `json:"name"`
	// Description is one line, shown by `inrun init --list`.
	Description string `json:"description"`
	// Next are the commands `inrun init` suggests running first in an
	// example, each with its comment; empty for the usual simulate and
	// --dev.
	Next []string `json:"next,omitempty"`
}

// CopyOptions tunes Copy.
type CopyOptions struct {
	// Force writes into a directory that already holds files. Files of the
	// pack replace files of the same name; other files are left alone.
	Force bool
}

// List returns every embedded pack: Default first, then the others by name.
func List() []Pack {
	return slices.Clone(loadPacks())
}

// Examples returns the directories of the named pack that hold a
// blueprint.yaml, as slash-separated paths relative to the pack's root ("."
// for the root itself), sorted. A directory whose Blueprint another
// example uses (uses: blueprint:) is part of that example, not one of its
// own. It returns nil for an unknown pack.
func Examples(name string) []string {
	if !known(name) {
		return nil
	}
	var dirs []string
	used := map[string]bool{}
	// The embedded tree cannot fail to walk; an error here is a broken build.
	err := fs.WalkDir(content, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == blueprintFile {
			rel := strings.TrimPrefix(path.Dir(p), name)
			rel = Target(strings.TrimPrefix(rel, "/"))
			if rel == "" {
				rel = "."
			}
			dirs = append(dirs, rel)
			for _, u := range usedBlueprints(p) {
				used[path.Join(rel, path.Dir(u))] = true
			}
		}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("packs: walking embedded pack %s: %v", name, err))
	}
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return used[d] })
	slices.Sort(dirs)
	return dirs
}

// GoModule reports whether the named pack's example is a Go module of its
// own, whose Blueprint names Go code: a plain inrun cannot run it; it runs
// on the inrun its Makefile builds (make registry, make build).
func GoModule(pack, example string) bool {
	dir := pack
	if example != "." {
		for _, rel := range storedFiles(pack) {
			if path.Base(rel) == "_go.mod" && Target(path.Dir(rel)) == example {
				return true
			}
		}
		return false
	}
	_, err := fs.Stat(content, dir+"/_go.mod")
	return err == nil
}

// usedBlueprints returns the paths the Blueprint at p names in uses:
// blueprint:, relative to its directory. It reads nothing else: the
// compiler checks the rest.
func usedBlueprints(p string) []string {
	data, err := content.ReadFile(p)
	if err != nil {
		panic(fmt.Sprintf("packs: reading %s: %v", p, err))
	}
	var bp struct {
		Uses []struct {
			Blueprint string `json:"blueprint"`
		} `json:"uses"`
	}
	if err := yaml.Unmarshal(data, &bp); err != nil {
		return nil // not this function's to report: the pack's tests compile it
	}
	var out []string
	for _, u := range bp.Uses {
		if u.Blueprint != "" {
			out = append(out, u.Blueprint)
		}
	}
	return out
}

// Files returns the files Copy writes for the named pack, as slash-separated
// paths relative to the target directory, sorted. It returns nil for an
// unknown pack.
func Files(name string) []string {
	stored := storedFiles(name)
	files := make([]string, len(stored))
	for i, rel := range stored {
		files[i] = Target(rel)
	}
	slices.Sort(files)
	return files
}

// Target is where Copy writes the pack file stored at rel: rel without the
// leading '_' of any of its path elements. A Go module in a pack is stored
// so (_hooks/_go.mod for hooks/go.mod): Go's tools skip a directory whose
// name starts with '_', so its packages are not Inrun's, and go:embed
// cannot embed a directory that holds a go.mod.
func Target(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if len(p) > 1 && p[0] == '_' {
			parts[i] = p[1:]
		}
	}
	return strings.Join(parts, "/")
}

// storedFiles returns the named pack's files as they are stored, but
// pack.yaml, sorted; nil for an unknown pack.
func storedFiles(name string) []string {
	if !known(name) {
		return nil
	}
	var files []string
	err := fs.WalkDir(content, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, name), "/")
		if !d.IsDir() && rel != manifestFile {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("packs: walking embedded pack %s: %v", name, err))
	}
	slices.Sort(files)
	return files
}

// Copy writes the named pack's files, all but pack.yaml, into dir, creating
// dir if it does not exist. It refuses a dir that holds anything unless
// opts.Force is set, so that a typo in a path cannot scatter a pack over an
// existing project.
func Copy(name, dir string, opts CopyOptions) error {
	if !known(name) {
		return fmt.Errorf("unknown pack %q; known packs: %s", name, strings.Join(names(), ", "))
	}
	if err := prepareDir(dir, opts.Force); err != nil {
		return err
	}
	for _, rel := range storedFiles(name) {
		data, err := content.ReadFile(name + "/" + rel)
		if err != nil {
			return fmt.Errorf("reading pack %s: %w", name, err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(Target(rel)))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// prepareDir makes sure dir exists and is a directory that Copy may write
// into.
func prepareDir(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		if fi, statErr := os.Stat(dir); statErr == nil && !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory", dir)
		}
		return err
	case len(entries) > 0 && !force:
		return fmt.Errorf("%s: %w; pass --force to write into it, or choose an empty directory", dir, ErrNotEmpty)
	}
	return nil
}

func known(name string) bool {
	return slices.Contains(names(), name)
}

func names() []string {
	var ns []string
	for _, p := range loadPacks() {
		ns = append(ns, p.Name)
	}
	return ns
}

// loadPacks reads every pack.yaml once. The content is compiled in, so a
// malformed pack is a build defect, caught by this package's tests, and
// reported by a panic rather than an error every caller would have to handle.
var loadPacks = sync.OnceValue(func() []Pack {
	entries, err := content.ReadDir(".")
	if err != nil {
		panic(fmt.Sprintf("packs: reading embedded packs: %v", err))
	}
	var packs []Pack
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := content.ReadFile(e.Name() + "/" + manifestFile)
		if err != nil {
			panic(fmt.Sprintf("packs: pack %s has no %s: %v", e.Name(), manifestFile, err))
		}
		var p Pack
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			panic(fmt.Sprintf("packs: %s/%s: %v", e.Name(), manifestFile, err))
		}
		if p.Name != e.Name() {
			panic(fmt.Sprintf("packs: %s/%s names the pack %q; it must match its directory", e.Name(), manifestFile, p.Name))
		}
		packs = append(packs, p)
	}
	slices.SortFunc(packs, func(a, b Pack) int {
		switch {
		case a.Name == b.Name:
			return 0
		case a.Name == Default:
			return -1
		case b.Name == Default:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return packs
})
