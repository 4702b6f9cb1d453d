package compiler

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// object is a YAML mapping being decoded: its fields by key, and the path
// that names it in messages.
type object struct {
	node   *yaml.Node
	path   string
	keys   map[string]*yaml.Node
	values map[string]*yaml.Node
	order  []string
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// object decodes n as a mapping; it reports a WrongType error and returns
// nil otherwise.
func (c *compilation) object(n *yaml.Node, path string) *object {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		if n != nil && n.ShortTag() == "!!null" {
			return &object{node: n, path: path, keys: map[string]*yaml.Node{}, values: map[string]*yaml.Node{}}
		}
		c.errs.add(c.pos(n), WrongType, "", "%s must be a map, not %s", displayPath(path), describe(n))
		return nil
	}
	o := &object{node: n, path: path, keys: map[string]*yaml.Node{}, values: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, dup := o.keys[k.Value]; dup {
			c.errs.add(c.pos(k), InvalidValue, "remove one of them", "%s is set twice", join(path, k.Value))
			continue
		}
		o.keys[k.Value] = k
		o.values[k.Value] = resolveAlias(n.Content[i+1])
		o.order = append(o.order, k.Value)
	}
	return o
}

// only reports every field of o that is not in allowed, with the closest
// allowed name as a hint.
func (c *compilation) only(o *object, allowed ...string) {
	if o == nil {
		return
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, k := range o.order {
		if ok[k] {
			continue
		}
		hint := ""
		if s, found := closest(k, allowed); found {
			hint = "did you mean " + join(o.path, s) + "?"
		} else {
			hint = "known fields: " + strings.Join(allowed, ", ")
		}
		c.errs.add(c.pos(o.keys[k]), UnknownField, hint, "unknown field %s", join(o.path, k))
	}
}

// get returns the value node of key, or nil.
func (o *object) get(key string) *yaml.Node {
	if o == nil {
		return nil
	}
	return o.values[key]
}

// str reads a string field. A missing required field is reported at the
// mapping.
func (c *compilation) str(o *object, key string, required bool) (string, *yaml.Node) {
	if o == nil {
		return "", nil
	}
	n := o.get(key)
	if n == nil || n.ShortTag() == "!!null" {
		if required {
			c.errs.add(c.pos(o.node), MissingField, "", "%s is required", join(o.path, key))
		}
		return "", n
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		c.errs.add(c.pos(n), WrongType, "", "%s must be a string, not %s", join(o.path, key), describe(n))
		return "", n
	}
	if required && n.Value == "" {
		c.errs.add(c.pos(n), MissingField, "", "%s must not be empty", join(o.path, key))
	}
	return n.Value, n
}

func displayPath(path string) string {
	if path == "" {
		return "the Blueprint"
	}
	return path
}

// describe names the kind of a YAML value for messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
	}
	return "a " + n.ShortTag() + " value"
}
