package msgf

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

type name string
type count int
type pair struct {
	A int
	B string
}

// The formatter of the .wasm writes what fmt writes, for the verbs and
// values the model's messages use.
func TestLiteIsFmt(t *testing.T) {
	errA := errors.New("a failed")
	var nilErr error
	cases := []struct {
		format string
		args   []any
	}{
		{"plain text", nil},
		{"100%% sure", nil},
		{"%s and %q", []any{"x y", `a"b`}},
		{"%v|%s|%q", []any{name("k"), name("k"), name("k")}},
		{"%d|%v|%x|%c|%q", []any{42, int64(-7), 255, 'é', 'x'}},
		{"%d|%v", []any{uint64(1 << 63), count(3)}},
		{"%v|%v|%v|%v|%v", []any{1e6, 100000.0, 1e-5, 0.1 + 0.2, math.Inf(1)}},
		{"%g|%.0f|%.2f|%f|%.3g|%e", []any{2.5, 12345.678, 1.005, 3.0, 1234.5678, 1500.0}},
		{"%v|%s|%v", []any{float32(0.1), 2*time.Millisecond + 300*time.Microsecond, time.Duration(0)}},
		{"%v|%s|%q", []any{errA, errA, errA}},
		{"%v|%s|%d", []any{nil, nil, nil}},
		{"%v|%s", []any{nilErr, nilErr}},
		{"%t|%v", []any{true, false}},
		{"%T|%T|%T|%T", []any{1, "s", []string{}, nil}},
		{"%v|%q|%s", []any{[]string{"a", "b c"}, []string{"a", "b"}, []name{"x"}}},
		{"%v|%v", []any{[]float64{1.5, 2}, []any{1, "a", nil}}},
		{"%v|%v|%v", []any{pair{1, "x"}, &pair{2, "y"}, (*pair)(nil)}},
		{"%#v|%#v|%#v|%#v", []any{"a\"b", 2.0, 3, true}},
		{"%5s|%-5s|%5d|%-4d|%05d|%.2s", []any{"ab", "cd", 42, 7, -42, "hello"}},
		{"%d %s", []any{"x", 3}},            // wrong operands
		{"%d %d", []any{1}},                 // missing
		{"%d", []any{1, "x", 2.5}},          // extra
		{"%v", []any{map[string]int{}}[:0]}, // missing again
		{"rate × duration = %.0f requests, more than %d", []any{123456.5, 100000}},
		{"variant %q: %v", []any{"with", fmt.Errorf("rtt: %w", errA)}},
	}
	for _, c := range cases {
		want := fmt.Sprintf(c.format, c.args...)
		got, _ := sprintf(c.format, c.args, false)
		if got != want {
			t.Errorf("Sprintf(%q, %v):\n got %q\nwant %q", c.format, c.args, got, want)
		}
		if want := fmt.Sprint(c.args...); sprint(c.args) != want {
			t.Errorf("Sprint(%v): got %q, want %q", c.args, sprint(c.args), want)
		}
	}
}

func TestLiteErrorf(t *testing.T) {
	base := fs.ErrNotExist
	other := errors.New("other")
	one := errorf("reading %q: %w", []any{"lab.md", base})
	if one.Error() != `reading "lab.md": file does not exist` || !errors.Is(one, base) {
		t.Errorf("one %%w: %q, Is %v", one, errors.Is(one, base))
	}
	two := errorf("%w and %w", []any{base, other})
	if two.Error() != fmt.Errorf("%w and %w", base, other).Error() || !errors.Is(two, base) || !errors.Is(two, other) {
		t.Errorf("two %%w: %q", two)
	}
	none := errorf("plain %d", []any{3})
	if none.Error() != "plain 3" || errors.Unwrap(none) != nil {
		t.Errorf("no %%w: %q", none)
	}
	var pe *fs.PathError
	wrapped := errorf("open: %w", []any{&fs.PathError{Op: "open", Path: "x", Err: base}})
	if !errors.As(wrapped, &pe) || pe.Path != "x" {
		t.Errorf("errors.As through %%w: %v", wrapped)
	}
}

// Every verb the packages of the .wasm write in a format is one the
// formatter here knows (and TestLiteIsFmt checks).
func TestVerbsKnown(t *testing.T) {
	verb := regexp.MustCompile(`%[#-]?[0-9]*(\.[0-9]+)?[a-zA-Z]`)
	known := "vsqdcTwtxfge"
	literal := regexp.MustCompile("\"(\\\\.|[^\"\\\\])*\"|`[^`]*`")
	for _, dir := range []string{"../..", "../../lab", "../../wasm", "../jsonlite"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, lit := range literal.FindAllString(string(src), -1) {
				lit = strings.ReplaceAll(lit, "%%", "")
				for _, v := range verb.FindAllString(lit, -1) {
					if !strings.ContainsRune(known, rune(v[len(v)-1])) {
						t.Errorf("%s: the verb %s in %s is not one the .wasm's formatter knows", f, v, lit)
					}
				}
			}
		}
	}
}
