package gateway

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/inrun/inrun/ir"
)

// OpenAPI returns the OpenAPI 3.0 document of the API for the given
// targets: one request schema per target from its fields, one view schema
// from its view, and every path, so that callers can generate clients.
func OpenAPI(targets []*Target) map[string]any {
	schemas := map[string]any{
		"Problem": obj(map[string]any{
			"status": typ("integer", "The HTTP status code."),
			"title":  typ("string", "The status's name."),
			"code":   typ("string", "The class of problem, stable across versions, such as out-of-scope."),
			"detail": typ("string", "What is wrong with this request."),
			"fix":    typ("string", "What to do about it."),
			"fields": map[string]any{"type": "array", "items": ref("FieldProblem"), "description": "The intent fields at fault."},
		}, "status", "title", "code", "detail"),
		"FieldProblem": obj(map[string]any{"field": typ("string", ""), "message": typ("string", "")}, "field", "message"),
		"ViewProblem": obj(map[string]any{
			"fields":  map[string]any{"type": "array", "items": typ("string", ""), "description": "The intent fields it concerns."},
			"message": typ("string", ""),
		}, "message"),
		"TargetList": obj(map[string]any{"items": map[string]any{"type": "array", "items": map[string]any{"type": "object", "additionalProperties": true}}}, "items"),
	}
	paths := map[string]any{
		"/v1/targets": map[string]any{"get": op("List the targets your token may use", "listTargets", nil, map[string]any{"200": jsonResponse("The targets.", ref("TargetList"))})},
	}
	for _, t := range targets {
		n := schemaName(t.Name())
		schemas[n+"Intent"] = intentSchema(t, true)
		schemas[n+"Fields"] = intentSchema(t, false)
		schemas[n+"View"] = viewSchema(t, n)
		schemas[n+"List"] = obj(map[string]any{"items": map[string]any{"type": "array", "items": ref(n + "View")}}, "items")

		base := "/v1/targets/" + t.Name() + "/intents"
		params := []any{pathParam("name", "The intent's name.")}
		if f := t.Serve.Namespace.From; f != "" {
			params = append(params, map[string]any{"name": f, "in": "query", "required": false,
				"description": "Which " + f + " the intent is in; needed only when the name is in several.",
				"schema":      map[string]any{"type": "string", "enum": strs(t.Serve.Environments())}})
		}
		waitParam := map[string]any{"name": "wait", "in": "query", "required": false,
			"description": "Wait until the intent settles (ready, failed or gone), at most this long: 30s, 30 (seconds) or true.",
			"schema":      map[string]any{"type": "string"}}
		keyParam := map[string]any{"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "Makes the request happen once: a retry with the same key and payload gets the first answer.",
			"schema":      map[string]any{"type": "string", "maxLength": maxKeyLength}}
		body := map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref(n + "Intent")}}}
		viewResp := func(desc string) any { return jsonResponse(desc, ref(n+"View")) }
		paths[base] = map[string]any{
			"post": op("Create an intent of "+t.Name(), "create"+n, []any{waitParam, keyParam}, withErrors(map[string]any{"201": viewResp("Created; the view of the new intent.")}), body),
			"get":  op("List your intents of "+t.Name(), "list"+n, listParams(t), withErrors(map[string]any{"200": jsonResponse("Your intents.", ref(n+"List"))})),
		}
		paths[base+"/{name}"] = map[string]any{
			"get":    op("Read an intent's view", "get"+n, append(append([]any{}, params...), waitParam), withErrors(map[string]any{"200": viewResp("The intent's view.")})),
			"put":    op("Create or change an intent", "put"+n, []any{pathParam("name", "The intent's name."), waitParam, keyParam}, withErrors(map[string]any{"200": viewResp("Changed."), "201": viewResp("Created.")}), body),
			"delete": op("Delete an intent", "delete"+n, append(append([]any{}, params...), waitParam, keyParam), withErrors(map[string]any{"200": viewResp("Gone."), "202": viewResp("Being cleaned up.")})),
		}
		paths[base+"/{name}/watch"] = map[string]any{
			"get": op("Watch an intent's view as server-sent events until it settles", "watch"+n, append(append([]any{}, params...),
				map[string]any{"name": "follow", "in": "query", "required": false, "description": "Keep watching after it settles.", "schema": map[string]any{"type": "boolean"}}),
				withErrors(map[string]any{"200": map[string]any{"description": "Events: view (data: the view) each time it changes, then end.",
					"content": map[string]any{"text/event-stream": map[string]any{"schema": map[string]any{"type": "string"}}}}})),
		}
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Inrun intent gateway", "version": "v1",
			"description": "Send intents in your own words; read back views. Every error is an application/problem+json Problem that says what to do."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "A token from inrun serve token create."}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
}

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	doc := OpenAPI(s.Targets())
	if s.mounted(http.MethodPost, "/v1/targets/"+s.order[0]+"/play") {
		addPlay(doc, s.Targets())
	}
	writeJSON(w, http.StatusOK, doc)
}

