//go:build !nolabparse

package lab

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
)

// A Record is what the real software did in a lab's blocks: `sim validate
// --record LAB.md` runs every block for real and writes it next to the lab
// as LAB.real.json (RecordPath), the JSON `sim validate --json` prints plus
// when, how and where it ran. The lab's real_expect statements are held to
// it by go test (CheckRecord), so a page whose prose says what the real
// software does fails its tests when the record shows otherwise, without a
// real run; sim validate holds them to a live run.
//
// Only the fields below are read here; the file holds the whole validation
// (the model's summaries, the phase and count comparisons) for readers.
type Record struct {
	Lab      string            `json:"lab"`
	File     string            `json:"file"`
	Recorded string            `json:"recorded,omitempty"` // RFC 3339
	Command  string            `json:"command,omitempty"`
	Machine  map[string]string `json:"machine,omitempty"`
	Blocks   []RecordBlock     `json:"blocks"`
}

// A RecordBlock is one block of a Record.
type RecordBlock struct {
	ID       string          `json:"id"`
	Variants []RecordVariant `json:"variants"`
}

// A RecordVariant is what ran for one variant and what it did.
type RecordVariant struct {
	Name string `json:"name"`
	// Settings are the variant's keys as the lab wrote them when it was
	// recorded (Block.Settings): a block changed since is stale.
	Settings string `json:"settings"`
	// Runtime: what ran (runtime.KEY; none: the variant did not run for
	// real); Measured: the summary of the real
	// run; Error: the real software's error when it refused the variant;
	// Checks: a probing script's statements (check.ID).
	Runtime  map[string]string `json:"runtime,omitempty"`
	Measured *sim.Summary      `json:"measured,omitempty"`
	Error    string            `json:"real_error,omitempty"`
	Checks   map[string]string `json:"checks,omitempty"`
}

// RecordPath is where a lab's record lives: labs/php-persistent-share.md
// (and its translation, .ko.md) → labs/php-persistent-share.real.json.
func RecordPath(labFile string) string {
	return langSuffix.ReplaceAllString(labFile, "") + ".real.json"
}

// ScriptDir is the folder of a lab's own code (its PHP scripts):
// labs/php-persistent-share.md → labs/php-persistent-share.
func ScriptDir(labFile string) string { return langSuffix.ReplaceAllString(labFile, "") }

// ScriptFolder is the folder the block's scripts are in: the one the
// lab's front matter names (scripts = "..."), else the folder named after
// the lab (ScriptDir).
func (b *Block) ScriptFolder() string {
	if b.Scripts != "" {
		return b.Scripts
	}
	return ScriptDir(b.File)
}

var langSuffix = regexp.MustCompile(`(\.[a-z]{2})?\.md$`)

// ReadRecord reads a record file.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, msgf.Errorf("%s: %v", path, err)
	}
	return &r, nil
}

// Settings is variant v's scenario as the lab writes it, one "key = value"
// after another (the block's keys, then the variant's, then its script):
// what a record was made of.
func (b *Block) Settings(v *Variant) string {
	var parts []string
	for _, st := range append(append([]Setting(nil), b.Base...), v.Settings...) {
		parts = append(parts, st.Key+" = "+formatSetting(st))
	}
	if s := b.ScriptOf(v); s != "" {
		parts = append(parts, "script = "+s)
	}
	return strings.Join(parts, "; ")
}

// Results turns the record's block into results that real_expect
// statements read: each variant's measured summary, error, checks and
// runtime.
func (rb *RecordBlock) Results() *BlockResult {
	res := &BlockResult{ID: rb.ID, Checks: []Check{}}
	for _, v := range rb.Variants {
		res.Variants = append(res.Variants, &VariantResult{Name: v.Name, Summary: v.Measured, Error: v.Error, Checks: v.Checks, Runtime: v.Runtime})
	}
	return res
}

// RecordCheck is one block's real_expect statements held to a record.
type RecordCheck struct {
	Block  string
	Checks []Check
	// Problem says why the block could not be checked (not recorded, or
	// changed since).
	Problem string
}

// CheckRecord holds every real_expect statement of the lab to rec. A block
// with real_expect statements that rec lacks, or whose variants' settings
// differ from those recorded, or that did not run for real, is a Problem:
// its statements are about a run that does not exist.
func (l *Lab) CheckRecord(rec *Record) []RecordCheck {
	results := map[string]*BlockResult{}
	recorded := map[string]*RecordBlock{}
	for i := range rec.Blocks {
		rb := &rec.Blocks[i]
		recorded[rb.ID] = rb
		results[rb.ID] = rb.Results()
	}
	var out []RecordCheck
	for _, b := range l.Blocks {
		if len(b.RealExpects) == 0 {
			continue
		}
		rc := RecordCheck{Block: b.ID}
		for _, id := range b.realNeeds() {
			nb, _ := l.Block(id)
			if p := stale(nb, recorded[id]); p != "" {
				rc.Problem = p
				break
			}
		}
		if rc.Problem == "" {
			rc.Checks = b.CheckReal(results)
		}
		out = append(out, rc)
	}
	return out
}

// recordedAs is a variant's settings as far as its record depends on
// them: a real run of a stack measures its costs itself and gives its
// model those (sim.CalibratedKeys), so a block whose costs follow a new
// calibration still describes the run recorded.
func recordedAs(settings string) string {
	parts := strings.Split(settings, "; ")
	if !slices.Contains(parts, "setup = stack") {
		return settings
	}
	kept := parts[:0:0]
	for _, p := range parts {
		if !sim.Calibrated(strings.TrimSpace(strings.SplitN(p, "=", 2)[0])) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "; ")
}

// stale says why a block's record does not describe the block as it is.
func stale(b *Block, rb *RecordBlock) string {
	if b == nil {
		return ""
	}
	if rb == nil {
		return msgf.Sprintf("block %q is not in the record", b.ID)
	}
	for _, v := range b.Variants {
		var rv *RecordVariant
		for i := range rb.Variants {
			if rb.Variants[i].Name == v.Name {
				rv = &rb.Variants[i]
			}
		}
		switch {
		case rv == nil:
			return msgf.Sprintf("variant %s/%s is not in the record", b.ID, v.Name)
		case recordedAs(rv.Settings) != recordedAs(b.Settings(v)):
			return msgf.Sprintf("variant %s/%s changed since it was recorded (recorded: %s; now: %s)", b.ID, v.Name, rv.Settings, b.Settings(v))
		case rv.Runtime == nil:
			return msgf.Sprintf("variant %s/%s did not run for real", b.ID, v.Name)
		case rv.Runtime["stand_in"] != "":
			return msgf.Sprintf("variant %s/%s ran on a stand-in, not the real software (%s)", b.ID, v.Name, rv.Runtime["stand_in"])
		}
	}
	return ""
}
