package kro

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/internal/diag"
)

// File is one file to convert.
type File struct {
	// Name names the file in positions, as the user gave it; the
	// Blueprints say they were imported from its base name.
	Name string
	Data []byte
}

// Blueprint is one converted ResourceGraphDefinition.
type Blueprint struct {
	// Name is the Blueprint's metadata.name: the ResourceGraphDefinition's,
	// made a DNS-1123 label when it is not one.
	Name string
	// RGD is the ResourceGraphDefinition's name, and Pos where it is.
	RGD string
	Pos diag.Pos
	// GroupVersionKind is the kind of the custom resources it reconciles.
	GroupVersionKind schema.GroupVersionKind
	// Path is where the Blueprint goes, relative to the output directory:
	// blueprint.yaml when there is one, <Name>/blueprint.yaml for each of
	// several.
	Path string
	// Uses are the names of the Blueprints of the same import whose custom
	// resources this one creates.
	Uses []string
	// CRDs are the names of the CRDs of the import whose kinds its
	// children are.
	CRDs []string
	// Children is how many children it has.
	Children int
	// YAML is the Blueprint file.
	YAML []byte
}

// Note is a change the conversion made that keeps the meaning, such as a
// name made a DNS-1123 label, or something it left out that is not part of
// what a ResourceGraphDefinition says (the cluster's status of it).
type Note struct {
	Pos diag.Pos
	Msg string
}

func (n Note) String() string { return n.Pos.String() + ": note: " + n.Msg }

// Result is what a conversion made.
type Result struct {
	// Blueprints are the converted ResourceGraphDefinitions, in the order
	// of the files and of the documents in each.
	Blueprints []*Blueprint
	// CRDs are the CustomResourceDefinitions given that a Blueprint uses,
	// in the order given.
	CRDs []*CRD
	// Notes are the changes that keep the meaning, sorted by position.
	Notes []Note
}

// APIVersion is the only apiVersion of a ResourceGraphDefinition.
const APIVersion = "kro.run/v1alpha1"

// DefaultGroup is the API group kro gives an RGD's kind when its schema
// names none.
const DefaultGroup = "kro.run"

// Convert converts every ResourceGraphDefinition in files, which may hold
// several YAML documents each. It returns every Blueprint it made, and an
// error holding a diagnostic (see diag.All) for every construct it could not
// convert; the Blueprints hold the rest. The error is nil when everything
// was converted.
func Convert(files []File) (*Result, error) {
	var diags diag.List
	res := &Result{}
	var rgds []*rgd
	var crds []*CRD
	for _, f := range files {
		r := newReader(f, &diags, &res.Notes)
		rgds = append(rgds, r.file()...)
		crds = append(crds, r.crds...)
	}
	if len(rgds) == 0 && len(diags) == 0 {
		pos := diag.Pos{}
		if len(files) > 0 {
			pos = diag.Pos{File: files[0].Name, Line: 1, Col: 1}
		}
		diags.Add(pos, diag.MissingField, "give a file that holds a kind: ResourceGraphDefinition", "no ResourceGraphDefinition to convert")
	}
	used := link(rgds, crds, &diags, &res.Notes)
	for _, g := range rgds {
		g.bp.YAML = g.encode(rgds)
		res.Blueprints = append(res.Blueprints, g.bp)
	}
	for _, c := range used {
		c.YAML = c.encode()
		res.CRDs = append(res.CRDs, c)
	}
	sortNotes(res.Notes)
	return res, diags.Err()
}

