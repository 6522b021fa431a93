package phpwasm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim/lab"
)

// recordFile is the committed record of real PHP 8.5 runs (TestRecord).
var recordFile = filepath.Join(root, "labs", "php-persistent-share.real.json")

var countClaim = regexp.MustCompile(`^([a-z0-9-]+)\.(num_connects|connects_per_worker|connects|errors) == (\[[0-9, ]*\]|[0-9]+)$|^([a-z0-9-]+)\.error contains "(.*)"$`)

// TestLabAgainstRecord holds what the PHP lab states about counts and
// errors (its expect lines on num_connects, connects, connects_per_worker,
// errors and error texts) to what PHP 8.5 did in the recorded real run.
// Timing claims (phases, medians) are the model's and are checked by the
// model's tests. It needs neither Node nor PHP.
func TestLabAgainstRecord(t *testing.T) {
	b, err := os.ReadFile(recordFile)
	if err != nil {
		t.Fatalf("the real PHP record: %v (make one with TestRecord)", err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%s: %v", recordFile, err)
	}
	if rec.Versions == nil || !strings.HasPrefix(rec.Versions.PHP, "8.5.") {
		t.Fatalf("%s: recorded on %+v, want PHP 8.5.x", recordFile, rec.Versions)
	}
	l, err := lab.ReadFile(filepath.Join(root, "labs", "php-persistent-share.md"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, blk := range l.Blocks {
		rb := findBlock(rec.Blocks, blk.ID)
		for _, e := range blk.Expects {
			m := countClaim.FindStringSubmatch(strings.TrimSpace(e.Text))
			if m == nil {
				continue
			}
			if rb == nil {
				t.Errorf("%s: block %q is not in the record", recordFile, blk.ID)
				continue
			}
			name := m[1] + m[4]
			v := findVariant(rb.Variants, name)
			if v == nil {
				t.Errorf("line %d %q: variant %q is not in the record", e.Line, e.Text, name)
				continue
			}
			checked++
			var got string
			switch m[2] {
			case "num_connects":
				got = fmt.Sprint(v.NumConnects)
			case "connects_per_worker":
				got = fmt.Sprint(v.ConnectsByWorker)
			case "connects":
				got = strconv.Itoa(v.Connects)
			case "errors":
				got = strconv.Itoa(len(v.Errors))
			case "":
				if !slices.ContainsFunc(v.Errors, func(s string) bool { return strings.Contains(s, m[5]) }) {
					t.Errorf("line %d %q: PHP 8.5 said %q", e.Line, e.Text, v.Errors)
				}
				continue
			}
			want := strings.ReplaceAll(m[3], ",", "")
			if got != want {
				t.Errorf("line %d %q: PHP 8.5 gave %s (%s/%s, recorded %s)", e.Line, e.Text, got, blk.ID, name, rec.Recorded)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d claims against the record, want at least 10", checked)
	}
}

func findBlock(bs []recordBlock, id string) *recordBlock {
	for i := range bs {
		if bs[i].ID == id {
			return &bs[i]
		}
	}
	return nil
}

func findVariant(vs []recordVariant, name string) *recordVariant {
	for i := range vs {
		if vs[i].Name == name {
			return &vs[i]
		}
	}
	return nil
}