// mounted reports whether a handler mounted beside the API (Handle)
// serves method and path.
func (s *Server) mounted(method, path string) bool {
	_, pattern := s.mux.Handler(&http.Request{Method: method, URL: &url.URL{Path: path}})
	return pattern != "" && pattern != "/v1/"
}

// addPlay documents the play endpoint the console uses (package
// gateway/play, mounted by inrun serve): the stages a draft intent goes
// through, played in memory.
func addPlay(doc map[string]any, targets []*Target) {
	paths := doc["paths"].(map[string]any)
	answer := obj(map[string]any{
		"accepted": typ("boolean", "Whether the gateway would accept the intent."),
		"stages": map[string]any{"type": "array", "description": "The stages played, in order, each with what it printed.",
			"items": obj(map[string]any{"title": typ("string", ""), "text": typ("string", "")}, "title", "text")},
		"problem": ref("Problem"),
	}, "accepted", "stages")
	for _, t := range targets {
		n := schemaName(t.Name())
		body := map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": ref(n + "Intent")}}}
		paths["/v1/targets/"+t.Name()+"/play"] = map[string]any{
			"post": op("Play a draft intent through every stage, in memory: nothing is written", "play"+n,
				[]any{map[string]any{"name": "name", "in": "query", "required": false, "description": "Name the intent as a PUT would.", "schema": map[string]any{"type": "string"}}},
				withErrors(map[string]any{"200": jsonResponse("The stages; accepted or not, the answer is 200.", answer)}), body),
		}
	}
}

// intentSchema is the schema of t's intent: as sent (required fields
// required, target allowed), or as read back.
func intentSchema(t *Target, request bool) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range t.Serve.Fields {
		p := map[string]any{"type": string(f.Type)}
		if f.Description != "" {
			p["description"] = f.Description
		}
		if f.Pattern != "" {
			p["pattern"] = f.Pattern
		}
		if f.Default != nil {
			p["default"] = f.Default.Literal
		}
		var enum []any
		for _, e := range f.Enum {
			enum = append(enum, e.Literal)
		}
		if f.Name == t.Serve.Namespace.From && enum == nil {
			enum = strs(t.Serve.Environments())
		}
		if enum != nil {
			p["enum"] = enum
		}
		props[f.Name] = p
		if f.Required && request {
			required = append(required, f.Name)
		}
	}
	if request {
		props["target"] = map[string]any{"type": "string", "enum": []any{t.Name()}, "description": "The target; optional when the URL names it."}
	}
	s := obj(props, required...)
	s["additionalProperties"] = false
	if t.Serve.Description != "" && request {
		s["description"] = t.Serve.Description
	}
	return s
}

