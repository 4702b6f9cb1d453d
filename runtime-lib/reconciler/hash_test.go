package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// jsonHash is hashObject as it was first written, with encoding/json: the
// hash every child already carries.
func jsonHash(obj map[string]any) string {
	raw, _ := json.Marshal(obj)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}

// hashStrings are strings encoding/json copies and strings it escapes.
var hashStrings = []string{
	"", "web", "nginx:1.27", "a b/c-d_e.f", "site-00042", "100%", "x=1,y=2",
	`say "hi"`, `C:\path`, "<html>", "a&b", "tab\there", "line\nbreak", "nul\x00", "\b\f\r",
	"é", "日本", "\u2028\u2029", "\xff\xfe invalid", "emoji 🙂", "\x7f",
}

func randomJSON(r *rand.Rand, depth int) any {
	n := 12
	if depth > 3 {
		n = 7 // no more maps or lists
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return hashStrings[r.IntN(len(hashStrings))]
	case 3:
		return r.Int64() - math.MaxInt64/2
	case 4:
		return int(r.Int32())
	case 5:
		return []float64{0, -0.5, 3, 1e21, 1e-7, 123456.789, -1e300}[r.IntN(7)]
	case 6:
		return []any{map[string]string{"a": "<b>", "c": "d"}, []string{"x", "&"}, map[string]any(nil), []any(nil), json.Number("12")}[r.IntN(5)]
	case 7, 8, 9:
		m := map[string]any{}
		for range r.IntN(6) {
			m[hashStrings[r.IntN(len(hashStrings))]] = randomJSON(r, depth+1)
		}
		return m
	default:
		l := make([]any, r.IntN(5))
		for i := range l {
			l[i] = randomJSON(r, depth+1)
		}
		return l
	}
}

func TestHashObjectIsTheJSONHash(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		obj := map[string]any{}
		for range 1 + r.IntN(6) {
			obj[hashStrings[r.IntN(len(hashStrings))]] = randomJSON(r, 0)
		}
		if got, want := hashObject(obj), jsonHash(obj); got != want {
			raw, _ := json.Marshal(obj)
			b, _ := AppendJSON(nil, obj)
			t.Fatalf("object %d: hash %s, encoding/json's %s\nwrote   %s\nwant    %s", i, got, want, b, raw)
		}
	}
	// What encoding/json cannot write hashes as nothing, as before.
	bad := map[string]any{"spec": map[string]any{"ratio": math.NaN()}}
	if got, want := hashObject(bad), jsonHash(bad); got != want {
		t.Errorf("NaN: hash %s, encoding/json's %s", got, want)
	}
}

func BenchmarkHashObject(b *testing.B) {
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "site-00042", "namespace": "bench",
			"labels":      map[string]any{"app": "site-00042", LabelManagedBy: ManagedBy, LabelBlueprint: "website", LabelOwnerUID: "5f0c1a9e-3b1d-4c55-9e53-7c1f0a2b3c4d", LabelChild: "deployment"},
			"annotations": map[string]any{AnnotationOwner: "example.com/Website/bench/site-00042"},
		},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "site-00042"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "site-00042"}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "web", "image": "nginx:1.27",
					"ports": []any{map[string]any{"containerPort": int64(80)}},
				}}},
			},
		},
	}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			jsonHash(obj)
		}
	})
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hashObject(obj)
		}
	})
}
