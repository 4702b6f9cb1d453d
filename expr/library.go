package expr

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"reflect"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// libraries are the functions a Blueprint's expressions may call besides
// the Kubernetes CEL libraries of the API server's base environment: cel-go's
// extensions that environment leaves out, and Inrun's own, with the names
// kro gives the same functions so that kro users feel at home.
func libraries() []cel.EnvOption {
	return []cel.EnvOption{
		ext.Encoders(), // base64.encode, base64.decode
		ext.Math(),     // math.greatest, math.least, math.abs, math.ceil, ...
		ext.Bindings(), // cel.bind
		cel.Lib(inrunLib{}),
	}
}

// inrunLib is Inrun's own CEL library:
//
//	json.marshal(dyn) string              the value as JSON, keys sorted
//	json.unmarshal(string) dyn            JSON as a value (whole numbers are ints)
//	hash.sha256(string) bytes             SHA-256; base64.encode or hex.encode it
//	hash.fnv64a(string) bytes             FNV-1a, 64 bits
//	hex.encode(bytes) string              lower-case hexadecimal
//	random.seededString(int, string) string  digits and letters, the same for the same length and seed (kro's)
//	random.seededInt(int, int, string) int   in [min, max), the same for the same arguments and seed (kro's)
//	random.string(int) string             letters and digits from crypto/rand, new on every call (onCreate templates only)
//	map.merge(map) map                    the keys of both; the argument's win (kro's)
//	map.deepMerge(dyn) dyn                the same, merging maps under a common key; any object
//	map.omit(list(string)) map            without those keys
//	string(metav1.Time) string            RFC 3339, as the API server writes it; "" when unset
//	timestamp(metav1.Time) timestamp      the time; 1970-01-01T00:00:00Z when unset, as x.Time reads
//
// (and the same for metav1.MicroTime, in RFC 3339 with microseconds). A
// built-in kind's time fields are those Go structs, not CEL timestamps.
//
// Seed random values with something stable, such as self.metadata.uid: a
// password generated from it stays the same on every reconcile.
type inrunLib struct{}

func (inrunLib) LibraryName() string { return "inrun" }

func (inrunLib) ProgramOptions() []cel.ProgramOption { return nil }

func (inrunLib) CompileOptions() []cel.EnvOption {
	mapKV := cel.MapType(cel.TypeParamType("K"), cel.TypeParamType("V"))
	return []cel.EnvOption{
		cel.Function("json.marshal", cel.Overload("inrun_json_marshal_dyn", []*cel.Type{cel.DynType}, cel.StringType, cel.UnaryBinding(jsonMarshal))),
		cel.Function("json.unmarshal", cel.Overload("inrun_json_unmarshal_string", []*cel.Type{cel.StringType}, cel.DynType, cel.UnaryBinding(jsonUnmarshal))),
		cel.Function("hash.sha256", cel.Overload("inrun_hash_sha256_string", []*cel.Type{cel.StringType}, cel.BytesType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			sum := sha256.Sum256([]byte(v.(types.String)))
			return types.Bytes(sum[:])
		}))),
		cel.Function("hash.fnv64a", cel.Overload("inrun_hash_fnv64a_string", []*cel.Type{cel.StringType}, cel.BytesType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			h := fnv.New64a()
			h.Write([]byte(v.(types.String)))
			return types.Bytes(h.Sum(nil))
		}))),
		cel.Function("hex.encode", cel.Overload("inrun_hex_encode_bytes", []*cel.Type{cel.BytesType}, cel.StringType, cel.UnaryBinding(func(v ref.Val) ref.Val {
			return types.String(hex.EncodeToString([]byte(v.(types.Bytes))))
		}))),
		cel.Function("random.seededString", cel.Overload("inrun_random_seeded_string_int_string", []*cel.Type{cel.IntType, cel.StringType}, cel.StringType, cel.BinaryBinding(seededString))),
		cel.Function("random.string", cel.Overload(RandomStringOverload, []*cel.Type{cel.IntType}, cel.StringType, cel.UnaryBinding(randomString))),
		cel.Function("random.seededInt", cel.Overload("inrun_random_seeded_int_int_int_string", []*cel.Type{cel.IntType, cel.IntType, cel.StringType}, cel.IntType, cel.FunctionBinding(seededInt))),
		cel.Function("merge", cel.MemberOverload("inrun_map_merge_map", []*cel.Type{mapKV, mapKV}, mapKV, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
			return mergeMaps(a, b, false)
		}))),
		// dyn, as kro's: an object field of the custom resource merges too.
		cel.Function("deepMerge", cel.MemberOverload("inrun_dyn_deep_merge_dyn", []*cel.Type{cel.DynType, cel.DynType}, cel.DynType, cel.BinaryBinding(func(a, b ref.Val) ref.Val {
			return mergeMaps(a, b, true)
		}))),
		cel.Function("omit", cel.MemberOverload("inrun_map_omit_list", []*cel.Type{mapKV, cel.ListType(cel.TypeParamType("K"))}, mapKV, cel.BinaryBinding(omit))),
		// Not for Blueprints: OrderMapIteration wraps the maps that
		// comprehensions iterate in it.
		cel.Function(orderedFunction, cel.Overload("inrun_ordered_map", []*cel.Type{mapKV}, mapKV, cel.UnaryBinding(ordered))),
		cel.Function("string",
			cel.Overload("inrun_string_metav1_time", []*cel.Type{TimeType}, cel.StringType, cel.UnaryBinding(timeString)),
			cel.Overload("inrun_string_metav1_microtime", []*cel.Type{MicroTimeType}, cel.StringType, cel.UnaryBinding(timeString))),
		cel.Function("timestamp",
			cel.Overload("inrun_timestamp_metav1_time", []*cel.Type{TimeType}, cel.TimestampType, cel.UnaryBinding(timeTimestamp)),
			cel.Overload("inrun_timestamp_metav1_microtime", []*cel.Type{MicroTimeType}, cel.TimestampType, cel.UnaryBinding(timeTimestamp))),
	}
}

