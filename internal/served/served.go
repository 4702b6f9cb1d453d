// Package served lists the kinds an API server serves, as its discovery
// tells them: what the runtime and inrun migrate search when they look for
// objects of kinds they do not declare.
package served

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Discovery lists the resources the API server serves, in their preferred
// versions; client-go's discovery client is one.
type Discovery interface {
	ServerPreferredResources() ([]*metav1.APIResourceList, error)
}

// Kind is a kind the API server serves.
type Kind struct {
	schema.GroupVersionKind
	// Resource is its plural, lower-case name.
	Resource   string
	Namespaced bool
}

// Kinds lists the kinds d serves that allow every one of verbs, but Events:
// they name objects without belonging to them, and a cluster holds many.
// Subresources are left out. Groups an aggregated API server that is down
// cannot tell are left out too, with the error, beside what was found.
func Kinds(d Discovery, verbs ...string) ([]Kind, error) {
	lists, err := d.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	var out []Kind
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || r.Kind == "Event" || slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains(r.Verbs, v) }) {
				continue
			}
			out = append(out, Kind{GroupVersionKind: gv.WithKind(r.Kind), Resource: r.Name, Namespaced: r.Namespaced})
		}
	}
	return out, err
}
