package jsonlite

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	A int     `json:"a"`
	B float64 `json:"b,omitempty"`
}

type embedded struct {
	Lifted string `json:"lifted"`
	Shadow string `json:"shadow"`
}

type sample struct {
	embedded
	Shadow   int               `json:"shadow"`
	Name     string            `json:"name"`
	Skip     string            `json:"-"`
	NoTag    bool              //
	Opt      string            `json:"opt,omitempty"`
	Ptr      *float64          `json:"ptr"`
	NilPtr   *float64          `json:"nil_ptr"`
	List     []int             `json:"list"`
	NilList  []int             `json:"nil_list"`
	Empty    []int             `json:"empty,omitempty"`
	Map      map[string]string `json:"map"`
	Any      any               `json:"any"`
	AnyMap   map[string]any    `json:"any_map"`
	Inner    inner             `json:"inner"`
	Inners   []*inner          `json:"inners"`
	Arr      [2]uint8          `json:"arr"`
	F32      float32           `json:"f32"`
	unexport int
}

// Marshal writes encoding/json.Marshal's bytes.
func TestMarshalMatchesEncodingJSON(t *testing.T) {
	f := 1.5
	values := []any{
		nil, true, false, 0, -7, uint64(math.MaxUint64), int64(math.MinInt64),
		0.0, -0.0, 1.0, 0.1, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, -3.5e-9, 5e-324, math.MaxFloat64,
		"", "plain", "quote \" backslash \\ slash /", "<a href='x'>&</a>", "\b\f\n\r\t\x00\x1f\x7f",
		"é 한국어 µs ≈ ±", "\u2028\u2029", "bad \xff utf8 \xc3", "\U0001F600",
		[]string{"a", "b"}, []any{1.0, "x", nil, []any{}}, map[string]int{"b": 2, "a": 1, "": 0},
		map[string]any{"z": map[string]any{"y": []any{true}}}, []float64{}, map[string]bool{},
		sample{
			embedded: embedded{Lifted: "l", Shadow: "hidden"}, Shadow: 3, Name: "n", Skip: "s", NoTag: true,
			Ptr: &f, List: []int{1, 2}, Map: map[string]string{"k": "v", "a": "<"}, Any: 2.5,
			AnyMap: map[string]any{"x": nil}, Inner: inner{A: 1}, Inners: []*inner{{A: 2, B: 0.25}, nil},
			Arr: [2]uint8{1, 2}, F32: 0.1,
		},
		sample{},
		&sample{Opt: "o", Empty: []int{0}},
		[]float32{1e-7, 3.4e38},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encoding/json %#v: %v", v, err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Errorf("Marshal(%#v): %v", v, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("Marshal(%#v)\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestMarshalRefuses(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), []byte("x"), map[int]int{1: 1}, func() {}, make(chan int)} {
		if b, err := Marshal(v); err == nil {
			t.Errorf("Marshal(%T) = %s, want an error", v, b)
		}
	}
	type loop struct{ Next any }
	l := &loop{}
	l.Next = l
	if _, err := Marshal(l); err == nil {
		t.Error("a cycle: no error")
	}
}

// Decode gives what encoding/json gives an `any`, and refuses what it
// refuses.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`null`, `true`, ` false `, `0`, `-0`, `12.5e3`, `-1E-2`, `1e400`, `""`, `"a\"b\\c\/d\b\f\n\r\t"`,
		`"\u00e9\u2028\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800x"`, "\"raw \xff byte\"",
		`[]`, `[1, "x", [null], {}]`, `{"a": 1, "b": {"c": [true, false]}, "a": 2}`, `{}`, "\t{ \"k\" :\n\"v\" }\r\n",
		`01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"abc`, "\"ctl\x01\"", `"\x"`, `"\u12"`, `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `{1:2}`, `[1 2]`, `1 2`, ``, ` `, `NaN`, `"é"`,
	} {
		var want any
		werr := json.Unmarshal([]byte(in), &want)
		got, gerr := Decode([]byte(in))
		if (werr == nil) != (gerr == nil) {
			t.Errorf("Decode(%q): error %v, encoding/json's %v", in, gerr, werr)
			continue
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%q) = %#v, encoding/json gives %#v", in, got, want)
		}
	}
	if _, err := Decode([]byte(strings.Repeat("[", 2000) + strings.Repeat("]", 2000))); err == nil {
		t.Error("2000 nested arrays: no error")
	}
}

// decodable has every kind Unmarshal fills.
type decodable struct {
	embedded
	Shadow int            `json:"shadow"`
	Name   string         `json:"name"`
	Skip   string         `json:"-"`
	NoTag  bool           //
	Ptr    *float64       `json:"ptr"`
	NilPtr *float64       `json:"nil_ptr"`
	List   []int          `json:"list"`
	Map    map[string]any `json:"map"`
	Any    any            `json:"any"`
	Inner  inner          `json:"inner"`
	Inners []*inner       `json:"inners"`
	U32    uint32         `json:"u32"`
	I64    int64          `json:"i64"`
}

// Unmarshal fills structs as encoding/json does and names the path of a
// value that does not fit.
func TestUnmarshal(t *testing.T) {
	in := `{"lifted":"l","shadow":3,"name":"n","NoTag":true,"ptr":1.5,"nil_ptr":null,"list":[1,2],"map":{"k":"v"},
"any":{"x":[1]},"inner":{"a":4},"inners":[{"a":5,"b":0.5},null],"u32":4000000000,"i64":-9007199254740991,"unknown":1}`
	var want, got decodable
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if err := Unmarshal([]byte(in), &got, Options{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, c := range []struct{ in, err string }{
		{`{"unknown":1}`, "unknown: unknown field"},
		{`{"inners":[{"a":"x"}]}`, "inners[0].a: want a whole number"},
		{`{"list":[1.5]}`, "list[0]: want a whole number"},
		{`{"name":1}`, "name: want a string, got a number"},
		{`{"map":[]}`, "map: want an object"},
		{`{"u32":5000000000}`, "u32: want a whole number that fits uint32"},
		{`[1]`, "want an object, got an array"},
	} {
		var s decodable
		err := Unmarshal([]byte(c.in), &s, Options{DisallowUnknown: true})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Unmarshal(%s): %v, want %q", c.in, err, c.err)
		}
	}
	var n int32
	if err := Unmarshal([]byte(`3e9`), &n, Options{}); err == nil {
		t.Error("3e9 into an int32: no error")
	}
	var u uint64
	if err := Unmarshal([]byte(`-1`), &u, Options{}); err == nil {
		t.Error("-1 into a uint64: no error")
	}
	var m map[string]string
	if err := Unmarshal([]byte(`{}`), &m, Options{}); err == nil {
		t.Error("a map[string]string: no error (Unmarshal keeps only map[string]any)")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",null,true]}`, `"\ud83d\ude00"`, `-1.5e-3`, `[[]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var want any
		werr := json.Unmarshal([]byte(in), &want)
		got, gerr := Decode([]byte(in))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Decode(%q): error %v, encoding/json's %v", in, gerr, werr)
		}
		if werr != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %#v, encoding/json gives %#v", in, got, want)
		}
		a, err := Marshal(got)
		b, _ := json.Marshal(want)
		if err != nil || string(a) != string(b) {
			t.Fatalf("Marshal(Decode(%q)) = %s (%v), encoding/json gives %s", in, a, err, b)
		}
	})
}
