package codegen

import (
	"fmt"
	"reflect"

	"github.com/dave/jennifer/jen"

	"github.com/inrun/inrun/ir"
)

// The files of api/<version>: the custom resource's Go types as the
// apiModel has them, and their deepcopy functions.

// groupVersionFile renders api/<version>/groupversion_info.go.
func (m *apiModel) groupVersionFile(bp *ir.Blueprint) *jen.File {
	f := newFile(m.pkg, m.version)
	f.PackageComment(fmt.Sprintf("Package %s contains API Schema definitions for the %s %s API group.", m.version, bp.Resource.Group, m.version))
	f.PackageComment("+kubebuilder:object:generate=true")
	f.PackageComment("+groupName=" + bp.Resource.Group)
	f.Var().Defs(
		jen.Comment("GroupVersion is group version used to register these objects."),
		jen.Id("GroupVersion").Op("=").Qual("k8s.io/apimachinery/pkg/runtime/schema", "GroupVersion").Values(jen.Dict{
			jen.Id("Group"):   jen.Lit(bp.Resource.Group),
			jen.Id("Version"): jen.Lit(bp.Resource.Version),
		}),
		jen.Line(),
		jen.Comment("SchemeBuilder is used to add go types to the GroupVersionKind scheme."),
		jen.Id("SchemeBuilder").Op("=").Op("&").Qual("sigs.k8s.io/controller-runtime/pkg/scheme", "Builder").Values(jen.Dict{
			jen.Id("GroupVersion"): jen.Id("GroupVersion"),
		}),
		jen.Line(),
		jen.Comment("AddToScheme adds the types in this group-version to the given scheme."),
		jen.Id("AddToScheme").Op("=").Id("SchemeBuilder").Dot("AddToScheme"),
	)
	return f
}

// typesFile renders api/<version>/<kind>_types.go.
func (m *apiModel) typesFile() *jen.File {
	f := newFile(m.pkg, m.version)
	// Spec, Status and their nested types first, then the kind and its
	// list, as kubebuilder lays them out.
	var order []*apiType
	for _, at := range m.types {
		if !at.root && !at.list {
			order = append(order, at)
		}
	}
	for _, at := range m.types {
		if at.root || at.list {
			order = append(order, at)
		}
	}
	for _, at := range order {
		if at.root || at.list {
			for _, mk := range at.markers {
				f.Comment(mk)
			}
			f.Line()
		}
		doc := at.doc
		if doc == nil {
			doc = []string{defaultDoc(at, m.kind)}
		}
		for _, d := range doc {
			f.Comment(d)
		}
		var fields []jen.Code
		for i, fl := range at.t.fields {
			if i > 0 && (fl.doc != nil || len(fl.markers) > 0) {
				fields = append(fields, jen.Line())
			}
			for _, d := range fl.doc {
				fields = append(fields, jen.Comment(d))
			}
			for _, mk := range fl.markers {
				fields = append(fields, jen.Comment(mk))
			}
			fields = append(fields, structField(fl))
		}
		f.Type().Id(at.name).Struct(fields...)
		f.Line()
	}
	f.Func().Id("init").Params().Block(
		jen.Id("SchemeBuilder").Dot("Register").Call(jen.Op("&").Id(m.kind).Values(), jen.Op("&").Id(m.kind+"List").Values()),
	)
	return f
}

func defaultDoc(at *apiType, kind string) string {
	switch at.name {
	case kind + "Spec":
		return fmt.Sprintf("%s defines the desired state of %s.", at.name, kind)
	case kind + "Status":
		return fmt.Sprintf("%s defines the observed state of %s.", at.name, kind)
	}
	return fmt.Sprintf("%s is a part of %s.", at.name, kind)
}

func structField(fl *gfield) jen.Code {
	tag := fl.json
	switch {
	case fl.inline:
		tag = ",inline"
	case fl.omitempty:
		tag += ",omitempty"
	}
	if fl.embedded {
		return fl.t.code().Tag(map[string]string{"json": tag})
	}
	return jen.Id(fl.goName).Add(fl.t.code()).Tag(map[string]string{"json": tag})
}

// deepCopyFile renders api/<version>/zz_generated.deepcopy.go, the
// functions controller-gen's object generator would write.
func (m *apiModel) deepCopyFile() *jen.File {
	f := newFile(m.pkg, m.version)
	for _, at := range m.types {
		in, out := jen.Id("in"), jen.Id("out")
		var body []jen.Code
		body = append(body, jen.Op("*").Add(out).Op("=").Op("*").Add(in))
		for _, fl := range at.t.fields {
			body = append(body, copyField(fl)...)
		}
		f.Comment("DeepCopyInto is a generated deepcopy function, copying the receiver, writing into out. in must be non-nil.")
		f.Func().Params(jen.Id("in").Op("*").Id(at.name)).Id("DeepCopyInto").Params(jen.Id("out").Op("*").Id(at.name)).Block(body...)
		f.Line()
		f.Comment("DeepCopy is a generated deepcopy function, copying the receiver, creating a new " + at.name + ".")
		f.Func().Params(jen.Id("in").Op("*").Id(at.name)).Id("DeepCopy").Params().Op("*").Id(at.name).Block(
			jen.If(jen.Id("in").Op("==").Nil()).Block(jen.Return(jen.Nil())),
			jen.Id("out").Op(":=").New(jen.Id(at.name)),
			jen.Id("in").Dot("DeepCopyInto").Call(jen.Id("out")),
			jen.Return(jen.Id("out")),
		)
		f.Line()
		if at.root || at.list {
			f.Comment("DeepCopyObject is a generated deepcopy function, copying the receiver, creating a new runtime.Object.")
			f.Func().Params(jen.Id("in").Op("*").Id(at.name)).Id("DeepCopyObject").Params().Qual(pkgRuntime, "Object").Block(
				jen.If(jen.Id("c").Op(":=").Id("in").Dot("DeepCopy").Call(), jen.Id("c").Op("!=").Nil()).Block(jen.Return(jen.Id("c"))),
				jen.Return(jen.Nil()),
			)
			f.Line()
		}
	}
	return f
}

