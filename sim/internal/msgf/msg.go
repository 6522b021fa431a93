// Package msgf formats the model's messages: Sprintf, Sprint and Errorf,
// as package fmt does them. Native builds call fmt itself. The page's
// WebAssembly model (GOOS=js) uses the small formatter here instead:
// linking fmt (and the os package it brings) added tens of kilobytes to
// the compressed .wasm that every reader of a lab page downloads. It knows the
// verbs the model's messages use (%v %s %q %d %c %T %w %t %x, %f %g %e
// with a precision, the flags # and -, a width) for the kinds of values
// they print, and writes what fmt writes for them (msg_test.go holds it
// to fmt, case by case, and to the verbs those packages write).
package msgf

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// sprintf formats as fmt.Sprintf does; with wrap, as fmt.Errorf does,
// returning the errors of its %w verbs.
func sprintf(format string, args []any, wrap bool) (string, []error) {
	var b strings.Builder
	var wrapped []error
	n := 0
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
		if i < len(format) && format[i] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		var sp spec
		for ; i < len(format); i++ {
			switch format[i] {
			case '#':
				sp.sharp = true
			case '-':
				sp.minus = true
			case '0':
				sp.zero = true
			case '+', ' ':
			default:
				goto width
			}
		}
	width:
		for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
			sp.width = sp.width*10 + int(format[i]-'0')
		}
		if i < len(format) && format[i] == '.' {
			sp.hasPrec = true
			for i++; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
				sp.prec = sp.prec*10 + int(format[i]-'0')
			}
		}
		if i >= len(format) {
			b.WriteString("%!(NOVERB)")
			break
		}
		sp.verb = rune(format[i])
		i++
		if n >= len(args) {
			b.WriteString("%!" + string(sp.verb) + "(MISSING)")
			continue
		}
		arg := args[n]
		n++
		if sp.verb == 'w' && wrap {
			if err, ok := arg.(error); ok {
				wrapped = append(wrapped, err)
				sp.verb = 'v'
			}
		}
		b.WriteString(sp.pad(sp.format(arg)))
	}
	if n < len(args) {
		b.WriteString("%!(EXTRA ")
		for k, a := range args[n:] {
			if k > 0 {
				b.WriteString(", ")
			}
			if a == nil {
				b.WriteString("<nil>")
				continue
			}
			b.WriteString(reflect.TypeOf(a).String() + "=" + plain(a))
		}
		b.WriteByte(')')
	}
	return b.String(), wrapped
}

// sprint formats as fmt.Sprint does: spaces between operands when neither
// side is a string.
func sprint(args []any) string {
	var b strings.Builder
	isString := func(a any) bool { return a != nil && reflect.TypeOf(a).Kind() == reflect.String }
	for k, a := range args {
		if k > 0 && !isString(a) && !isString(args[k-1]) {
			b.WriteByte(' ')
		}
		b.WriteString(plain(a))
	}
	return b.String()
}

// errorf is fmt.Errorf: the error wraps the arguments of its %w verbs.
func errorf(format string, args []any) error {
	s, wrapped := sprintf(format, args, true)
	switch len(wrapped) {
	case 0:
		return errors.New(s)
	case 1:
		return &wrapError{s, wrapped[0]}
	}
	return &wrapErrors{s, wrapped}
}

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

// spec is one verb with its flags.
type spec struct {
	verb               rune
	sharp, minus, zero bool
	width, prec        int
	hasPrec            bool
}

func (sp spec) pad(s string) string {
	n := len([]rune(s))
	if sp.width <= n {
		return s
	}
	fill := strings.Repeat(" ", sp.width-n)
	switch {
	case sp.minus:
		return s + fill
	case sp.zero && sp.verb != 's' && sp.verb != 'q' && sp.verb != 'v':
		zeros := strings.Repeat("0", sp.width-n)
		if strings.HasPrefix(s, "-") {
			return "-" + zeros + s[1:]
		}
		return zeros + s
	}
	return fill + s
}

// plain is %v.
func plain(a any) string { return spec{verb: 'v'}.format(a) }

