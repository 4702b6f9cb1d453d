package kro

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/inrun/inrun/ir"
)

// encode writes g as a Blueprint file: a comment saying where it comes
// from, then apiVersion, kind, metadata, schema, uses, onReconcile and emit,
// in that order.
func (g *rgd) encode(all []*rgd) []byte {
	doc := mapping()
	add := func(key string, v *yaml.Node, comment string) *yaml.Node {
		k := scalar(key)
		k.HeadComment = comment
		doc.Content = append(doc.Content, k, v)
		return k
	}
	add("apiVersion", scalar(ir.APIVersion), "")
	add("kind", scalar("Blueprint"), "")
	md := mapping(scalar("name"), scalar(g.bp.Name))
	if g.metadata != nil {
		md.Content = append(md.Content, g.metadata.Content...)
	}
	add("metadata", md, g.metadataComment)
	if g.schema != nil {
		add("schema", g.schema, g.schemaComment)
	}
	if len(g.bp.Uses) > 0 || len(g.crds) > 0 {
		uses := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, name := range g.bp.Uses {
			for _, other := range all {
				if other.bp.Name == name {
					rel := "../" + other.bp.Path
					uses.Content = append(uses.Content, mapping(scalar("blueprint"), scalar(rel)))
				}
			}
		}
		for _, u := range g.crds {
			// Paths are relative to the Blueprint's directory.
			rel := path.Join(strings.Repeat("../", strings.Count(g.bp.Path, "/")), u.crd.Path)
			entry := mapping(scalar("crd"), scalar(rel))
			if u.version != "" {
				entry.Content = append(entry.Content, scalar("version"), scalar(u.version))
			}
			uses.Content = append(uses.Content, entry)
		}
		add("uses", uses, usesComment(len(g.bp.Uses) > 0, len(g.crds) > 0))
	}
	if len(g.children) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, c := range g.children {
			seq.Content = append(seq.Content, c.node)
		}
		add("onReconcile", seq, g.resourcesComment)
	}
	if g.status != nil {
		add("emit", mapping(scalar("status"), g.status), g.statusComment)
	}

	header := []string{fmt.Sprintf("# Imported from %s by inrun import kro: the ResourceGraphDefinition %s.", g.source, g.bp.RGD)}
	if g.renamed {
		header = append(header, fmt.Sprintf("# It is named %s: %s.", g.bp.Name, whyRenamed(g.bp.RGD)))
	}
	header = append(header, "# Check it with: inrun check")
	if g.headComment != "" {
		header = append(header, "", g.headComment)
	}
	return encodeDocument(strings.Join(header, "\n"), doc)
}

// encodeDocument writes root as a YAML document under the comment head,
// indented by two.
func encodeDocument(head string, root *yaml.Node) []byte {
	top := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: head, Content: []*yaml.Node{root}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(top); err != nil {
		// Every node was made here or copied from a decoded document.
		panic(fmt.Sprintf("kro: encoding a document: %v", err))
	}
	enc.Close()
	return b.Bytes()
}

// usesComment says what the uses entries are.
func usesComment(blueprints, crds bool) string {
	switch {
	case blueprints && crds:
		return "# The Blueprints whose custom resources this one creates, and the CRDs\n# that type its children of kinds other operators reconcile."
	case crds:
		return "# The CRDs that type its children of kinds other operators reconcile."
	}
	return "# The Blueprints whose custom resources this one creates."
}

// mapping returns a block mapping of the key and value nodes kv.
func mapping(kv ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv}
}

func scalar(s string) *yaml.Node { return scalarTagged(s, "!!str") }

func scalarTagged(s, tag string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}
}

func sortNotes(notes []Note) {
	slices.SortStableFunc(notes, func(a, b Note) int {
		return cmp.Or(
			cmp.Compare(a.Pos.File, b.Pos.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
		)
	})
}

// WriteOptions configure Write.
type WriteOptions struct {
	// Force overwrites files that exist; without it, Write refuses to
	// write anything when one does.
	Force bool
}

// Write writes each Blueprint of res to dir/Path, then each CRD, and
// returns the paths written, in that order. Unless opts.Force, it first
// checks that none of them exists, and writes nothing when one does.
func Write(dir string, res *Result, opts WriteOptions) ([]string, error) {
	type file struct {
		path string
		data []byte
	}
	var files []file
	for _, bp := range res.Blueprints {
		files = append(files, file{bp.Path, bp.YAML})
	}
	for _, c := range res.CRDs {
		files = append(files, file{c.Path, c.YAML})
	}
	var paths []string
	var exist []error
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		paths = append(paths, p)
		if opts.Force {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			exist = append(exist, fmt.Errorf("%s exists; give --force to overwrite it, or -o another directory", p))
		} else if !errors.Is(err, fs.ErrNotExist) {
			exist = append(exist, err)
		}
	}
	if len(exist) > 0 {
		return nil, errors.Join(exist...)
	}
	for i, f := range files {
		if err := os.MkdirAll(filepath.Dir(paths[i]), 0o755); err != nil {
			return paths[:i], err
		}
		if err := os.WriteFile(paths[i], f.data, 0o644); err != nil {
			return paths[:i], err
		}
	}
	return paths, nil
}
