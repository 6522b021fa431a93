package lab

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456…"},
		{"가나다라마바사", 10, "가나…"}, // never half a rune
		{"abc", 0, ""},
		{"abcd", 2, "ab"},
	} {
		got := Clip(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
	if got := Clip(strings.Repeat("x", 16000), 64); len(got) > 64 {
		t.Errorf("Clip gave %d bytes", len(got))
	}
}
