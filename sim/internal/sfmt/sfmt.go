// Package sfmt formats messages as package fmt does, for the verbs and
// values the model's messages use, without linking fmt: fmt (with os and
// its reflection printer) is about a tenth of the page's .wasm, compressed.
//
// Verbs: %v %s %q %d %c %f %e %g %T, %w in Errorf, %% and the flag # with
// %v; a precision with %f %e %g on a number (%.0f). Values: nil, errors and Stringers (for %v %s %q),
// booleans, numbers, strings and slices of these; a verb that does not fit
// the value prints as fmt's %!d(TYPE=…). Other kinds (maps, structs,
// pointers) print as %!v(TYPE). The tests compare with fmt.
package sfmt

import (
	"reflect"
	"strconv"
	"strings"
)

// Sprintf formats as fmt.Sprintf.
func Sprintf(format string, a ...any) string {
	s, _ := sprintf(format, a, false)
	return s
}

// Sprint formats one value as fmt.Sprint does.
func Sprint(a any) string {
	var b strings.Builder
	value(&b, 'v', false, -1, a, 0)
	return b.String()
}

// Errorf formats as fmt.Errorf: an error whose Unwrap gives the %w
// operands that are errors (one: Unwrap() error; several: Unwrap() []error).
func Errorf(format string, a ...any) error {
	s, wrapped := sprintf(format, a, true)
	switch len(wrapped) {
	case 0:
		return &plainError{s}
	case 1:
		return &wrapError{s, wrapped[0]}
	}
	return &wrapErrors{s, wrapped}
}

type plainError struct{ msg string }

func (e *plainError) Error() string { return e.msg }

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

type wrapErrors struct {
	msg  string
	errs []error
}

func (e *wrapErrors) Error() string   { return e.msg }
func (e *wrapErrors) Unwrap() []error { return e.errs }

func sprintf(format string, a []any, wrap bool) (string, []error) {
	var b strings.Builder
	var wrapped []error
	arg := 0
	for i := 0; i < len(format); {
		c := format[i]
		if c != '%' {
			j := strings.IndexByte(format[i:], '%')
			if j < 0 {
				j = len(format) - i
			}
			b.WriteString(format[i : i+j])
			i += j
			continue
		}
		i++
		sharp := false
		for i < len(format) && format[i] == '#' {
			sharp = true
			i++
		}
		prec := -1
		if i < len(format) && format[i] == '.' {
			i++
			prec = 0
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				prec = prec*10 + int(format[i]-'0')
				i++
			}
		}
		if i >= len(format) {
			b.WriteString("%!(NOVERB)")
			break
		}
		verb := rune(format[i])
		if verb >= 0x80 {
			r, n := decodeRune(format[i:])
			verb = r
			i += n
		} else {
			i++
		}
		sharp = sharp && verb == 'v'
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if arg >= len(a) {
			b.WriteString("%!")
			b.WriteRune(verb)
			b.WriteString("(MISSING)")
			continue
		}
		x := a[arg]
		arg++
		if verb == 'w' && wrap {
			if err, ok := x.(error); ok {
				wrapped = append(wrapped, err)
				verb = 'v'
			}
		}
		value(&b, verb, sharp, prec, x, 0)
	}
	if arg < len(a) {
		b.WriteString("%!(EXTRA ")
		for k, x := range a[arg:] {
			if k > 0 {
				b.WriteString(", ")
			}
			if x == nil {
				b.WriteString("<nil>")
			} else {
				b.WriteString(reflect.TypeOf(x).String())
				b.WriteByte('=')
				value(&b, 'v', false, -1, x, 0)
			}
		}
		b.WriteByte(')')
	}
	return b.String(), wrapped
}

func decodeRune(s string) (rune, int) {
	for _, r := range s {
		n := len(string(r))
		return r, n
	}
	return 0xFFFD, 1
}

