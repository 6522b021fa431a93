package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deepList is a list nested n deep, one level a line, as the probe wrote it.
func deepList(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("  ", i))
		b.WriteString("- a\n")
	}
	return b.String()
}

// TestFileLimits: a lab too large or nested too deep is refused at once,
// naming the file (and the line), by every reader: Parse, ReadFile and
// ReadExercises, which `sim run`, `sim serve` and `sim exercise` use.
func TestFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := "+++\ntitle = \"T\"\n+++\n" + strings.Repeat("Some prose.\n", MaxFileBytes/12+1)
	deep := "+++\ntitle = \"T\"\n+++\n\n" + deepList(600)
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"too large", big, []string{"big.md: larger than 524288 bytes"}},
		{"a list 600 deep", deep, []string{"deep.md:37:", "nested about 33 deep", "at most 32"}},
		{"a list 5000 deep", deepList(5000), []string{"deep.md: larger than"}},
		{"a list 33 deep", deepList(33), []string{"deep.md:33:", "nested about 33 deep"}},
		{"one line", strings.Repeat("- ", 40) + "a\n", []string{"deep.md:1:", "nested"}},
		{"block quotes", "x\n\n" + strings.Repeat(">", 40) + " a\n", []string{"deep.md:3:", "nested"}},
		{"quotes and lists", strings.Repeat("> 1. ", 20) + "a\n", []string{"deep.md:1:", "nested"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := "deep.md"
			if c.name == "too large" {
				file = "big.md"
			}
			path := filepath.Join(dir, file)
			if err := os.WriteFile(path, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			within(t, 5*time.Second, func() {
				_, err1 := Parse(file, []byte(c.src))
				_, err2 := ReadFile(path)
				_, _, err3 := ReadExercises(path)
				for i, err := range []error{err1, err2, err3} {
					if err == nil {
						t.Fatalf("reader %d: no error", i+1)
					}
					msg := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
					for _, w := range c.want {
						if !strings.Contains(msg, w) {
							t.Errorf("reader %d: %q lacks %q", i+1, msg, w)
						}
					}
				}
			})
		})
	}
	// What the labs write is well inside the limits: a list 32 deep, a
	// thematic break, numbered and indented lines, and a file just under
	// the size limit.
	for _, ok := range []string{
		deepList(MaxNesting),
		"- - -\n\n---\n\n1. a\n2. b\n\n    code\n        more code\n",
		strings.Repeat("x", MaxFileBytes-1) + "\n",
	} {
		if _, err := Parse("ok.md", []byte(ok)); err != nil {
			t.Errorf("%.40q: %v", ok, err)
		}
	}
	if _, err := ParseScenarioFile("big.toml", []byte(big)); err == nil || !strings.Contains(err.Error(), "big.toml: larger than") {
		t.Errorf("scenario file: %v", err)
	}
}
