package jsonlite

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// A SyntaxError is JSON text that is not valid, at byte Offset.
type SyntaxError struct {
	Msg    string
	Offset int
}

func (e *SyntaxError) Error() string {
	return "invalid JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Decode reads one JSON value (and nothing after it but white space) into
// the values encoding/json gives an `any`: map[string]any, []any, string,
// float64, bool or nil. A repeated key keeps its last value.
func Decode(data []byte) (any, error) {
	d := decoder{s: data}
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i < len(d.s) {
		return nil, d.fail("want one JSON value, found more after it")
	}
	return v, nil
}

type decoder struct {
	s []byte
	i int
}

func (d *decoder) fail(msg string) error { return &SyntaxError{Msg: msg, Offset: d.i} }

func (d *decoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, d.fail("nested too deep")
	}
	if d.i >= len(d.s) {
		return nil, d.fail("unexpected end of input")
	}
	switch c := d.s[d.i]; {
	case c == '{':
		d.i++
		m := map[string]any{}
		d.space()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return m, nil
		}
		for {
			d.space()
			if d.i >= len(d.s) || d.s[d.i] != '"' {
				return nil, d.fail("want a string key")
			}
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			d.space()
			if d.i >= len(d.s) || d.s[d.i] != ':' {
				return nil, d.fail("want ':' after a key")
			}
			d.i++
			d.space()
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[k] = v
			d.space()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == '}' {
				d.i++
				return m, nil
			}
			return nil, d.fail("want ',' or '}' in an object")
		}
	case c == '[':
		d.i++
		a := []any{}
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return a, nil
		}
		for {
			d.space()
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			d.space()
			if d.i < len(d.s) && d.s[d.i] == ',' {
				d.i++
				continue
			}
			if d.i < len(d.s) && d.s[d.i] == ']' {
				d.i++
				return a, nil
			}
			return nil, d.fail("want ',' or ']' in an array")
		}
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.word("true")
	case c == 'f':
		return false, d.word("false")
	case c == 'n':
		return nil, d.word("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, d.fail(msgf.Sprintf("unexpected %q", d.s[d.i]))
}

func (d *decoder) word(w string) error {
	if len(d.s)-d.i < len(w) || string(d.s[d.i:d.i+len(w)]) != w {
		return d.fail("want " + w)
	}
	d.i += len(w)
	return nil
}

// number reads a number of JSON's grammar as a float64.
func (d *decoder) number() (any, error) {
	start := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.s[d.i] == '-' {
		d.i++
	}
	if d.i < len(d.s) && d.s[d.i] == '0' {
		d.i++
	} else if digits() == 0 {
		return nil, d.fail("want a digit")
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, d.fail("want a digit after '.'")
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.fail("want a digit in the exponent")
		}
	}
	f, err := strconv.ParseFloat(string(d.s[start:d.i]), 64)
	if err != nil {
		d.i = start
		return nil, d.fail("number out of range")
	}
	return f, nil
}

// str reads a string at d.i (a '"'), with JSON's escapes; invalid UTF-8
// and lone surrogates become U+FFFD, as encoding/json makes them.
func (d *decoder) str() (string, error) {
	d.i++
	start := d.i
	for d.i < len(d.s) {
		c := d.s[d.i]
		if c == '"' {
			s := d.s[start:d.i]
			d.i++
			if utf8.Valid(s) {
				return string(s), nil
			}
			return string([]rune(string(s))), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		d.i++
	}
	b := append([]byte(nil), d.s[start:d.i]...)
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(b) {
				return string([]rune(string(b))), nil
			}
			return string(b), nil
		case c < 0x20:
			return "", d.fail("control character in a string")
		case c == '\\':
			d.i++
			if d.i >= len(d.s) {
				return "", d.fail("unfinished escape")
			}
			e := d.s[d.i]
			d.i++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.fail("want four hex digits after \\u")
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if d.i+1 < len(d.s) && d.s[d.i] == '\\' && d.s[d.i+1] == 'u' {
						save := d.i
						d.i += 2
						if x, ok := d.hex4(); ok {
							if dec := utf16.DecodeRune(r, x); dec != utf8.RuneError {
								r2 = dec
							} else {
								d.i = save
							}
						} else {
							d.i = save
						}
					}
					r = r2
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", d.fail(msgf.Sprintf("invalid escape \\%c", e))
			}
		default:
			b = append(b, c)
			d.i++
		}
	}
	return "", d.fail("unfinished string")
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.s)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.s[d.i : d.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r*16 + rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r*16 + rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r*16 + rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

// Options of Unmarshal.
type Options struct {
	// DisallowUnknown makes a key that no field of the struct has an error,
	// as encoding/json.Decoder.DisallowUnknownFields does.
	DisallowUnknown bool
}

// Unmarshal reads one JSON value into the value v points to, through
// struct fields' json tags. The error names the key path at fault.
func Unmarshal(data []byte, v any, opt Options) error {
	x, err := Decode(data)
	if err != nil {
		return err
	}
	return Assign(v, x, opt)
}

// Assign sets the value v points to from a decoded value (Decode's
// result). It fills booleans, strings, float64, int, int32, int64, uint,
// uint32, uint64, structs, pointers, slices, interfaces and map[string]any
// (which it keeps as decoded); other types are an error.
func Assign(v any, x any, opt Options) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("jsonlite: Assign needs a non-nil pointer")
	}
	return assign(rv.Elem(), x, "", opt)
}

