//go:build !js

package wasm

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The page's .wasm (make wasm: sim/cmd/simwasm with the tag nolabparse)
// links no Markdown or TOML reader, no encoding/json, no regexp, no
// net/http, and no fmt or os (its messages are formatted by
// sim/internal/msgf): each would add tens of kilobytes to every reader's
// download.
func TestWasmDeps(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "list", "-deps", "-tags", "nolabparse", "../cmd/simwasm")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list listed %d packages: %s", len(deps), out)
	}
	for _, d := range deps {
		for _, bad := range []string{"github.com/yuin/goldmark", "github.com/pelletier/go-toml", "encoding/json", "regexp", "net/http", "fmt", "os"} {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("the .wasm links %s", d)
			}
		}
	}
}
