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
	// Reconcilers and Transforms are what its packages registered, by
	// name.
	Reconcilers []Registration
	Transforms  []Registration
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
	add := func(reg Registration, what string) {
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
		if what == Transform {
			m.Transforms = append(m.Transforms, reg)
		} else {
			m.Reconcilers = append(m.Reconcilers, reg)
		}
	}
	for _, reg := range r.Reconcilers() {
		add(reg, Reconciler)
	}
	for _, reg := range r.Transforms() {
		add(reg, Transform)
	}
	out := make([]Module, 0, len(byPath))
	for _, m := range byPath {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
