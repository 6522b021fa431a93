package site

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The stylesheets use no :has(). A rule such as
// html:has(#exercise-key:target) .x made Chromium recompute the style of
// every element of the page on each change to it, several times per run of
// a widget (a re-run on a page with exercises spent about half its time
// there). An attribute that a script sets (head.html) does the same job.
func TestStylesHaveNoHas(t *testing.T) {
	files, _ := filepath.Glob("assets/css/*.css")
	if len(files) == 0 {
		t.Fatal("no stylesheets in assets/css")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, ":has(") {
				t.Errorf("%s:%d: a :has() selector: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
