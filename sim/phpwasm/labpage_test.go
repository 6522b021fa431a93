package phpwasm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim/lab"
)

// TestPageNamesTheRecordedRuntime: the versions the PHP lab's page gives
// for what "Run real" runs (PHP 8.5.x, its libcurl and OpenSSL) and for
// the before-8.5 row are those of the lab's record of a real run. It needs
// neither Node nor PHP.
func TestPageNamesTheRecordedRuntime(t *testing.T) {
	labFile := filepath.Join(root, "labs", "php-persistent-share.md")
	rec, err := lab.ReadRecord(lab.RecordPath(labFile))
	if err != nil {
		t.Fatalf("the PHP lab's record: %v (sim validate --record %s)", err, labFile)
	}
	var wasm, native map[string]string
	for _, b := range rec.Blocks {
		for _, v := range b.Variants {
			switch rt := v.Runtime; {
			case rt == nil || rt["stand_in"] != "":
			case strings.HasPrefix(rt["runtime"], "WebAssembly") && wasm == nil:
				wasm = rt
			case strings.HasPrefix(rt["runtime"], "native") && native == nil:
				native = rt
			}
		}
	}
	if wasm == nil || native == nil {
		t.Fatalf("the record has no PHP in WebAssembly (%v) or no native PHP (%v)", wasm, native)
	}
	ssl := strings.TrimPrefix(wasm["ssl"], "OpenSSL/")
	for _, page := range []string{labFile, filepath.Join(root, "labs", "php-persistent-share.ko.md")} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, want := range []string{"PHP " + wasm["php"], "libcurl " + wasm["curl"], "OpenSSL " + ssl, "PHP " + major(native["php"])} {
			if !strings.Contains(src, want) {
				t.Errorf("%s does not say %q (recorded: %v; %v)", page, want, wasm, native)
			}
		}
	}
}

// major is "8.2" of "8.2.36".
func major(v string) string {
	if p := strings.SplitN(v, ".", 3); len(p) >= 2 {
		return p[0] + "." + p[1]
	}
	return v
}