func (sp spec) format(a any) string {
	if sp.verb == 'T' {
		if a == nil {
			return "<nil>"
		}
		return reflect.TypeOf(a).String()
	}
	if a == nil {
		if sp.verb == 'v' {
			return "<nil>"
		}
		return sp.bad(a)
	}
	switch sp.verb {
	case 'v', 's', 'q':
		if sp.verb == 'v' && sp.sharp {
			break // Go syntax, below
		}
		switch x := a.(type) {
		case error:
			return sp.text(x.Error())
		case interface{ String() string }:
			return sp.text(x.String())
		}
	}
	switch x := a.(type) {
	case string:
		if sp.verb == 'v' && sp.sharp {
			return strconv.Quote(x)
		}
		if sp.verb == 'v' || sp.verb == 's' || sp.verb == 'q' {
			return sp.text(x)
		}
	case bool:
		if sp.verb == 'v' || sp.verb == 't' {
			return strconv.FormatBool(x)
		}
	case int:
		return sp.integer(int64(x), a)
	case int64:
		return sp.integer(x, a)
	case int32:
		return sp.integer(int64(x), a)
	case uint64:
		return sp.unsigned(x, a)
	case uint:
		return sp.unsigned(uint64(x), a)
	case float64:
		return sp.float(x, 64, a)
	case float32:
		return sp.float(float64(x), 32, a)
	default:
		return sp.reflected(reflect.ValueOf(a), a)
	}
	return sp.bad(a)
}

// text is a string under %v, %s or %q.
func (sp spec) text(s string) string {
	if sp.hasPrec && sp.prec < len([]rune(s)) {
		s = string([]rune(s)[:sp.prec])
	}
	if sp.verb == 'q' {
		return strconv.Quote(s)
	}
	return s
}

func (sp spec) integer(v int64, a any) string {
	switch sp.verb {
	case 'v', 'd':
		return strconv.FormatInt(v, 10)
	case 'x':
		return strconv.FormatInt(v, 16)
	case 'c':
		return string(rune(v))
	case 'q':
		return strconv.QuoteRune(rune(v))
	}
	return sp.bad(a)
}

func (sp spec) unsigned(v uint64, a any) string {
	switch sp.verb {
	case 'v', 'd':
		return strconv.FormatUint(v, 10)
	case 'x':
		return strconv.FormatUint(v, 16)
	}
	return sp.bad(a)
}

func (sp spec) float(v float64, bits int, a any) string {
	prec := -1
	if sp.hasPrec {
		prec = sp.prec
	}
	switch sp.verb {
	case 'v', 'g':
		return strconv.FormatFloat(v, 'g', prec, bits)
	case 'f', 'e':
		if !sp.hasPrec {
			prec = 6
		}
		return strconv.FormatFloat(v, byte(sp.verb), prec, bits)
	}
	return sp.bad(a)
}

// reflected formats what has no case of its own: a named type of a basic
// kind, a slice or array, a struct, a pointer.
func (sp spec) reflected(v reflect.Value, a any) string {
	switch v.Kind() {
	case reflect.String:
		return sp.format(v.String())
	case reflect.Bool:
		return sp.format(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return sp.format(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return sp.format(v.Uint())
	case reflect.Float32, reflect.Float64:
		return sp.format(v.Float())
	case reflect.Slice, reflect.Array:
		if strings.ContainsRune("vsqd", sp.verb) {
			return sp.elements("[", v.Len(), v.Index, "]")
		}
	case reflect.Struct:
		if sp.verb == 'v' {
			return sp.elements("{", v.NumField(), v.Field, "}")
		}
	case reflect.Pointer:
		if v.IsNil() {
			return "<nil>"
		}
		if e := v.Elem(); e.Kind() == reflect.Struct && sp.verb == 'v' {
			return "&" + sp.reflected(e, e.Interface())
		}
		return "0x" + strconv.FormatUint(uint64(v.Pointer()), 16)
	case reflect.Interface:
		if v.IsNil() {
			return "<nil>"
		}
	}
	return sp.bad(a)
}

// elements formats the n elements of a slice or fields of a struct, each
// with the verb (but neither width nor Go syntax), between open and close.
func (sp spec) elements(open string, n int, at func(int) reflect.Value, close string) string {
	parts := make([]string, n)
	each := spec{verb: sp.verb, prec: sp.prec, hasPrec: sp.hasPrec}
	for k := range parts {
		if v := at(k); v.CanInterface() {
			parts[k] = each.format(v.Interface())
		} else {
			parts[k] = "?"
		}
	}
	return open + strings.Join(parts, " ") + close
}

// bad is fmt's report of a verb that does not fit its operand.
func (sp spec) bad(a any) string {
	if a == nil {
		return "%!" + string(sp.verb) + "(<nil>)"
	}
	if sp.verb == 'v' { // a kind this formatter does not write (map, chan, func)
		return "%!v(" + reflect.TypeOf(a).String() + ")"
	}
	return "%!" + string(sp.verb) + "(" + reflect.TypeOf(a).String() + "=" + plain(a) + ")"
}
