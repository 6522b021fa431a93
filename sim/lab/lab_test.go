package lab

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
)

// TestLabs runs every block of every lab in labs/ and fails when an
// expectation, which is what the page's prose claims, is not met.
func TestLabs(t *testing.T) {
	files, err := filepath.Glob("../../labs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no labs found: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".ko.md") {
			continue // translations: their blocks must equal the English ones (site tests)
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			l, err := ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if l.Title == "" || len(l.Blocks) == 0 {
				t.Fatalf("title %q, %d blocks", l.Title, len(l.Blocks))
			}
			results, err := l.Run(context.Background(), nil, RunOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				if len(l.mustBlock(t, r.ID).Expects) == 0 {
					t.Errorf("block %s states no expectations", r.ID)
				}
				for _, c := range r.Checks {
					if !c.OK {
						t.Errorf("%s:%d: block %s: %s: got %s", f, c.Line, r.ID, c.Expect, c.Got)
					}
				}
			}
		})
	}
}

func (l *Lab) mustBlock(t *testing.T, id string) *Block {
	b, err := l.Block(id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRequiredBlocks: the blocks the pages and the tests name exist.
func TestRequiredBlocks(t *testing.T) {
	for file, ids := range map[string][]string{
		"php-persistent-share.md": {"across-requests", "within-script", "before-85"},
		"php-persistent-pools.md": {"workers", "idle", "option-sets"},
		"connection-pool.md":      {"no-pool", "pool"},
		"nginx-keepalive.md":      {"without", "with"},
		"port-exhaustion.md":      {"exhaust", "tw-reuse"},
		"idle-timeouts.md":        {"race"},
	} {
		l, err := ReadFile("../../labs/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if _, err := l.Block(id); err != nil {
				t.Error(err)
			}
		}
	}
}

const good = "+++\ntitle = \"T\"\n+++\n\nSome prose.\n\n```sim {id=\"a\"}\nrequests = 3\nrtt = \"10ms\"\nexpect = [\"x.connects == 3\", \"y.connects == 1\"]\n\n[[variant]]\nname = \"x\"\nreuse = \"none\"\n\n[[variant]]\nname = \"y\"\nreuse = \"process\"\n```\n"

func TestParseGood(t *testing.T) {
	l, err := Parse("good.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	b := l.Blocks[0]
	if l.Title != "T" || b.ID != "a" || b.Line != 8 || len(b.Variants) != 2 || len(b.Expects) != 2 {
		t.Fatalf("parsed %+v %+v", l, b)
	}
	if b.Expects[0].Line != 10 || b.Variants[1].Line != 16 {
		t.Errorf("lines: expect %d, variant %d", b.Expects[0].Line, b.Variants[1].Line)
	}
	res, err := l.Run(context.Background(), nil, RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res[0].Checks {
		if !c.OK {
			t.Errorf("%s: %s", c.Expect, c.Got)
		}
	}
}

// badLab is a lab file, bad.md, with a mistake, and what its error must
// say.
type badLab struct {
	name, src string
	want      []string
}

// checkBadLabs parses each case's file and, if it parses, runs it: either
// must fail with an error holding each of the case's wants (the file and
// line, the key at fault).
func checkBadLabs(t *testing.T, cases []badLab) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := Parse("bad.md", []byte(c.src))
			if err == nil {
				_, err = l.Run(context.Background(), nil, RunOptions{})
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestBadInput: every kind of mistake is reported with the file, the line
// and the field at fault.
func TestBadInput(t *testing.T) {
	block := func(body string) string {
		return "+++\ntitle = \"T\"\n+++\n\n```sim {id=\"b\"}\n" + body + "\n```\n"
	}
	// The TOML body starts on line 6.
	checkBadLabs(t, []badLab{
		{"malformed TOML", block("requests = 3\nrtt = \"10ms"), []string{"bad.md:7:", `block "b"`, "TOML"}},
		{"unknown key", block("requests = 3\nrtts = \"10ms\""), []string{"bad.md:7:", "rtts", `did you mean "rtt"`}},
		{"negative RTT", block("rtt = \"-5ms\""), []string{"bad.md:6:", "rtt", "out of range"}},
		{"duration without unit", block("\n\nrtt = 30"), []string{"bad.md:8:", "rtt", "unit"}},
		{"absurd count", block("requests = 1_000_000_000"), []string{"bad.md:6:", "requests", "out of range"}},
		{"enum", block("tls = \"1.1\""), []string{"bad.md:6:", "tls", "1.2"}},
		{"variant key", block("[[variant]]\nname = \"v\"\nworkers = 0"), []string{"bad.md:8:", "workers", "out of range"}},
		{"variant name", block("[[variant]]\nreuse = \"none\""), []string{"bad.md:6:", "needs a name"}},
		{"duplicate variant", block("[[variant]]\nname = \"v\"\n[[variant]]\nname = \"v\""), []string{"bad.md:8:", "twice"}},
		{"title in a variant", block("[[variant]]\nname = \"v\"\ntitle = \"x\""), []string{"bad.md:8:", "top of the block"}},
		{"bad expectation", block("expect = [\"x.connects ≈ 3\"]"), []string{"bad.md:6:", "tolerance"}},
		{"unknown metric", block("expect = [\"connectz == 3\"]"), []string{"bad.md:6:", "connectz"}},
		{"unknown variant", block("expect = [\"z.connects == 3\"]\n[[variant]]\nname = \"x\"\n[[variant]]\nname = \"y\""), []string{"bad.md:6:", `"z"`, "x, y"}},
		{"expect line in a list", block("expect = [\n  \"connects == 1\",\n  \"bogus\",\n]"), []string{"bad.md:8:", "no comparison"}},
		{"combination", block("load = \"open\""), []string{"bad.md:", "rate", "open-loop"}},
		{"cookie not expected", block("reuse = \"process\"\n\nshare_sets = [[\"dns\", \"cookie\"]]"), []string{"bad.md:8:", "share_sets", "ValueError", "CURL_LOCK_DATA_COOKIE"}},
		{"no id", "```sim\nrequests = 1\n```\n", []string{"bad.md:1:", "needs an id"}},
		{"duplicate id", "```sim {id=\"a\"}\n```\n\n```sim {id=\"a\"}\n```\n", []string{"bad.md:4:", "twice", "line 1"}},
		{"yaml front matter", "---\ntitle: x\n---\n", []string{"bad.md:1:", "TOML"}},
		{"bad front matter", "+++\ntitle = \n+++\n", []string{"bad.md:2:", "front matter"}},
		{"bad attributes", "```sim {id=a b=\"\n```\n", []string{"bad.md:1:"}},
	})
}

func TestMissingBlock(t *testing.T) {
	l, err := Parse("good.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Run(context.Background(), []string{"nope"}, RunOptions{})
	var le *Error
	if !errors.As(err, &le) || !strings.Contains(err.Error(), `no block with id "nope" (blocks: a)`) {
		t.Errorf("got %v", err)
	}
}

func TestSetOverrides(t *testing.T) {
	l, err := Parse("good.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseSetting("requests=5")
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Run(context.Background(), nil, RunOptions{Set: []Setting{st}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Variants[0].Summary.Connects; got != 5 {
		t.Errorf("--set requests=5 gave %d connects", got)
	}
	for _, kv := range []string{"rtt=-1ms", "nokey=1", "requests", "tls=1.1"} {
		if _, err := ParseSetting(kv); err == nil || !strings.HasPrefix(err.Error(), "--set") {
			t.Errorf("ParseSetting(%q) = %v", kv, err)
		}
	}
	for kv, key := range map[string]string{"tls=1.3": "tls", "share_sets=[[\"dns\"]]": "share_sets", "loopback=true": "loopback", "port_range=1024-2047": "port_range"} {
		st, err := ParseSetting(kv)
		if err != nil || st.Key != key {
			t.Errorf("ParseSetting(%q) = %+v, %v", kv, st, err)
		}
	}
}

func TestCrossBlockExpectations(t *testing.T) {
	src := "```sim {id=\"slow\"}\nrtt = \"50ms\"\ndns = \"0s\"\nserver_time = \"0s\"\ntls = \"none\"\n```\n\n```sim {id=\"fast\"}\nrtt = \"5ms\"\ndns = \"0s\"\nserver_time = \"0s\"\ntls = \"none\"\nexpect = [\"fast.total_ms.p50 * 10 == slow.total_ms.p50\", \"slow.connects == fast.connects\"]\n```\n"
	l, err := Parse("x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	// Running only "fast" also runs "slow", which its expectations read.
	res, err := l.Run(context.Background(), []string{"fast"}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].ID != "fast" || len(res[0].Checks) != 2 {
		t.Fatalf("results %+v", res)
	}
	for _, c := range res[0].Checks {
		if !c.OK {
			t.Errorf("%s: %s", c.Expect, c.Got)
		}
	}
}

func TestExpectOperators(t *testing.T) {
	m := Metrics{"b": {"v": {"n": 10.0, "l": []any{1.0, 0.0}, "s": "ValueError: x", "nil": nil}}}
	for expr, want := range map[string]bool{
		"v.connects == 10":          false,
		"10 ≈ 11 ±10%":              true,
		"10 ≈ 12 ±10%":              false,
		"10 ~= 10.4 ±0.5":           true,
		"(2 + 3) * 2 == 10":         true,
		"10 / 4 >= 2.5":             true,
		"10 - 11 < 0":               true,
		"[1, 0] == [1, 0]":          true,
		"[1, 0] != [1, 0, 0]":       true,
		"\"a≈b\" contains \"≈\"":    true,
		"\"abc\" contains \"\"":     false,
		"3 <= 2":                    false,
		"1 > 0":                     true,
		"\"x == y\" contains \"=\"": true,
	} {
		x, err := parseExpect(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		blk := &Block{ID: "b", Variants: []*Variant{{Name: "v"}}}
		if err := x.bind(blk, newNames([]*Block{blk})); err != nil {
			t.Errorf("%s: bind: %v", expr, err)
			continue
		}
		m["b"]["v"]["connects"] = 3.0
		if got := x.eval(m).OK; got != want {
			t.Errorf("%s = %v, want %v", expr, got, want)
		}
	}
	for _, bad := range []string{"", "a", "1 ≈ 2", "1 == 2 ±3", "1 == (2", "1 == [1,", "1 == \"x", "1 == 2 ±x%", "1 == @"} {
		if _, err := parseExpect(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestChainIsTheWorkersBlock: the anatomy page's chain of users → nginx →
// PHP-FPM → the API gives on its API hop what the single hop of the same
// workers gives (the PHP pools lab's workers block): as many connections,
// and the same call times. One engine: the API hop is that single hop.
func TestChainIsTheWorkersBlock(t *testing.T) {
	run := func(file, id string) *BlockResult {
		l, err := ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Block(id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.RunVariants(context.Background(), RunOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	single, chain := run("../../labs/php-persistent-pools.md", "workers"), run("../../content/anatomy.md", "chain")
	of := func(r *BlockResult, name string) *sim.Summary {
		for _, v := range r.Variants {
			if v.Name == name && v.Summary != nil {
				return v.Summary
			}
		}
		t.Fatalf("%s: no variant %q", r.ID, name)
		return nil
	}
	for single2chain := range map[[2]string]bool{{"share", "cold"}: true, {"persistent", "kept"}: true} {
		name := single2chain[0]
		s, c := of(single, name), of(chain, single2chain[1])
		api, ok := c.Hop["api"]
		if !ok {
			t.Fatalf("chain/%s: no api hop", single2chain[1])
		}
		got := fmt.Sprintf("%d connects, %d reused, calls p50 %.3f p90 %.3f mean %.3f ms", api.Connects, api.Reused, api.Call.P50, api.Call.P90, api.Call.Mean)
		want := fmt.Sprintf("%d connects, %d reused, calls p50 %.3f p90 %.3f mean %.3f ms", s.Connects, s.Reused, s.Total.P50, s.Total.P90, s.Total.Mean)
		if got != want {
			t.Errorf("%s: the chain's API hop: %s; the workers block: %s", name, got, want)
		}
	}
}
