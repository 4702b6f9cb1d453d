package ir

// WithFiles returns a copy of bp whose positions name files through rename,
// such as a path relative to the Blueprint's directory instead of the one
// it was read from; bp itself is unchanged. Checked expressions are shared.
func (b *Blueprint) WithFiles(rename func(file string) string) *Blueprint {
	r := relocator(rename)
	out := *b
	out.File = rename(b.File)
	out.Resource.Pos = r.pos(b.Resource.Pos)
	if b.Uses != nil {
		out.Uses = make([]*Use, len(b.Uses))
		for i, u := range b.Uses {
			uu := *u
			uu.Pos = r.pos(u.Pos)
			uu.Source = rename(u.Source)
			out.Uses[i] = &uu
		}
	}
	out.Children = make([]*Child, len(b.Children))
	for i, c := range b.Children {
		cc := *c
		cc.Pos = r.pos(c.Pos)
		cc.IncludeWhen = r.expr(c.IncludeWhen)
		cc.ReadyWhen = r.expr(c.ReadyWhen)
		cc.Template = r.value(c.Template)
		if c.ForEach != nil {
			cc.ForEach = make([]*Iterator, len(c.ForEach))
			for j, it := range c.ForEach {
				cc.ForEach[j] = &Iterator{Pos: r.pos(it.Pos), Name: it.Name, Items: r.expr(it.Items)}
			}
		}
		out.Children[i] = &cc
	}
	out.Status = r.value(b.Status)
	if b.Conditions != nil {
		out.Conditions = make([]*Condition, len(b.Conditions))
		for i, c := range b.Conditions {
			out.Conditions[i] = &Condition{Pos: r.pos(c.Pos), Type: c.Type, Status: r.expr(c.Status), Reason: r.value(c.Reason), Message: r.value(c.Message)}
		}
	}
	if b.ReadyWhen != nil {
		out.ReadyWhen = make([]*Expr, len(b.ReadyWhen))
		for i, x := range b.ReadyWhen {
			out.ReadyWhen[i] = r.expr(x)
		}
	}
	if b.Reconcile != nil {
		rec := *b.Reconcile
		rec.Pos = r.pos(rec.Pos)
		rec.Args = r.value(rec.Args)
		if rem := rec.Remote; rem != nil {
			remote := *rem
			remote.Pos = r.pos(remote.Pos)
			remote.Resources = make([]ResourceKind, len(rem.Resources))
			for i, k := range rem.Resources {
				k.Pos = r.pos(k.Pos)
				remote.Resources[i] = k
			}
			if rem.API != nil {
				api := *rem.API
				api.Pos = r.pos(api.Pos)
				api.Method, api.URL, api.Headers = r.value(api.Method), r.value(api.URL), r.value(api.Headers)
				api.Body, api.Result = r.value(api.Body), r.value(api.Result)
				if api.ID != nil {
					id := *api.ID
					id.Pos, id.From = r.pos(id.Pos), r.value(id.From)
					api.ID = &id
				}
				api.Create = r.call(api.Create)
				if api.Adopt != nil {
					adopt := *api.Adopt
					adopt.APICall = *r.call(&adopt.APICall)
					adopt.From = r.value(adopt.From)
					api.Adopt = &adopt
				}
				remote.API = &api
			}
			if rem.Go != nil {
				g := *rem.Go
				g.Pos = r.pos(g.Pos)
				remote.Go = &g
			}
			rec.Remote = &remote
		}
		if wf := rec.Workflow; wf != nil {
			w := *wf
			w.Pos = r.pos(w.Pos)
			w.Steps = make([]*WorkflowStep, len(wf.Steps))
			for i, st := range wf.Steps {
				s := *st
				s.Pos = r.pos(s.Pos)
				if st.FailedWhen != nil {
					s.FailedWhen = make([]*Expr, len(st.FailedWhen))
					for j, x := range st.FailedWhen {
						s.FailedWhen[j] = r.expr(x)
					}
				}
				w.Steps[i] = &s
			}
			rec.Workflow = &w
		}
		out.Reconcile = &rec
	}
	if b.Serve != nil {
		sv := *b.Serve
		sv.Pos = r.pos(sv.Pos)
		sv.View = r.value(sv.View)
		sv.Fields = make([]*ServeField, len(b.Serve.Fields))
		for i, f := range b.Serve.Fields {
			ff := *f
			ff.Pos, ff.Default = r.pos(f.Pos), r.value(f.Default)
			if f.Enum != nil {
				ff.Enum = make([]*Value, len(f.Enum))
				for j, e := range f.Enum {
					ff.Enum[j] = r.value(e)
				}
			}
			sv.Fields[i] = &ff
		}
		sv.Tokens = make([]*ServeGrant, len(b.Serve.Tokens))
		for i, g := range b.Serve.Tokens {
			gg := *g
			gg.Pos = r.pos(g.Pos)
			sv.Tokens[i] = &gg
		}
		out.Serve = &sv
	}
	if b.Lifecycle != nil && b.Lifecycle.Deprecation != nil {
		dep := *b.Lifecycle.Deprecation
		dep.Pos = r.pos(dep.Pos)
		out.Lifecycle = &Lifecycle{Deprecation: &dep}
	}
	return &out
}

type relocator func(string) string

func (r relocator) pos(p Pos) Pos {
	p.File = r(p.File)
	return p
}

func (r relocator) expr(x *Expr) *Expr {
	if x == nil {
		return nil
	}
	out := *x
	out.Pos = r.pos(x.Pos)
	return &out
}

func (r relocator) value(v *Value) *Value {
	if v == nil {
		return nil
	}
	out := *v
	out.Pos = r.pos(v.Pos)
	out.Expr = r.expr(v.Expr)
	if v.Parts != nil {
		out.Parts = make([]Part, len(v.Parts))
		for i, p := range v.Parts {
			out.Parts[i] = Part{Text: p.Text, Expr: r.expr(p.Expr)}
		}
	}
	if v.Fields != nil {
		out.Fields = make([]Field, len(v.Fields))
		for i, f := range v.Fields {
			out.Fields[i] = Field{Key: f.Key, KeyPos: r.pos(f.KeyPos), Value: r.value(f.Value)}
		}
	}
	if v.Items != nil {
		out.Items = make([]*Value, len(v.Items))
		for i, it := range v.Items {
			out.Items[i] = r.value(it)
		}
	}
	return &out
}

func (r relocator) call(c *APICall) *APICall {
	if c == nil {
		return nil
	}
	return &APICall{Pos: r.pos(c.Pos), Method: r.value(c.Method), URL: r.value(c.URL)}
}