// TimeType and MicroTimeType are the CEL types of a built-in kind's
// metav1.Time and metav1.MicroTime fields, as cel-go's native types name
// them.
var (
	TimeType      = cel.ObjectType(NativeTypeName(reflect.TypeFor[metav1.Time]()))
	MicroTimeType = cel.ObjectType(NativeTypeName(reflect.TypeFor[metav1.MicroTime]()))
)

// goTime reads a native metav1.Time or metav1.MicroTime; an unset field
// reads as a zero one.
func goTime(v ref.Val) (t time.Time, micro bool, ok bool) {
	switch t := v.Value().(type) {
	case metav1.Time:
		return t.Time, false, true
	case *metav1.Time:
		return t.Time, false, true // cel-go gives an unset pointer field as a new zero value
	case metav1.MicroTime:
		return t.Time, true, true
	case *metav1.MicroTime:
		return t.Time, true, true
	}
	return time.Time{}, false, false
}

func timeString(v ref.Val) ref.Val {
	t, micro, ok := goTime(v)
	switch {
	case !ok:
		return types.MaybeNoSuchOverloadErr(v)
	case t.IsZero():
		return types.String("") // as the field's JSON, null, reads in text
	case micro:
		return types.String(t.UTC().Format(metav1.RFC3339Micro))
	}
	return types.String(t.UTC().Format(time.RFC3339))
}

func timeTimestamp(v ref.Val) ref.Val {
	t, _, ok := goTime(v)
	switch {
	case !ok:
		return types.MaybeNoSuchOverloadErr(v)
	case t.IsZero():
		t = time.Unix(0, 0) // as cel-go reads the zero time.Time of x.Time
	}
	return types.Timestamp{Time: t.UTC()}
}

func jsonMarshal(v ref.Val) ref.Val {
	out, err := ToJSON(v)
	if err != nil {
		return types.WrapErr(err)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return types.WrapErr(err)
	}
	return types.String(raw)
}

