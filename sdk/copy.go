package sdk

// DeepCopy returns a copy of r that shares nothing with it, so that a
// Result kept in a cache can be handed out and then changed.
func (r *Result) DeepCopy() *Result {
	if r == nil {
		return nil
	}
	out := *r
	out.Status = copyMap(r.Status)
	out.Labels = copyStrings(r.Labels)
	out.Annotations = copyStrings(r.Annotations)
	if r.Resources != nil {
		out.Resources = make([]Resource, len(r.Resources))
		for i, res := range r.Resources {
			out.Resources[i] = Resource{ID: res.ID, Object: copyMap(res.Object)}
		}
	}
	out.Conditions = append([]Condition(nil), r.Conditions...)
	out.Events = append([]Event(nil), r.Events...)
	if r.Step != nil {
		step := *r.Step
		out.Step = &step
	}
	return &out
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyMap(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v // scalars are values
}

func copyStrings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