// value writes x as fmt does for verb: methods first (Error, then String,
// for %v %s %q), then by kind.
func value(b *strings.Builder, verb rune, sharp bool, prec int, x any, depth int) {
	if x == nil {
		switch {
		case verb == 'T' || verb == 'v':
			b.WriteString("<nil>")
		default:
			badVerb(b, verb, nil)
		}
		return
	}
	if verb == 'T' {
		b.WriteString(reflect.TypeOf(x).String())
		return
	}
	if !sharp && (verb == 'v' || verb == 's' || verb == 'q') {
		switch m := x.(type) {
		case error:
			str(b, verb, m.Error())
			return
		case interface{ String() string }:
			str(b, verb, m.String())
			return
		}
	}
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Bool:
		if verb != 'v' && verb != 't' {
			badVerb(b, verb, x)
			return
		}
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		integer(b, verb, sharp, x, v.Int(), false)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		integer(b, verb, sharp, x, int64(v.Uint()), true)
	case reflect.Float32, reflect.Float64:
		size := 64
		if v.Kind() == reflect.Float32 {
			size = 32
		}
		switch verb {
		case 'v', 'g':
			b.WriteString(strconv.FormatFloat(v.Float(), 'g', prec, size))
		case 'f', 'e':
			if prec < 0 {
				prec = 6
			}
			b.WriteString(strconv.FormatFloat(v.Float(), byte(verb), prec, size))
		default:
			badVerb(b, verb, x)
		}
	case reflect.String:
		if sharp && verb == 'v' {
			b.WriteString(strconv.Quote(v.String()))
			return
		}
		if verb != 'v' && verb != 's' && verb != 'q' {
			badVerb(b, verb, x)
			return
		}
		str(b, verb, v.String())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 && (verb == 's' || verb == 'q') {
			str(b, verb, string(v.Bytes()))
			return
		}
		if sharp {
			if verb != 'v' {
				badVerb(b, verb, x)
				return
			}
			b.WriteString(v.Type().String())
			b.WriteByte('{')
			for i := range v.Len() {
				if i > 0 {
					b.WriteString(", ")
				}
				if e := elem(v.Index(i)); e != nil {
					value(b, verb, sharp, prec, e, depth+1)
				} else {
					b.WriteString(v.Type().Elem().String() + "(nil)")
				}
			}
			b.WriteByte('}')
			return
		}
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(' ')
			}
			value(b, verb, sharp, prec, elem(v.Index(i)), depth+1)
		}
		b.WriteByte(']')
	default:
		// Maps, structs, pointers…: fmt's printer is what this package
		// leaves out; the type says what was passed.
		b.WriteString("%!")
		b.WriteRune(verb)
		b.WriteString("(" + v.Type().String() + ")")
	}
}

// elem is a slice's element as an operand: an interface's content, nil
// for a nil interface.
func elem(v reflect.Value) any {
	if v.Kind() == reflect.Interface && v.IsNil() {
		return nil
	}
	return v.Interface()
}

func integer(b *strings.Builder, verb rune, sharp bool, x any, n int64, unsigned bool) {
	switch verb {
	case 'v', 'd':
		if sharp && verb == 'v' && unsigned {
			b.WriteString("0x" + strconv.FormatUint(uint64(n), 16))
			return
		}
		if unsigned {
			b.WriteString(strconv.FormatUint(uint64(n), 10))
		} else {
			b.WriteString(strconv.FormatInt(n, 10))
		}
	case 'c':
		b.WriteRune(rune(n))
	case 'q':
		b.WriteString(strconv.QuoteRune(rune(n)))
	default:
		badVerb(b, verb, x)
	}
}

func str(b *strings.Builder, verb rune, s string) {
	if verb == 'q' {
		b.WriteString(strconv.Quote(s))
		return
	}
	b.WriteString(s)
}

// badVerb writes what fmt writes for a verb that does not fit the value.
func badVerb(b *strings.Builder, verb rune, x any) {
	b.WriteString("%!")
	b.WriteRune(verb)
	b.WriteByte('(')
	if x == nil {
		b.WriteString("<nil>")
	} else {
		b.WriteString(reflect.TypeOf(x).String())
		b.WriteByte('=')
		value(b, 'v', false, -1, x, 0)
	}
	b.WriteByte(')')
}

// Clip shortens s to at most n bytes (on a rune boundary), marking a cut
// with "…", so that a message that echoes what a client sent does not grow
// with it.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	mark := "…"
	if n < len(mark) {
		mark = ""
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + mark
}
