package lab

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
)

// TestRealRecords holds every lab's real_expect statements to its committed
// record of a real run (LAB.real.json, written by sim validate --record):
// a page whose prose says what the real software does, and whose record
// shows otherwise, fails here without a real run. A lab with real_expect
// statements needs a record, made of the blocks as they are now.
func TestRealRecords(t *testing.T) {
	pages, _ := filepath.Glob("../../labs/*.md")
	checked := 0
	for _, p := range pages {
		l, err := ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		claims := 0
		for _, b := range l.Blocks {
			claims += len(b.RealExpects)
		}
		if claims == 0 {
			continue
		}
		rec, err := ReadRecord(RecordPath(p))
		if err != nil {
			t.Errorf("%s states %d real_expect statements but has no record of a real run (sim validate --record %s): %v", p, claims, p, err)
			continue
		}
		for _, rc := range l.CheckRecord(rec) {
			if rc.Problem != "" {
				t.Errorf("%s: block %q: %s (sim validate --record %s)", p, rc.Block, rc.Problem, p)
			}
			for _, c := range rc.Checks {
				checked++
				if !c.OK {
					t.Errorf("%s:%d: real_expect %q does not hold on the real software (recorded %s): got %s", p, c.Line, c.Expect, rec.Recorded, c.Got)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no real_expect statement was checked against a record")
	}
}

const recordLab = "```sim {id=\"a\"}\nrequests = 2\nreuse = \"process\"\nexpect = [\"p.num_connects == [1, 0]\"]\n" +
	"real_expect = [\"p.num_connects == [1, 0]\", \"bad.error contains \\\"ValueError\\\"\", \"p.check.class == \\\"CurlSharePersistentHandle\\\"\", \"p.runtime.php contains \\\"8.5.\\\"\"]\n" +
	"[[variant]]\nname = \"p\"\nscript = \"persistent.php\"\n[[variant]]\nname = \"bad\"\nshare_sets = [[\"cookie\"]]\n```\n"

// A record whose run agrees with the statements passes; one that shows a
// second connection, another exception, another class or another PHP
// fails the statement it contradicts; a block changed since, missing from
// the record, or run on a stand-in is not checked and says why.
func TestCheckRecord(t *testing.T) {
	l, err := Parse("rec.md", []byte(recordLab))
	if err != nil {
		t.Fatal(err)
	}
	b := l.Blocks[0]
	if len(b.RealExpects) != 4 || b.Variants[0].Script != "persistent.php" || b.ScriptOf(b.Variants[1]) != "" {
		t.Fatalf("real_expect %d, scripts %q %q", len(b.RealExpects), b.Variants[0].Script, b.ScriptOf(b.Variants[1]))
	}
	good := func() *Record {
		return &Record{Blocks: []RecordBlock{{ID: "a", Variants: []RecordVariant{
			{Name: "p", Settings: b.Settings(b.Variants[0]), Runtime: map[string]string{"name": "PHP", "php": "8.5.10"},
				Measured: summaryWith(1, 0), Checks: map[string]string{"class": "CurlSharePersistentHandle"}},
			{Name: "bad", Settings: b.Settings(b.Variants[1]), Runtime: map[string]string{"name": "PHP", "php": "8.5.10"},
				Error: "ValueError: curl_share_init_persistent(): Argument #1 ($share_options) must not contain CURL_LOCK_DATA_COOKIE"},
		}}}}
	}
	results := func(r *Record) RecordCheck {
		rcs := l.CheckRecord(r)
		if len(rcs) != 1 {
			t.Fatalf("%d block checks", len(rcs))
		}
		return rcs[0]
	}
	if rc := results(good()); rc.Problem != "" || len(rc.Checks) != 4 || !allOK(rc.Checks) {
		t.Errorf("an agreeing record: %+v", rc)
	}
	for name, spoil := range map[string]func(r *Record){
		"connects twice": func(r *Record) { r.Blocks[0].Variants[0].Measured = summaryWith(1, 1) },
		"another error":  func(r *Record) { r.Blocks[0].Variants[1].Error = "RuntimeException: cookies" },
		"another class":  func(r *Record) { r.Blocks[0].Variants[0].Checks["class"] = "CurlShareHandle" },
		"another PHP":    func(r *Record) { r.Blocks[0].Variants[0].Runtime["php"] = "8.2.36" },
	} {
		r := good()
		spoil(r)
		if rc := results(r); rc.Problem != "" || allOK(rc.Checks) {
			t.Errorf("%s: %+v, want a statement that fails", name, rc)
		}
	}
	for name, c := range map[string]struct {
		spoil func(r *Record)
		want  string
	}{
		"changed":  {func(r *Record) { r.Blocks[0].Variants[0].Settings = "requests = 3" }, "changed since it was recorded"},
		"missing":  {func(r *Record) { r.Blocks = nil }, "not in the record"},
		"stand-in": {func(r *Record) { r.Blocks[0].Variants[0].Runtime["stand_in"] = "node is not installed" }, "stand-in"},
		"not run":  {func(r *Record) { r.Blocks[0].Variants[1].Runtime = nil }, "did not run for real"},
	} {
		r := good()
		c.spoil(r)
		if rc := results(r); !strings.Contains(rc.Problem, c.want) || len(rc.Checks) > 0 {
			t.Errorf("%s: %+v, want not checked: %q", name, rc, c.want)
		}
	}
	if RecordPath("labs/x.ko.md") != "labs/x.real.json" || ScriptDir("labs/x.md") != "labs/x" {
		t.Errorf("paths: %s %s", RecordPath("labs/x.ko.md"), ScriptDir("labs/x.md"))
	}
	if f := l.Blocks[0].ScriptFolder(); f != "rec" {
		t.Errorf("a lab without scripts = ...: its scripts are in %q, want rec", f)
	}
	// A lab whose front matter names another lab's folder runs its scripts.
	shared, err := Parse(filepath.Join("labs", "second.ko.md"), []byte("+++\ntitle = \"t\"\nscripts = \"first\"\n+++\n"+recordLab))
	if err != nil {
		t.Fatal(err)
	}
	if f := shared.Blocks[0].ScriptFolder(); f != filepath.Join("labs", "first") || RecordPath(shared.File) != filepath.Join("labs", "second.real.json") {
		t.Errorf("scripts = \"first\": folder %q, record %q; want labs/first, labs/second.real.json", f, RecordPath(shared.File))
	}
	for _, bad := range []string{"../first", "a/b", ""} {
		_, err := Parse("x.md", []byte("+++\ntitle = \"t\"\n\nscripts = "+strconv.Quote(bad)+"\n+++\n"+recordLab))
		if bad == "" {
			if err != nil {
				t.Errorf("scripts = \"\": %v, want the default folder", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "x.md:4:") || !strings.Contains(err.Error(), "scripts") {
			t.Errorf("scripts = %q: %v, want an error naming x.md:4 and the key", bad, err)
		}
	}
	// real_expect may read check and runtime; expect may not.
	if _, err := Parse("x.md", []byte("```sim {id=\"a\"}\nexpect = [\"check.class == \\\"x\\\"\"]\n```\n")); err == nil || !strings.Contains(err.Error(), "no metric") {
		t.Errorf("expect reading a check: %v", err)
	}
	if _, err := Parse("x.md", []byte("```sim {id=\"a\"}\nscript = \"../etc/passwd\"\n```\n")); err == nil || !strings.Contains(err.Error(), "script") {
		t.Errorf("a script outside the lab's folder: %v", err)
	}
}

func allOK(cs []Check) bool {
	for _, c := range cs {
		if !c.OK {
			return false
		}
	}
	return true
}

// summaryWith is a record's measured summary with these num_connects.
func summaryWith(n ...int) *sim.Summary {
	s := &sim.Summary{NumConnects: n, Calls: len(n)}
	for _, c := range n {
		s.Connects += c
	}
	return s
}
