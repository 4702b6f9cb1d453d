package codegen

import (
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
)

// initialisms are the words Go spells in capitals, as golint and
// Kubernetes' API types do.
var initialisms = map[string]bool{
	"API": true, "CA": true, "CIDR": true, "CPU": true, "DNS": true, "FQDN": true, "GID": true,
	"HTTP": true, "HTTPS": true, "ID": true, "IP": true, "JSON": true, "OS": true, "SSH": true,
	"TCP": true, "TLS": true, "TTL": true, "UDP": true, "UID": true, "URI": true, "URL": true,
	"UUID": true, "VM": true, "YAML": true,
}

// exportedName turns a JSON field name into a Go identifier the way
// Kubernetes API types spell theirs: clusterIP is ClusterIP, url is URL.
func exportedName(json string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	rs := []rune(json)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			// A capital starts a word, unless it continues a run of
			// capitals not followed by a lower-case letter (clusterIP).
			prevUpper := unicode.IsUpper(cur[len(cur)-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if !prevUpper || nextLower {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	var b strings.Builder
	for _, w := range words {
		if up := strings.ToUpper(w); initialisms[up] {
			b.WriteString(up)
			continue
		}
		r := []rune(w)
		b.WriteString(strings.ToUpper(string(r[0])) + string(r[1:]))
	}
	name := b.String()
	if name == "" {
		return "Field"
	}
	if unicode.IsDigit([]rune(name)[0]) {
		name = "X" + name
	}
	return name
}

// singular names the element type of a list field: ports holds Port.
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies") && len(name) > 4:
		return name[:len(name)-3] + "y"
	case strings.HasSuffix(name, "sses"), strings.HasSuffix(name, "xes"),
		strings.HasSuffix(name, "ches"), strings.HasSuffix(name, "shes"):
		return name[:len(name)-2]
	case strings.HasSuffix(name, "ss"), strings.HasSuffix(name, "us"):
		return name + "Item"
	case strings.HasSuffix(name, "s") && len(name) > 1:
		return name[:len(name)-1]
	}
	return name + "Item"
}

// localName turns a child id or key into an unexported Go identifier that
// cannot collide with Go's keywords or the generated code's own names.
func localName(id string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range id {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteRune('_')
		}
	}
	name := b.String()
	if name == "" || unicode.IsDigit([]rune(name)[0]) {
		name = "v" + name
	}
	r := []rune(name)
	r[0] = unicode.ToLower(r[0])
	name = string(r)
	for jen.IsReservedWord(name) || taken[name] {
		name += "_"
	}
	taken[name] = true
	return name
}

// kindFile is the lower-case file name part kubebuilder gives a kind.
func kindFile(kind string) string { return strings.ToLower(kind) }

// packageAlias is the import name kubebuilder's layout uses for an API
// package: the group's first label and the version, e.g. appsv1, corev1.
func packageAlias(group, version string) string {
	first := group
	if i := strings.IndexByte(group, '.'); i >= 0 {
		first = group[:i]
	}
	if first == "" {
		first = "core"
	}
	var b strings.Builder
	for _, r := range strings.ToLower(first + version) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}
