package yamlpos

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// At returns the node a field path names under n, or the nearest node on
// its way that exists: a path as the API server and the contract's
// readers write them, such as resources[2].metadata.name,
// labels["app.kubernetes.io/name"] or properties[tier].default. With key
// set, a field's key node is returned instead of its value.
func At(n *yaml.Node, path string, key bool) *yaml.Node {
	at := Resolve(n)
	for path != "" {
		var next, keyNode *yaml.Node
		switch {
		case path[0] == '.':
			path = path[1:]
			continue
		case strings.HasPrefix(path, `["`):
			q, err := strconv.QuotedPrefix(path[1:])
			if err != nil {
				return at
			}
			name, _ := strconv.Unquote(q)
			path = strings.TrimPrefix(path[1+len(q):], "]")
			keyNode, next = Field(at, name)
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return at
			}
			inside := path[1:end]
			path = path[end+1:]
			if i, err := strconv.Atoi(inside); err == nil && at.Kind == yaml.SequenceNode {
				if i >= 0 && i < len(at.Content) {
					next = at.Content[i]
				}
			} else {
				keyNode, next = Field(at, inside) // a map key, as field.Path.Key writes it
			}
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			keyNode, next = Field(at, path[:end])
			path = path[end:]
		}
		if next == nil {
			return at
		}
		if key && path == "" && keyNode != nil {
			return keyNode
		}
		at = Resolve(next)
	}
	return at
}

// Field returns the key and value nodes of name in mapping n.
func Field(n *yaml.Node, name string) (key, value *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}
