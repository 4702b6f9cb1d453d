package components

import (
	"runtime/debug"
	"sort"
	"strings"
)

// Module is a Go module compiled into the binary and what its packages
// registered.
type Module struct {
	// Path and Version are the module's, as the binary's build info has
	// them; Version is "(devel)" for the main module and for a module
	// replaced by a local directory, which Replace then names.
	Path    string
	Version string
	// Replace is the directory or module that replaced it, if any.
	Replace string
	// Registrations are what its packages registered, by kind, then by
	// name.
	Registrations []Registration
}

// Modules groups r's registrations by the module of the package that made
// them, as info (debug.ReadBuildInfo) tells the modules apart; sorted by
// path. A package no module of info holds is grouped under its own path
// with version "unknown".
func (r *Registry) Modules(info *debug.BuildInfo) []Module {
	var mods []*debug.Module
	if info != nil {
		mods = append(mods, &info.Main)
		mods = append(mods, info.Deps...)
	}
	byPath := map[string]*Module{}
	add := func(reg Registration) {
		var owner *debug.Module
		for _, m := range mods {
			if (reg.Package == m.Path || strings.HasPrefix(reg.Package, m.Path+"/")) && (owner == nil || len(m.Path) > len(owner.Path)) {
				owner = m
			}
		}
		key, version, replace := reg.Package, "unknown", ""
		if owner != nil {
			key, version = owner.Path, owner.Version
			if owner.Replace != nil {
				replace = owner.Replace.Path
				// A directory's "(devel)" says nothing the path does not.
				if v := owner.Replace.Version; v != "" && v != "(devel)" {
					replace += "@" + v
				}
			}
		}
		m := byPath[key]
		if m == nil {
			m = &Module{Path: key, Version: version, Replace: replace}
			byPath[key] = m
		}
		m.Registrations = append(m.Registrations, reg)
	}
	for _, what := range kinds {
		for _, reg := range r.List(what) {
			add(reg)
		}
	}
	out := make([]Module, 0, len(byPath))
	for _, m := range byPath {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
