package phpwasm

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
)

// TestDriverVocabulary: the driver writes sim's event kinds by number and
// the close reasons and sides of its close events as words. Each is sim's
// own (vocab.go, event.go): a kind renumbered or a reason renamed in Go
// fails here, not in a real run's decoding.
func TestDriverVocabulary(t *testing.T) {
	src, err := os.ReadFile("node/driver.mjs")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const KIND = \{([^}]*)\}`).FindSubmatch(src)
	if m == nil {
		t.Fatal("driver.mjs: no const KIND = { ... }")
	}
	kinds := 0
	for _, pair := range strings.Split(string(m[1]), ",") {
		name, num, ok := strings.Cut(pair, ":")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if !ok || err != nil {
			t.Fatalf("driver.mjs: KIND entry %q", pair)
		}
		if got := sim.Kind(n).String(); got != strings.TrimSpace(name) {
			t.Errorf("driver.mjs: KIND.%s = %d, which is sim's %q", strings.TrimSpace(name), n, got)
		}
		kinds++
	}
	if kinds < 3 {
		t.Errorf("driver.mjs: %d kinds, want call, open and close", kinds)
	}
	words := func(re string) []string {
		var out []string
		for _, m := range regexp.MustCompile(re).FindAllSubmatch(src, -1) {
			for _, w := range m[1:] {
				if len(w) > 0 {
					out = append(out, string(w))
				}
			}
		}
		return out
	}
	reasons := append(words(`closeReason = '([a-z-]+)'`), words(`rs: this\.peerEOF \? '([a-z-]+)'`)...)
	sides := words(`const by = this\.peerEOF \? '([a-z]+)' : '([a-z]+)'`)
	if len(reasons) < 3 || len(sides) != 2 {
		t.Fatalf("driver.mjs: close reasons %q, sides %q: the patterns no longer find them", reasons, sides)
	}
	for _, r := range reasons {
		if !slices.Contains(sim.Enums()["CloseReason"], r) {
			t.Errorf("driver.mjs: close reason %q is not one of sim's", r)
		}
	}
	for _, s := range sides {
		if !slices.Contains(sim.Enums()["Side"], s) {
			t.Errorf("driver.mjs: side %q is not one of sim's", s)
		}
	}
}
