package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPageName(t *testing.T) {
	for _, tc := range []struct {
		path, name, lang string
	}{
		{"labs/idle-timeouts.md", "idle-timeouts", "en"},
		{"labs/idle-timeouts.ko.md", "idle-timeouts", "ko"},
		{"labs/anatomy/index.md", "anatomy", "en"},
		{"labs/anatomy/index.ko.md", "anatomy", "ko"},
		{"labs/_index.md", "", ""},
		{"labs/notes.txt", "", ""},
		{"labs/bad name.md", "", ""},
		{"labs/" + strings.Repeat("x", 101) + ".md", "", ""},
	} {
		name, lang := PageName("labs", tc.path)
		if name != tc.name || lang != tc.lang {
			t.Errorf("PageName(%s) = %q %q, want %q %q", tc.path, name, lang, tc.name, tc.lang)
		}
	}
}

// The index finds pages by name with their languages, the first directory
// winning a duplicate; it skips hidden and underscore folders, and finds a
// page added later.
func TestIndex(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(dir, name string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("# x\n"), 0o644)
	}
	write(a, "one.md")
	write(a, "one.ko.md")
	write(a, "only.ko.md")
	write(a, "bundle/index.md")
	write(a, ".hidden/secret.md")
	write(a, "_drafts/draft.md")
	write(b, "one.md") // a duplicate: a's wins
	write(b, "two.md")
	var logged []string
	x := NewIndex([]string{a, b, filepath.Join(a, "missing")}, func(f string, args ...any) { logged = append(logged, f) })
	var names []string
	for _, p := range x.Pages() {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "bundle one only two" {
		t.Errorf("pages %v", names)
	}
	one, ok := x.Lookup("one")
	if !ok || one.Path("en") != filepath.Join(a, "one.md") || one.Path("ko") != filepath.Join(a, "one.ko.md") || one.Path("de") != filepath.Join(a, "one.md") {
		t.Errorf("one: %+v", one)
	}
	if only, _ := x.Lookup("only"); only.Path("en") != filepath.Join(a, "only.ko.md") {
		t.Errorf("a Korean-only page: %+v", only)
	}
	if len(logged) != 2 { // the duplicate and the missing directory
		t.Errorf("logged %q", logged)
	}
	for _, name := range []string{"secret", "draft", "../one", ""} {
		if _, ok := x.Lookup(name); ok {
			t.Errorf("found %q", name)
		}
	}
	time.Sleep(600 * time.Millisecond)
	write(b, "three.md")
	if _, ok := x.Lookup("three"); !ok {
		t.Error("a page added later is not found")
	}
}
