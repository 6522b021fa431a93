package site

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The widgets type-check in TypeScript's strict mode against the types
// generated from Go (assets/ts/sim/schema.gen.ts): a field the Go side
// renames or drops fails here. Hugo's esbuild bundles without checking
// types, so this is the only check; make tsc installs TypeScript
// (package-lock.json), and without it the test skips.
func TestTypeScript(t *testing.T) {
	tsc := filepath.Join("node_modules", ".bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		t.Skip("TypeScript is not installed here: make tsc (npm ci in site/) installs it")
	}
	if out, err := exec.Command(tsc, "-p", "tsconfig.check.json").CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
}