// A TypeError is a JSON value that does not fit the Go field at Path.
type TypeError struct {
	Path string // "variants[2].name"
	Msg  string
}

func (e *TypeError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func describe(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return msgf.Sprintf("%T", x)
}

func assign(v reflect.Value, x any, path string, opt Options) error {
	bad := func(want string) error {
		return &TypeError{Path: path, Msg: "want " + want + ", got " + describe(x)}
	}
	if x == nil {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
			v.SetZero()
		}
		return nil // encoding/json leaves other kinds as they are
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return bad("a value for " + v.Type().String())
		}
		v.Set(reflect.ValueOf(x))
		return nil
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return assign(v.Elem(), x, path, opt)
	case reflect.Bool:
		b, ok := x.(bool)
		if !ok {
			return bad("a boolean")
		}
		v.SetBool(b)
		return nil
	case reflect.String:
		s, ok := x.(string)
		if !ok {
			return bad("a string")
		}
		v.SetString(s)
		return nil
	case reflect.Float64:
		f, ok := x.(float64)
		if !ok {
			return bad("a number")
		}
		v.SetFloat(f)
		return nil
	case reflect.Int, reflect.Int32, reflect.Int64:
		f, ok := x.(float64)
		lim := math.Ldexp(1, v.Type().Bits()-1)
		if !ok || f != math.Trunc(f) || f < -lim || f >= lim {
			return bad("a whole number that fits " + v.Type().String())
		}
		v.SetInt(int64(f))
		return nil
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		f, ok := x.(float64)
		if !ok || f != math.Trunc(f) || f < 0 || f >= math.Ldexp(1, v.Type().Bits()) {
			return bad("a whole number that fits " + v.Type().String())
		}
		v.SetUint(uint64(f))
		return nil
	case reflect.Slice:
		a, ok := x.([]any)
		if !ok {
			return bad("an array")
		}
		s := reflect.MakeSlice(v.Type(), len(a), len(a))
		for i, e := range a {
			if err := assign(s.Index(i), e, path+"["+strconv.Itoa(i)+"]", opt); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		m, ok := x.(map[string]any)
		if !ok {
			return bad("an object")
		}
		if v.Type() != anyMapType {
			break
		}
		v.Set(reflect.ValueOf(m))
		return nil
	case reflect.Struct:
		m, ok := x.(map[string]any)
		if !ok {
			return bad("an object")
		}
		fields := fieldsOf(v.Type())
		for k, e := range m {
			var f *field
			for i := range fields {
				if fields[i].name == k {
					f = &fields[i]
					break
				}
			}
			if f == nil {
				if opt.DisallowUnknown {
					return &TypeError{Path: join(path, k), Msg: "unknown field"}
				}
				continue
			}
			fv, err := v.FieldByIndexErr(f.index)
			if err != nil {
				return &TypeError{Path: join(path, k), Msg: "jsonlite: field behind a nil embedded pointer"}
			}
			if err := assign(fv, e, join(path, k), opt); err != nil {
				return err
			}
		}
		return nil
	}
	return &TypeError{Path: path, Msg: "jsonlite: unsupported type " + v.Type().String()}
}

var anyMapType = reflect.TypeFor[map[string]any]()

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
