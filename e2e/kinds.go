package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/inrun/inrun/internal/diag"
	"github.com/inrun/inrun/internal/suggest"
	"github.com/inrun/inrun/ir"
	"github.com/inrun/inrun/runtime-lib/runner"
)

// builtinKinds are the kinds every API server of the Kubernetes version
// Inrun is built against serves: those client-go knows, and CRDs. A local
// control plane serves exactly these plus the CRDs the runtime installs.
var builtinKinds = sync.OnceValue(func() map[schema.GroupVersionKind]bool {
	out := map[schema.GroupVersionKind]bool{}
	for gvk := range runner.Scheme().AllKnownTypes() {
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		switch gvk.Kind {
		case "WatchEvent", "Status", "APIVersions", "APIGroup", "APIResourceList", "InternalEvent":
			continue
		}
		out[gvk] = true
	}
	return out
})

// checkKinds reports every kind the file names that the cluster would not
// serve, and a case's CR that is not of the Blueprint's kind. When
// installs is set, the Blueprint's custom resource and child kinds count as
// served: the runtime installs the CRD. Beyond those, served says what the
// cluster serves; nil means a local control plane not started yet, which
// serves the built-in kinds client-go knows.
func (f *File) checkKinds(bp *ir.Blueprint, served func(schema.GroupVersionKind) bool, installs bool) diag.List {
	known := map[schema.GroupVersionKind]bool{}
	if bp != nil && installs {
		for _, b := range ir.WithUsed([]*ir.Blueprint{bp}) {
			known[b.Resource.GroupVersionKind] = true
			for _, u := range b.Uses {
				known[u.GroupVersionKind] = true
			}
			for _, c := range b.Children {
				known[c.GroupVersionKind] = true
			}
		}
	}
	var l diag.List
	for _, u := range f.kinds {
		if u.cr && bp != nil && u.gvk != bp.Resource.GroupVersionKind {
			l.Add(u.pos, diag.InvalidValue, "give the case a custom resource of the Blueprint's kind",
				"case %s: %s: the CR is a %s (%s), but Blueprint %s reconciles %s (%s)",
				u.cse, u.field, u.gvk.Kind, u.gvk.GroupVersion(), bp.Name, bp.Resource.Kind, bp.Resource.GroupVersionKind.GroupVersion())
			continue
		}
		if known[u.gvk] || served == nil && builtinKinds()[u.gvk] || served != nil && served(u.gvk) {
			continue
		}
		hint := kindHint(u.gvk, known, served == nil)
		if u.cr {
			hint = "install the CRD, or let the runtime of inrun e2e install it (no --no-runtime)"
		}
		l.Add(u.pos, diag.UnknownKind, hint, "case %s: %s: apiVersion %s, kind %s: the cluster does not serve this kind",
			u.cse, u.field, u.gvk.GroupVersion(), u.gvk.Kind)
	}
	return l
}

// kindHint suggests what was meant: the apiVersions that serve the kind, or
// a kind of a similar name.
func kindHint(gvk schema.GroupVersionKind, known map[schema.GroupVersionKind]bool, local bool) string {
	var versions, kinds []string
	seen := map[string]bool{}
	consider := func(k schema.GroupVersionKind) {
		if k.Kind == gvk.Kind {
			versions = append(versions, k.GroupVersion().String())
		}
		if !seen[k.Kind] {
			seen[k.Kind] = true
			kinds = append(kinds, k.Kind)
		}
	}
	for k := range builtinKinds() {
		consider(k)
	}
	for k := range known {
		consider(k)
	}
	if len(versions) > 0 {
		slices.Sort(versions)
		versions = slices.Compact(versions)
		// client-go still knows beta versions the server has dropped
		// (extensions/v1beta1 Deployment); suggest the stable ones.
		if stable := slices.DeleteFunc(slices.Clone(versions), isPrerelease); len(stable) > 0 {
			versions = stable
		}
		return fmt.Sprintf("%s is served as apiVersion %s", gvk.Kind, strings.Join(versions, " or "))
	}
	slices.Sort(kinds)
	if k, ok := suggest.Closest(gvk.Kind, kinds); ok {
		return "did you mean kind " + k + "?"
	}
	if local {
		return "a local control plane serves the built-in kinds and the Blueprint's CRD; run on a cluster that has this kind's CRD with --context"
	}
	return "install its CRD first, or check the spelling of apiVersion and kind"
}

func isPrerelease(apiVersion string) bool {
	v := apiVersion[strings.LastIndex(apiVersion, "/")+1:]
	return strings.Contains(v, "alpha") || strings.Contains(v, "beta")
}
