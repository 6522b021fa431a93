package sfmt

import (
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"time"
)

type kind int

func (k kind) String() string { return "kind" + fmt.Sprint(int(k)) }

type name string

// wrapVerb is a variable so that vet does not stop a test of a bad %w.
var wrapVerb = "%w"

type cases []struct {
	format string
	args   []any
}

// Every verb and value the model's messages use, and the bad ones, print
// as fmt prints them.
func TestSameAsFmt(t *testing.T) {
	err := errors.New("boom")
	for _, c := range (cases{
		{"plain text", nil},
		{"100%% sure", nil},
		{"%d-%d", []any{1, 65535}},
		{"%d %d %d", []any{int64(-3), uint64(1 << 63), uint8(7)}},
		{"%d", []any{kind(3)}},
		{"%v and %s", []any{kind(3), kind(4)}},
		{"%q", []any{"a \"quoted\"\n"}},
		{"%q", []any{[]string{"a", "b c"}}},
		{"%q", []any{[]string(nil)}},
		{"%v", []any{[]string{"a", "b"}}},
		{"%s", []any{[]string{"a", "b"}}},
		{"%v", []any{[]float64{1, 2.5, 1e21, 1e-7}}},
		{"%v %v %v %v", []any{1.0, 0.1, 1e6, 123456789.0}},
		{"%v %v %v %v", []any{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1)}},
		{"%v", []any{float32(0.1)}},
		{"%g %e %f %.0f %.2f", []any{2.5, 2.5, 2.5, 2.5, 2.345}},
		{"%.0f", []any{1e7}},
		{"%v %v", []any{true, false}},
		{"%s", []any{err}},
		{"%v", []any{err}},
		{"%q", []any{err}},
		{"%s", []any{3 * time.Millisecond}},
		{"%v", []any{[]time.Duration{time.Second, time.Millisecond}}},
		{"%v", []any{nil}},
		{"%s", []any{nil}},
		{"%d", []any{nil}},
		{"%T %T %T %T", []any{nil, 1, []any{}, map[string]any{}}},
		{"%c %q", []any{'é', 'x'}},
		{"%#v", []any{"x"}},
		{"%#v", []any{name("x")}},
		{"%#v %#v %#v", []any{1, int64(2), 2.5}},
		{"%#v", []any{true}},
		{"%#v", []any{uint(10)}},
		{"%#v", []any{[]string{"a", "b"}}},
		{"%#v", []any{[]any{"a", 1.5, []string{"c"}, nil, int64(3)}}},
		{"%#v", []any{[]float64{1, 2}}},
		{"%v", []any{[]any{"a", nil, 1, []any{2}}}},
		{"%s", []any{[]byte("bytes")}},
		{"%v", []any{[]byte("ab")}},
		{"%d", []any{"s"}},
		{"%s", []any{1}},
		{"%s", []any{1.5}},
		{"%f", []any{1}},
		{"%d %d", []any{1}},
		{"%d", []any{1, "x", 2}},
		{"ends with %", nil},
		{"a %s event carries %s = %v", []any{kind(2), "port", uint16(8080)}},
		{"unicode ±%v%s", []any{5.0, "%"}},
	}) {
		want := fmt.Sprintf(c.format, c.args...)
		if got := Sprintf(c.format, c.args...); got != want {
			t.Errorf("Sprintf(%q, %#v) = %q, fmt: %q", c.format, c.args, got, want)
		}
		if len(c.args) == 1 {
			if got, want := Sprint(c.args[0]), fmt.Sprint(c.args[0]); got != want {
				t.Errorf("Sprint(%#v) = %q, fmt: %q", c.args[0], got, want)
			}
		}
	}
}

// What this package leaves out says so, with the type.
func TestUnsupported(t *testing.T) {
	if got := Sprintf("%v", map[string]int{"a": 1}); got != "%!v(map[string]int)" {
		t.Errorf("Sprintf(%%v, map) = %q", got)
	}
	if got := Sprintf("%s", &struct{}{}); got != "%!s(*struct {})" {
		t.Errorf("Sprintf(%%s, pointer) = %q", got)
	}
}

func TestErrorf(t *testing.T) {
	base := io.ErrUnexpectedEOF
	e := Errorf("reading %q: %w", "x", base)
	if want := fmt.Errorf("reading %q: %w", "x", base); e.Error() != want.Error() {
		t.Errorf("Errorf = %q, fmt: %q", e, want)
	}
	if !errors.Is(e, base) || errors.Unwrap(e) != base {
		t.Errorf("Errorf with %%w does not wrap %v", base)
	}
	long := Errorf("%w: %d requests sent before duration %s ended", base, 5, time.Second)
	if want := fmt.Errorf("%w: %d requests sent before duration %s ended", base, 5, time.Second); long.Error() != want.Error() {
		t.Errorf("Errorf = %q, fmt: %q", long, want)
	}
	two := Errorf("%w and %w", base, io.EOF)
	if !errors.Is(two, base) || !errors.Is(two, io.EOF) || two.Error() != fmt.Errorf("%w and %w", base, io.EOF).Error() {
		t.Errorf("Errorf with two %%w: %q", two)
	}
	plain := Errorf("no %s", "wrap")
	if errors.Unwrap(plain) != nil || plain.Error() != "no wrap" {
		t.Errorf("Errorf without %%w: %q unwraps to %v", plain, errors.Unwrap(plain))
	}
	if bad := Errorf("%w", "not an error"); bad.Error() != fmt.Errorf(wrapVerb, "not an error").Error() || errors.Unwrap(bad) != nil {
		t.Errorf("Errorf(%%w, string) = %q", bad)
	}
}

func FuzzSameAsFmt(f *testing.F) {
	f.Add("%v %q %d", "a", int64(3), 1.5)
	f.Fuzz(func(t *testing.T, format, s string, n int64, x float64) {
		for _, args := range [][]any{{s, n, x}, {x, s, n}, {[]string{s}, []float64{x}, n}} {
			if got, want := Sprintf(format, args...), fmt.Sprintf(format, args...); got != want && supported(format) {
				t.Errorf("Sprintf(%q, %#v) = %q, fmt: %q", format, args, got, want)
			}
		}
	})
}

// supported: the format has only the verbs and flags (# with %v) this
// package takes, and no precision (TestSameAsFmt checks %.Nf on numbers:
// a precision fits numbers only).
func supported(format string) bool {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		sharp := false
		for i < len(format) && format[i] == '#' {
			i++
			sharp = true
		}
		prec := false
		if i < len(format) && format[i] == '.' {
			i++
			prec = true
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
		}
		if i >= len(format) || !containsByte("vsqdcfegT%", format[i]) || sharp && format[i] != 'v' || prec {
			return false
		}
	}
	return true
}

func containsByte(s string, c byte) bool {
	for i := range len(s) {
		if s[i] == c {
			return true
		}
	}
	return false
}
