package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, from this package's folder.
const root = "../../.."

const module = "github.com/connlab/connlab/"

// goList runs go list in the repository's root and returns the packages
// it prints, without the module's prefix.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		pkgs = append(pkgs, strings.TrimPrefix(p, module))
	}
	return pkgs
}

// ARCHITECTURE.md's table of packages lists every package go list finds,
// and no other; the repository files it names exist.
func TestArchitectureDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllSubmatch(doc, -1) {
		listed = append(listed, string(m[1]))
	}
	want := goList(t, "./...")
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("ARCHITECTURE.md lists the packages\n%q\ngo list ./... finds\n%q", listed, want)
	}
	// Files named by their path from the root (not those make data writes,
	// nor patterns such as labs/LAB.md).
	files := regexp.MustCompile("`((?:sim|site|labs)/[A-Za-z0-9_./-]+\\.[a-z]+)`").FindAllSubmatch(doc, -1)
	if len(files) < 5 {
		t.Fatalf("ARCHITECTURE.md names %d files; the pattern is wrong", len(files))
	}
	for _, m := range files {
		f := string(m[1])
		if strings.HasPrefix(f, "site/data/") || placeholder.MatchString(f) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("ARCHITECTURE.md names %s: %v", f, err)
		}
	}
}

var placeholder = regexp.MustCompile(`/[A-Z]+[./]`)

// The two WebSocket services of sim serve are siblings over sim/web:
// neither imports the other.
func TestServeSiblings(t *testing.T) {
	for _, c := range []struct{ pkg, other string }{{"sim/class", "sim/server"}, {"sim/server", "sim/class"}} {
		deps := goList(t, "-deps", "./"+c.pkg)
		if slices.Contains(deps, c.other) {
			t.Errorf("%s imports %s", c.pkg, c.other)
		}
		if !slices.Contains(deps, "sim/web") {
			t.Errorf("%s does not import sim/web", c.pkg)
		}
	}
}