// viewSchema is the schema of t's View.
func viewSchema(t *Target, n string) map[string]any {
	view := map[string]any{}
	if t.Serve.View != nil {
		for _, f := range t.Serve.View.Fields {
			view[f.Key] = valueSchema(f.Value)
		}
	}
	return obj(map[string]any{
		"target":    map[string]any{"type": "string", "enum": []any{t.Name()}},
		"name":      typ("string", "The intent's name."),
		"intent":    ref(n + "Fields"),
		"state":     map[string]any{"type": "string", "enum": []any{"progressing", "ready", "failed", "deleting", "deleted"}},
		"ready":     typ("boolean", ""),
		"message":   typ("string", "What the state means now."),
		"view":      map[string]any{"type": "object", "properties": view, "description": "What the Blueprint's view says; a field whose data is not there yet is left out."},
		"problems":  map[string]any{"type": "array", "items": ref("ViewProblem")},
		"createdBy": typ("string", "The name of the token that made it."),
		"created":   map[string]any{"type": "string", "format": "date-time"},
		"links":     map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
	}, "target", "name", "intent", "state", "ready")
}

// valueSchema is the schema of a view field's value, from its literal or
// its expression's checked type.
func valueSchema(v *ir.Value) map[string]any {
	switch v.Kind {
	case ir.Literal:
		switch v.Literal.(type) {
		case string:
			return map[string]any{"type": "string"}
		case int64:
			return map[string]any{"type": "integer"}
		case float64:
			return map[string]any{"type": "number"}
		case bool:
			return map[string]any{"type": "boolean"}
		}
	case ir.Interpolation:
		return map[string]any{"type": "string"}
	case ir.Map:
		props := map[string]any{}
		for _, f := range v.Fields {
			props[f.Key] = valueSchema(f.Value)
		}
		return map[string]any{"type": "object", "properties": props}
	case ir.List:
		return map[string]any{"type": "array", "items": map[string]any{}}
	case ir.Expression:
		switch t := v.Expr.Type; {
		case t == "string":
			return map[string]any{"type": "string"}
		case t == "int" || t == "uint":
			return map[string]any{"type": "integer"}
		case t == "double":
			return map[string]any{"type": "number"}
		case t == "bool":
			return map[string]any{"type": "boolean"}
		case strings.HasPrefix(t, "list("):
			return map[string]any{"type": "array", "items": map[string]any{}}
		case strings.HasPrefix(t, "map("):
			return map[string]any{"type": "object", "additionalProperties": true}
		}
	}
	return map[string]any{}
}

func listParams(t *Target) []any {
	if f := t.Serve.Namespace.From; f != "" {
		return []any{map[string]any{"name": f, "in": "query", "required": false, "description": "Only intents in this " + f + ".",
			"schema": map[string]any{"type": "string", "enum": strs(t.Serve.Environments())}}}
	}
	return nil
}

func withErrors(responses map[string]any) map[string]any {
	p := map[string]any{"description": "A Problem: what is wrong and what to do.", "content": map[string]any{"application/problem+json": map[string]any{"schema": ref("Problem")}}}
	responses["default"] = p
	return responses
}

func op(summary, id string, params []any, responses map[string]any, body ...map[string]any) map[string]any {
	o := map[string]any{"summary": summary, "operationId": id, "responses": responses}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if len(body) > 0 {
		o["requestBody"] = body[0]
	}
	return o
}

func jsonResponse(desc string, schema any) map[string]any {
	return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
}

func pathParam(name, desc string) map[string]any {
	return map[string]any{"name": name, "in": "path", "required": true, "description": desc, "schema": map[string]any{"type": "string"}}
}

func obj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		r := make([]any, len(required))
		for i, s := range required {
			r[i] = s
		}
		o["required"] = r
	}
	return o
}

func typ(t, desc string) map[string]any {
	m := map[string]any{"type": t}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func strs(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// schemaName is a target's name in CamelCase: web-app is WebApp.
func schemaName(target string) string {
	var b strings.Builder
	for _, part := range strings.Split(target, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