// hasDeepCopy reports whether values of t need more than a shallow copy.
func hasDeepCopy(t *gtype) bool {
	switch t.kind {
	case gPointer, gSlice, gMap, gBytes:
		return true
	case gStruct:
		return t.rt == nil || refs(t.rt, map[reflect.Type]bool{})
	case gOpaque:
		// IntOrString holds no references; the others have DeepCopyInto.
		return t.name != "IntOrString"
	}
	return false
}

// copyField returns the statements deepcopy-gen writes for one field,
// after *out = *in.
func copyField(fl *gfield) []jen.Code {
	t := fl.t
	if !hasDeepCopy(t) {
		return nil
	}
	name := fl.goName
	if fl.embedded {
		name = t.name
	}
	inF, outF := jen.Id("in").Dot(name), jen.Id("out").Dot(name)
	switch t.kind {
	case gStruct, gOpaque:
		if t.kind == gStruct && t.api != nil && !structNeedsDeep(t) {
			return nil
		}
		return []jen.Code{inF.Dot("DeepCopyInto").Call(jen.Op("&").Add(outF))}
	case gPointer:
		var set jen.Code
		if hasDeepCopy(t.elem) && !(t.elem.kind == gStruct && t.elem.api != nil && !structNeedsDeep(t.elem)) {
			set = jen.Parens(jen.Op("*").Id("in")).Dot("DeepCopyInto").Call(jen.Op("*").Id("out"))
		} else {
			set = jen.Op("**").Id("out").Op("=").Op("**").Id("in")
		}
		return []jen.Code{jen.If(inF.Clone().Op("!=").Nil()).Block(
			jen.List(jen.Id("in"), jen.Id("out")).Op(":=").List(jen.Op("&").Add(inF.Clone()), jen.Op("&").Add(outF.Clone())),
			jen.Op("*").Id("out").Op("=").New(t.elem.code()),
			set,
		)}
	case gBytes:
		return []jen.Code{jen.If(inF.Clone().Op("!=").Nil()).Block(
			jen.List(jen.Id("in"), jen.Id("out")).Op(":=").List(jen.Op("&").Add(inF.Clone()), jen.Op("&").Add(outF.Clone())),
			jen.Op("*").Id("out").Op("=").Make(jen.Index().Byte(), jen.Len(jen.Op("*").Id("in"))),
			jen.Copy(jen.Op("*").Id("out"), jen.Op("*").Id("in")),
		)}
	case gSlice:
		var loop jen.Code
		if hasDeepCopy(t.elem) && !(t.elem.kind == gStruct && t.elem.api != nil && !structNeedsDeep(t.elem)) {
			loop = jen.For(jen.Id("i").Op(":=").Range().Op("*").Id("in")).Block(
				jen.Parens(jen.Op("*").Id("in")).Index(jen.Id("i")).Dot("DeepCopyInto").Call(jen.Op("&").Parens(jen.Op("*").Id("out")).Index(jen.Id("i"))),
			)
		} else {
			loop = jen.Copy(jen.Op("*").Id("out"), jen.Op("*").Id("in"))
		}
		return []jen.Code{jen.If(inF.Clone().Op("!=").Nil()).Block(
			jen.List(jen.Id("in"), jen.Id("out")).Op(":=").List(jen.Op("&").Add(inF.Clone()), jen.Op("&").Add(outF.Clone())),
			jen.Op("*").Id("out").Op("=").Make(t.code(), jen.Len(jen.Op("*").Id("in"))),
			loop,
		)}
	case gMap:
		var set jen.Code
		if hasDeepCopy(t.elem) && !(t.elem.kind == gStruct && t.elem.api != nil && !structNeedsDeep(t.elem)) {
			set = jen.Parens(jen.Op("*").Id("out")).Index(jen.Id("key")).Op("=").Op("*").Id("val").Dot("DeepCopy").Call()
		} else {
			set = jen.Parens(jen.Op("*").Id("out")).Index(jen.Id("key")).Op("=").Id("val")
		}
		return []jen.Code{jen.If(inF.Clone().Op("!=").Nil()).Block(
			jen.List(jen.Id("in"), jen.Id("out")).Op(":=").List(jen.Op("&").Add(inF.Clone()), jen.Op("&").Add(outF.Clone())),
			jen.Op("*").Id("out").Op("=").Make(t.code(), jen.Len(jen.Op("*").Id("in"))),
			jen.For(jen.List(jen.Id("key"), jen.Id("val")).Op(":=").Range().Op("*").Id("in")).Block(set),
		)}
	}
	return nil
}

// refs reports whether values of a Go type hold pointers, slices or maps.
func refs(rt reflect.Type, seen map[reflect.Type]bool) bool {
	switch rt.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	case reflect.Struct:
		if seen[rt] {
			return false
		}
		seen[rt] = true
		for i := 0; i < rt.NumField(); i++ {
			if refs(rt.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// structNeedsDeep reports whether a generated struct holds references.
func structNeedsDeep(t *gtype) bool {
	for _, f := range t.fields {
		if hasDeepCopy(f.t) && !(f.t.kind == gStruct && f.t.api != nil && !structNeedsDeep(f.t)) {
			return true
		}
	}
	return false
}