// link names every Blueprint uniquely, decides where each goes, and
// resolves every child's kind: a built-in kind, or the kind of another
// ResourceGraphDefinition of the import, which the Blueprint then uses,
// or the kind of a CRD given, which the Blueprint then uses. Any other
// kind is reported: a Blueprint types its children by one of those. It
// returns the CRDs used, in the order given, and notes the others.
func link(rgds []*rgd, crds []*CRD, diags *diag.List, notes *[]Note) []*CRD {
	byKind := map[schema.GroupKind]*rgd{}
	taken := map[string]bool{}
	for _, g := range rgds {
		g.bp.Name = uniqueName(g, taken)
		taken[g.bp.Name] = true
		if g.renamed = g.bp.Name != g.bp.RGD && g.bp.RGD != ""; g.renamed {
			*notes = append(*notes, Note{Pos: g.bp.Pos, Msg: fmt.Sprintf("the Blueprint is named %s: %s", g.bp.Name, whyRenamed(g.bp.RGD))})
		}
		g.bp.Path = "blueprint.yaml"
		if len(rgds) > 1 {
			g.bp.Path = g.bp.Name + "/blueprint.yaml"
		}
		gk := g.bp.GroupVersionKind.GroupKind()
		if gk.Kind == "" {
			continue
		}
		if first, dup := byKind[gk]; dup {
			diags.Add(g.kindPos, diag.DuplicateName, "import each kind once", "kind %s is also the kind of ResourceGraphDefinition %s at %s", formatGK(gk), first.bp.RGD, first.bp.Pos)
			continue
		}
		byKind[gk] = g
	}
	crdByKind := map[schema.GroupKind]*CRD{}
	for _, c := range crds {
		switch first, dup := crdByKind[c.GroupKind]; {
		case dup:
			diags.Add(c.pos, diag.DuplicateName, "give each CRD once", "CRD %s defines %s, as CRD %s at %s does", c.Name, formatGK(c.GroupKind), first.Name, first.pos)
		case byKind[c.GroupKind] != nil:
			*notes = append(*notes, Note{Pos: c.pos, Msg: fmt.Sprintf("%s is the kind of ResourceGraphDefinition %s, whose schema makes its CRD", formatGK(c.GroupKind), byKind[c.GroupKind].bp.RGD)})
		default:
			crdByKind[c.GroupKind] = c
		}
	}
	for _, g := range rgds {
		for _, c := range g.children {
			if c.gvk.Kind == "" {
				continue // not literal: the compiler says what is wrong
			}
			if other, ok := byKind[c.gvk.GroupKind()]; ok {
				if v := other.bp.GroupVersionKind.Version; v != c.gvk.Version {
					diags.Add(c.kindPos, diag.InvalidValue, "use apiVersion "+other.bp.GroupVersionKind.GroupVersion().String(), "%s is served as version %s by ResourceGraphDefinition %s, not %s", c.gvk.Kind, v, other.bp.RGD, c.gvk.Version)
				}
				if other != g && !slices.Contains(g.bp.Uses, other.bp.Name) {
					g.bp.Uses = append(g.bp.Uses, other.bp.Name)
				}
				continue
			}
			if release, removed := builtin.Removed(c.gvk); removed {
				diags.Add(c.kindPos, diag.UnknownKind, unknownKindHint(c.gvk),
					"%s %s was removed in Kubernetes %s: no API server serves it", c.gvk.GroupVersion(), c.gvk.Kind, release)
				continue
			}
			if builtin.Scheme.Recognizes(c.gvk) {
				if rule, ok := builtin.Readiness(c.gvk.GroupKind()); ok {
					c.keepReadiness(rule.Waits, notes)
				}
				continue
			}
			if linkCRD(g, c, crdByKind, diags) {
				if crd := crdByKind[c.gvk.GroupKind()]; crd.conditions[c.gvk.Version] {
					c.keepReadiness("until its status has the condition Ready=True", notes)
				}
				continue
			}
			diags.Add(c.kindPos, diag.UnknownKind, unknownKindHint(c.gvk),
				"%s %s is neither built into Kubernetes, nor the kind of a ResourceGraphDefinition or CustomResourceDefinition of this import", c.gvk.GroupVersion(), c.gvk.Kind)
		}
	}
	var used []*CRD
	for _, c := range crds {
		switch {
		case c.used:
			used = append(used, c)
		case crdByKind[c.GroupKind] == c:
			*notes = append(*notes, Note{Pos: c.pos, Msg: fmt.Sprintf("no ResourceGraphDefinition of this import creates or reads %s; CRD %s is not copied", formatGK(c.GroupKind), c.Name)})
		}
	}
	return used
}

// uniqueName is the Blueprint name of g: its RGD's name when that is a
// DNS-1123 label, else the name's first label (webapp for webapp.kro.run),
// else the name with what a label cannot hold replaced; a number is added
// when another Blueprint of the import has the name already.
func uniqueName(g *rgd, taken map[string]bool) string {
	candidates := []string{g.bp.RGD}
	if first, _, ok := strings.Cut(g.bp.RGD, "."); ok {
		candidates = append(candidates, first)
	}
	candidates = append(candidates, sanitize(g.bp.RGD))
	for _, c := range candidates {
		if len(validation.IsDNS1123Label(c)) == 0 && !taken[c] {
			return c
		}
	}
	base := candidates[len(candidates)-1]
	for i := 2; ; i++ {
		s := strconv.Itoa(i)
		c := base
		if len(c)+1+len(s) > validation.DNS1123LabelMaxLength {
			c = c[:validation.DNS1123LabelMaxLength-1-len(s)]
		}
		if c = c + "-" + s; !taken[c] {
			return c
		}
	}
}

func whyRenamed(name string) string {
	if len(validation.IsDNS1123Label(name)) > 0 {
		return fmt.Sprintf("a Blueprint's name is a DNS-1123 label, and %q is not one", name)
	}
	return fmt.Sprintf("another Blueprint of this import is named %s", name)
}

// sanitize makes s a DNS-1123 label: lower case, every other character
// than a letter or digit a '-', no '-' at either end, at most 63
// characters.
func sanitize(s string) string {
	b := []byte{}
	for _, c := range []byte(s) {
		switch {
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		case len(b) > 0 && b[len(b)-1] != '-':
			b = append(b, '-')
		}
	}
	if len(b) > validation.DNS1123LabelMaxLength {
		b = b[:validation.DNS1123LabelMaxLength]
	}
	for len(b) > 0 && b[len(b)-1] == '-' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "imported"
	}
	return string(b)
}

func formatGK(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// describeRoot names what a document is when it is not a
// ResourceGraphDefinition, for messages.
func describeRoot(apiVersion, kind string) string {
	switch {
	case kind != "" && apiVersion != "":
		return fmt.Sprintf("kind %s (%s)", kind, apiVersion)
	case kind != "":
		return "kind " + kind
	}
	return "no Kubernetes object"
}
