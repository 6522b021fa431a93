package i18n

import (
	"slices"
	"testing"
)

// Every key is in every language: a string added to en.toml alone would
// show English on a Korean page (Hugo and Text fall back to it).
func TestLanguagesAgree(t *testing.T) {
	en := Keys("en")
	if len(en) < 100 {
		t.Fatalf("en.toml has only %d keys", len(en))
	}
	for _, lang := range Langs[1:] {
		other := Keys(lang)
		for _, k := range en {
			if _, ok := slices.BinarySearch(other, k); !ok {
				t.Errorf("%q is in en.toml but not %s.toml", k, lang)
			}
		}
		for _, k := range other {
			if _, ok := slices.BinarySearch(en, k); !ok {
				t.Errorf("%q is in %s.toml but not en.toml", k, lang)
			}
		}
	}
}

// Both forms of Hugo's format read as strings; a missing key falls back
// to English, then to nothing.
func TestText(t *testing.T) {
	if s := Text("en", "nav_labs"); s != "Labs" {
		t.Errorf("nav_labs: %q", s)
	}
	if s := Text("ko", "nav_labs"); s != "실습" {
		t.Errorf("nav_labs in ko: %q", s)
	}
	if s := Text("ko", "intro_minutes"); s != "약 {{ .Count }}분" {
		t.Errorf("a plural table reads as its other form: %q", s)
	}
	if s := Text("fr", "nav_labs"); s != "Labs" {
		t.Errorf("an unknown language reads English: %q", s)
	}
	if s := Text("ko", "no_such_key"); s != "" {
		t.Errorf("a missing key: %q", s)
	}
	if _, ok := Lookup("ko", "no_such_key"); ok {
		t.Error("Lookup found a missing key")
	}
	m := Prefixed("ko", "nav_")
	if m["labs"] != "실습" || m["home"] == "" || len(m) < 3 {
		t.Errorf("Prefixed: %v", m)
	}
}