func jsonUnmarshal(v ref.Val) ref.Val {
	var out any
	if err := json.Unmarshal([]byte(v.(types.String)), &out); err != nil {
		return types.NewErr("json.unmarshal: %v", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(NormalizeNumbers(out))
}

// seededAlphabet and the two seeded functions are kro's
// (pkg/cel/library/random.go), byte for byte: an instance moved from kro
// keeps the passwords, names and ports its RGD derived from a seed.
const seededAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// seededString is kro's random.seededString: character i is read from
// bytes 4i mod 32 of the seed's SHA-256, so the string repeats every 8
// characters, as kro's does.
func seededString(length, seed ref.Val) ref.Val {
	n := int64(length.(types.Int))
	if n <= 0 || n > 4096 {
		return types.NewErr("random.seededString: the length must be from 1 to 4096, not %d", n)
	}
	sum := sha256.Sum256([]byte(seed.(types.String)))
	out := make([]byte, n)
	for i := range out {
		at := (i * 4) % len(sum)
		out[i] = seededAlphabet[binary.BigEndian.Uint32(sum[at:])%uint32(len(seededAlphabet))]
	}
	return types.String(out)
}

// RandomStringOverload is the overload of random.string, whose every call
// gives another value: the compiler allows it only where a value is
// written once (an onCreate template). cel-go's OptOptimize folds no call
// but type conversions, so random.string(24) is not one string per
// program (TestRandomString).
const RandomStringOverload = "inrun_random_string_int"

// randomAlphabet is random.string's: letters and digits, 5.95 bits each.
const randomAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// randomString draws length characters of randomAlphabet from crypto/rand,
// without the bias of a byte taken modulo 62.
func randomString(length ref.Val) ref.Val {
	n := int64(length.(types.Int))
	if n <= 0 || n > 4096 {
		return types.NewErr("random.string: the length must be from 1 to 4096, not %d", n)
	}
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/2)
	for int64(len(out)) < n {
		if _, err := rand.Read(buf); err != nil {
			return types.NewErr("random.string: %v", err)
		}
		for _, b := range buf {
			// 248 = 4×62: the bytes above it would favour the first 8 characters.
			if b < 248 && int64(len(out)) < n {
				out = append(out, randomAlphabet[b%62])
			}
		}
	}
	return types.String(out)
}

// seededInt is kro's random.seededInt: the first 8 bytes of the seed's
// SHA-256, modulo the range.
func seededInt(args ...ref.Val) ref.Val {
	lo, hi := int64(args[0].(types.Int)), int64(args[1].(types.Int))
	if lo >= hi {
		return types.NewErr("random.seededInt: min %d must be less than max %d", lo, hi)
	}
	sum := sha256.Sum256([]byte(args[2].(types.String)))
	return types.Int(lo + int64(binary.BigEndian.Uint64(sum[:8])%uint64(hi-lo)))
}

// mergeMaps returns a map with the entries of a and b; b's win, as in kro
// (pkg/cel/library/maps.go): a user's extraLabels override the defaults
// they are merged into. With deep set, two maps under one key are merged
// the same way.
func mergeMaps(a, b ref.Val, deep bool) ref.Val {
	am, ok1 := a.(traits.Mapper)
	bm, ok2 := b.(traits.Mapper)
	if !ok1 || !ok2 {
		return types.NewErr("merge: no such overload for %s and %s", a.Type(), b.Type())
	}
	am, bm = iterable(am), iterable(bm)
	out := map[ref.Val]ref.Val{}
	for it := am.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		out[k] = am.Get(k)
	}
	for it := bm.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		v := bm.Get(k)
		if old, ok := out[k]; ok && deep {
			_, vm := v.(traits.Mapper)
			_, om := old.(traits.Mapper)
			if vm && om {
				v = mergeMaps(old, v, true)
			}
		}
		out[k] = v
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}

// rawMap is m's JSON object when m is the API server's value of an object
// whose fields its schema does not declare (x-kubernetes-preserve-unknown-
// fields): such a value iterates them as nil keys and finds none of them,
// but converts to its JSON.
func rawMap(m traits.Mapper) (map[string]any, bool) {
	for it := m.Iterator(); it.HasNext() == types.True; {
		if _, ok := it.Next().(types.String); !ok {
			native, err := m.ConvertToNative(reflect.TypeFor[map[string]any]())
			raw, ok := native.(map[string]any)
			if err != nil || !ok {
				return nil, false
			}
			data, err := json.Marshal(raw)
			if err != nil {
				return nil, false
			}
			var out map[string]any
			if json.Unmarshal(data, &out) != nil {
				return nil, false
			}
			return NormalizeNumbers(out).(map[string]any), true
		}
	}
	return nil, false
}

// iterable is m, or its JSON object as a CEL map where m cannot iterate
// its fields (rawMap).
func iterable(m traits.Mapper) traits.Mapper {
	if raw, ok := rawMap(m); ok {
		if mm, ok := types.DefaultTypeAdapter.NativeToValue(raw).(traits.Mapper); ok {
			return mm
		}
	}
	return m
}

func omit(m, keys ref.Val) ref.Val {
	mm, ok := m.(traits.Mapper)
	kl, ok2 := keys.(traits.Lister)
	if !ok || !ok2 {
		return types.NewErr("omit: no such overload for %s and %s", m.Type(), keys.Type())
	}
	drop := map[ref.Val]bool{}
	for it := kl.Iterator(); it.HasNext() == types.True; {
		drop[it.Next()] = true
	}
	out := map[ref.Val]ref.Val{}
	for it := mm.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		if !drop[k] {
			out[k] = mm.Get(k)
		}
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}
