package kro

import (
	"fmt"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/builtin"
	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/yamlpos"
	"github.com/inrun/inrun/simpleschema"
)

// kro types the resources of kinds another operator reconciles (an ACK
// VPC, a cert-manager Certificate) by the CRDs installed in the cluster. A
// Blueprint types them offline, by the CRD manifest its uses: crd entry
// names. So an import takes CRD manifests beside the RGDs, copies each one
// a Blueprint creates or reads into crds/, and names it in that
// Blueprint's uses.

// CRDAPIVersion is the apiVersion of the CustomResourceDefinitions an
// import reads.
const CRDAPIVersion = "apiextensions.k8s.io/v1"

// CRD is a CustomResourceDefinition manifest given to the import, copied
// next to the Blueprints whose children are of its kind.
type CRD struct {
	// Name is the CRD's metadata.name, <plural>.<group>.
	Name string
	// GroupKind is the kind it defines.
	GroupKind schema.GroupKind
	// Path is where it goes, relative to the output directory:
	// crds/<Name>.yaml.
	Path string
	// YAML is the manifest, as given, under a comment saying where it
	// comes from.
	YAML []byte

	pos    diag.Pos
	source string
	// head is the comment above it; node the mapping copied.
	head    string
	node    *yaml.Node
	served  []string
	storage string
	used    bool
	// conditions says, by version, that the status has conditions: the
	// runtime then waits for a Ready one (ir.Use.ReadyCondition).
	conditions map[string]bool
}

// crd reads a CustomResourceDefinition, root with the comment head above
// it: enough of it to know its kind and versions, the compiler checks the
// rest when it compiles a Blueprint that uses it. What the cluster adds
// (status, uid, resourceVersion, managedFields, kubectl's last-applied
// annotation) is left out of the copy, with a note.
func (r *reader) crd(root *yaml.Node, head string, top *yamlpos.Map) *CRD {
	c := &CRD{pos: r.Pos(root), source: r.base, head: joinComments(head, root.HeadComment)}
	md := r.Map(top.Get("metadata"), "metadata")
	name, _ := r.Required(md, "name", "add metadata.name, <plural>.<group>")
	c.Name = name
	spec := r.Map(top.Get("spec"), "spec")
	if spec == nil {
		return nil
	}
	if !spec.Has("names") {
		r.Errorf(spec.Node, diag.MissingField, "add spec.names.kind", "spec.names is required")
	}
	group, _ := r.Required(spec, "group", "add spec.group, the API group of the kind")
	names := r.Map(spec.Get("names"), "spec.names")
	kind, _ := r.Required(names, "kind", "add spec.names.kind")
	c.GroupKind = schema.GroupKind{Group: group, Kind: kind}
	versions := r.List(spec.Get("versions"), "spec.versions")
	if len(versions) == 0 {
		r.Errorf(spec.Node, diag.MissingField, "add spec.versions, each with name, served and storage", "spec.versions is required")
	}
	for i, v := range versions {
		vm := r.Map(v, fmt.Sprintf("spec.versions[%d]", i))
		vname, _ := r.String(vm, "name", true)
		if served, ok := r.Bool(vm.Get("served"), vm.Path+".served"); ok && served {
			c.served = append(c.served, vname)
		}
		if storage, ok := r.Bool(vm.Get("storage"), vm.Path+".storage"); ok && storage {
			c.storage = vname
		}
		if vm == nil {
			continue
		}
		conds := field(field(field(field(field(field(vm.Node, "schema"), "openAPIV3Schema"), "properties"), "status"), "properties"), "conditions")
		if t := field(conds, "type"); t != nil && t.Value == "array" {
			if c.conditions == nil {
				c.conditions = map[string]bool{}
			}
			c.conditions[vname] = true
		}
	}
	if name == "" || group == "" || kind == "" {
		return nil
	}
	c.Path = "crds/" + sanitizeFileName(name) + ".yaml"

	// The copy: apiVersion, kind, metadata's name, labels and annotations,
	// and spec.
	c.node = mapping()
	var dropped []string
	for _, k := range top.Order {
		switch k {
		case "apiVersion", "kind", "spec":
			c.node.Content = append(c.node.Content, top.KeyNode(k), top.Get(k))
		case "metadata":
			kept := mapping()
			for _, mk := range md.Order {
				v := md.Get(mk)
				switch mk {
				case "name", "labels":
				case "annotations":
					v = r.dropLastApplied(r.copy(v, "metadata.annotations", false), v, "CRD")
					if v.Kind == yaml.MappingNode && len(v.Content) == 0 {
						continue
					}
				default:
					dropped = append(dropped, "metadata."+mk)
					continue
				}
				kept.Content = append(kept.Content, md.KeyNode(mk), v)
			}
			c.node.Content = append(c.node.Content, top.KeyNode(k), kept)
		default:
			dropped = append(dropped, k)
		}
	}
	if len(dropped) > 0 {
		r.note(root, "%s %s the cluster's record of CRD %s, not part of it; left out of the copy", strings.Join(dropped, ", "), isOrAre(len(dropped)), name)
	}
	return c
}

func isOrAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// sanitizeFileName keeps the letters, digits, dots and dashes of a CRD's
// name, which are all a valid one has.
func sanitizeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '_'
	}, s)
}

// encode writes the CRD as it was given, less what the cluster adds,
// under a comment saying where it comes from.
func (c *CRD) encode() []byte {
	header := fmt.Sprintf("# Copied from %s by inrun import kro: the CRD of %s.\n# It types the Blueprints' children of that kind; another operator reconciles them.", c.source, formatGK(c.GroupKind))
	if c.head != "" {
		header += "\n\n" + c.head
	}
	return encodeDocument(header, c.node)
}

// crdUse is a uses: crd entry of a Blueprint.
type crdUse struct {
	crd *CRD
	// version is the version the children are written in, when it is not
	// the CRD's storage version.
	version string
}

// linkCRD resolves c, a child of g whose kind no RGD of the import
// defines, to a CRD of the import. It reports whether one defines it.
func linkCRD(g *rgd, c *child, byKind map[schema.GroupKind]*CRD, diags *diag.List) bool {
	crd, ok := byKind[c.gvk.GroupKind()]
	if !ok {
		return false
	}
	crd.used = true
	if !slices.Contains(crd.served, c.gvk.Version) {
		diags.Add(c.kindPos, diag.InvalidValue, "use one of the versions it serves: "+strings.Join(crd.served, ", "),
			"%s is not served as version %s by CRD %s at %s", c.gvk.Kind, c.gvk.Version, crd.Name, crd.pos)
		return true
	}
	version := ""
	if c.gvk.Version != crd.storage {
		version = c.gvk.Version
	}
	for _, u := range g.crds {
		if u.crd == crd {
			if u.version != version {
				diags.Add(c.kindPos, diag.InvalidValue, "write every "+c.gvk.Kind+" of the Blueprint in one version",
					"%s is written in two versions in ResourceGraphDefinition %s; a Blueprint types the children of a kind in one", c.gvk.Kind, g.bp.RGD)
			}
			return true
		}
	}
	g.crds = append(g.crds, crdUse{crd: crd, version: version})
	g.bp.CRDs = append(g.bp.CRDs, crd.Name)
	return true
}

// unknownKindHint says what to do about a child of a kind that is neither
// built in, nor an RGD's of the import, nor a CRD's given.
func unknownKindHint(gvk schema.GroupVersionKind) string {
	// A built-in kind in a version not served: the same group, or, for a
	// version removed, the kind wherever it moved (extensions/v1beta1
	// Ingress is networking.k8s.io/v1's now).
	_, removed := builtin.Removed(gvk)
	var served []string
	for known := range builtin.Scheme.AllKnownTypes() {
		sameKind := known.GroupKind() == gvk.GroupKind() || removed && known.Kind == gvk.Kind
		if _, gone := builtin.Removed(known); sameKind && !gone && known.Version != runtime.APIVersionInternal {
			served = append(served, known.GroupVersion().String())
		}
	}
	if len(served) > 0 {
		slices.Sort(served)
		return "built-in " + gvk.Kind + " is served as apiVersion " + strings.Join(served, " or ")
	}
	// Operators generate their CRDs as kubebuilder does, and name them so.
	plural := simpleschema.Plural(gvk.Kind)
	return fmt.Sprintf("give its CustomResourceDefinition in the same import (kubectl get crd %s.%s -o yaml > %s.yaml, then inrun import kro ... %s.yaml), or the ResourceGraphDefinition that defines it",
		plural, gvk.Group, plural, plural)
}
