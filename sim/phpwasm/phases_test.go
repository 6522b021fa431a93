package phpwasm

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
	simwire "github.com/connlab/connlab/sim/harness/wire"
)

// Every phase of sim's table reaches the comparison from PHP: connlab.php
// prints curl's time for it (as <key>_us, from CURLINFO_<KEY>_TIME_T) and
// the driver carries it into the event under the phase's wire key. A phase
// added to sim fails here until the PHP client reports it. Queue is the
// wait for a pool's connection: PHP's curl has no pool that makes a call
// wait, so no PHP call has one.
func TestEveryPhaseIsReported(t *testing.T) {
	php, err := os.ReadFile("connlab.php")
	if err != nil {
		t.Fatal(err)
	}
	driver, err := os.ReadFile("node/driver.mjs")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sim.Phases() {
		if p.Key == "queue" {
			continue
		}
		us := regexp.QuoteMeta(p.Key + "_us")
		printed := `'` + us + `' => curl_getinfo\(\$ch, CURLINFO_` + regexp.QuoteMeta(strings.ToUpper(p.Key)) + `_TIME_T\)`
		if !regexp.MustCompile(printed).Match(php) {
			t.Errorf("phase %s: connlab.php does not print %s_us from curl (want /%s/)", p.Key, p.Key, printed)
		}
		if !regexp.MustCompile(`\bm\.` + us + `\b`).Match(driver) {
			t.Errorf("phase %s: driver.mjs does not read m.%s_us", p.Key, p.Key)
		}
		k := regexp.QuoteMeta(simwire.EventKey(p.EventField))
		if !regexp.MustCompile(`\bev\.` + k + ` = |[{,] ` + k + `: `).Match(driver) {
			t.Errorf("phase %s: driver.mjs sets no event key %q (Event.%s)", p.Key, simwire.EventKey(p.EventField), p.EventField)
		}
	}
}
