// Package jsonlite writes and reads JSON the way encoding/json does, for the
// types connlab exchanges, without encoding/json: the WebAssembly model of
// the pages (sim/wasm) would be half as large again with it. Marshal gives
// encoding/json.Marshal's bytes (a test holds the two together); Decode reads
// any JSON text into the values encoding/json gives an `any` (map[string]any,
// []any, string, float64, bool, nil), and Unmarshal assigns them to a Go
// value through its json tags.
//
// Supported: booleans, integers, floats, strings, structs (json tags, with
// omitempty, "-" and lifted embedded structs), pointers, slices, arrays,
// maps with string keys and interfaces. Other kinds are an error.
package jsonlite

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Marshal returns the JSON encoding of v, as encoding/json.Marshal does.
func Marshal(v any) ([]byte, error) {
	return Append(nil, v)
}

// Append appends the JSON encoding of v to b.
func Append(b []byte, v any) ([]byte, error) {
	return appendValue(b, reflect.ValueOf(v), 0)
}

// maxDepth bounds nesting, so a cycle is an error, not a stack overflow.
const maxDepth = 1000

var errDepth = errors.New("jsonlite: value nested too deep (a cycle?)")

func appendValue(b []byte, v reflect.Value, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, errDepth
	}
	if !v.IsValid() {
		return append(b, "null"...), nil
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return appendFloat(b, v.Float(), v.Type().Bits())
	case reflect.String:
		return AppendString(b, v.String()), nil
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		return appendValue(b, v.Elem(), depth+1)
	case reflect.Slice:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return b, errors.New("jsonlite: []byte is not supported")
		}
		fallthrough
	case reflect.Array:
		b = append(b, '[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, v.Index(i), depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case reflect.Map:
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return b, errors.New("jsonlite: map keys must be strings, not " + v.Type().Key().String())
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k.String())
			b = append(b, ':')
			var err error
			if b, err = appendValue(b, v.MapIndex(k), depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case reflect.Struct:
		b = append(b, '{')
		first := true
		for _, f := range fieldsOf(v.Type()) {
			fv, err := v.FieldByIndexErr(f.index)
			if err != nil {
				continue // through a nil embedded pointer, as encoding/json
			}
			if f.omitEmpty && isEmpty(fv) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendString(b, f.name)
			b = append(b, ':')
			if b, err = appendValue(b, fv, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return b, errors.New("jsonlite: unsupported type " + v.Type().String())
}

// appendFloat writes f as encoding/json does: like ES6's number to string,
// %f between 1e-6 and 1e21, else %e with the exponent unpadded.
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, errors.New("jsonlite: unsupported value: " + strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// AppendString appends s as a JSON string, escaped as encoding/json.Marshal
// escapes it (HTML's <, > and & too).
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// field is one JSON key of a struct type.
type field struct {
	name      string
	index     []int
	omitEmpty bool
}

// fieldCache holds fieldsOf's answer per struct type: reflecting over the
// tags was a third of the page model's time on a small run.
var (
	fieldMu    sync.Mutex
	fieldCache = map[reflect.Type][]field{}
)

// fieldsOf lists t's JSON keys in encoding/json's order: fields in order,
// an untagged embedded struct's fields in its place. A name written twice
// at the same depth is left out, as encoding/json leaves it out; the
// shallower one wins.
func fieldsOf(t reflect.Type) []field {
	fieldMu.Lock()
	defer fieldMu.Unlock()
	f, ok := fieldCache[t]
	if !ok {
		f = structFields(t)
		fieldCache[t] = f
	}
	return f
}

func structFields(t reflect.Type) []field {
	var all []field
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			all = append(all, field{name: name, index: idx, omitEmpty: hasOpt(opts, "omitempty")})
		}
	}
	walk(t, nil)
	out := all[:0:0]
	for _, f := range all {
		keep := true
		for _, g := range all {
			if g.name == f.name && (len(g.index) < len(f.index) || (len(g.index) == len(f.index) && !slices.Equal(g.index, f.index))) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}

func hasOpt(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}
