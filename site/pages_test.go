package site

// Page checks. The pages are ../content/*.md (home, anatomy, reference, …)
// and ../labs/*.md, each in English (x.md) and Korean (x.ko.md). These tests
// hold them to the contract the site relies on:
//
//   - both languages exist, with the same front matter keys;
//   - every ```sim block parses and runs with every expectation met, and
//     the Korean file's blocks run the English ones' scenarios (their
//     texts are Korean);
//   - every {{< sim "BLOCK" "VARIANT" "METRIC" ["PAGE"] >}} resolves;
//   - every number the prose states comes from one of the page's blocks (a
//     parameter or an expectation) or from the reference page's table of
//     sourced defaults, whose values are checked against the model's
//     defaults: a changed default breaks a test, not a page;
//   - every `sim CMD` and `make TARGET` a page shows exists, and every
//     relref points at a page.

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/cli"
	"github.com/connlab/connlab/sim/lab"
	"github.com/pelletier/go-toml/v2"
)

// page is one file in one language.
type page struct {
	name     string // file name without .md / .ko.md: "anatomy", "_index"
	lang     string // "en" or "ko"
	path     string
	front    map[string]any
	body     string // after the front matter
	bodyLine int    // line of body's first line in the file
	lab      *lab.Lab
}

// requiredPages must exist in both languages.
var requiredPages = []string{
	"_index", "anatomy", "reference",
	"php-persistent-share", "php-persistent-pools", "connection-pool", "nginx-keepalive", "port-exhaustion", "idle-timeouts",
	"stack-connections",
}

var (
	loadOnce sync.Once
	loaded   map[string]map[string]*page // name → lang → page
	loadErr  error
)

// pages reads every page once for all tests.
func pages(t *testing.T) map[string]map[string]*page {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = loadPages("../content", "../labs") })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

func loadPages(dirs ...string) (map[string]map[string]*page, error) {
	out := map[string]map[string]*page{}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.md"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			p, err := readPage(f)
			if err != nil {
				return nil, err
			}
			if out[p.name] == nil {
				out[p.name] = map[string]*page{}
			}
			if prev := out[p.name][p.lang]; prev != nil {
				return nil, fmt.Errorf("%s and %s: two pages named %q", prev.path, f, p.name)
			}
			out[p.name][p.lang] = p
		}
	}
	return out, nil
}

func readPage(path string) (*page, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	base := filepath.Base(path)
	p := &page{path: path, lang: "en", name: strings.TrimSuffix(base, ".md")}
	if n, ok := strings.CutSuffix(base, ".ko.md"); ok {
		p.lang, p.name = "ko", n
	}
	if !bytes.HasPrefix(src, []byte("+++\n")) {
		return nil, fmt.Errorf("%s:1: front matter must open with +++ (TOML)", path)
	}
	end := bytes.Index(src[4:], []byte("\n+++\n"))
	if end < 0 {
		return nil, fmt.Errorf("%s:1: front matter has no closing +++", path)
	}
	fm := src[4 : 4+end+1]
	if err := toml.Unmarshal(fm, &p.front); err != nil {
		return nil, fmt.Errorf("%s: front matter: %v", path, err)
	}
	rest := 4 + end + 5
	p.body = string(src[rest:])
	p.bodyLine = 1 + bytes.Count(src[:rest], []byte("\n"))
	if p.lab, err = lab.ReadFile(path); err != nil {
		return nil, err
	}
	return p, nil
}

// sorted returns the pages' names in order, for stable output.
func sortedNames(all map[string]map[string]*page) []string {
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ---------------------------------------------------------------------------
// Both languages, front matter.

var frontKeys = []string{"title", "linkTitle", "weight", "summary"}

func TestBothLanguages(t *testing.T) {
	all := pages(t)
	for _, name := range requiredPages {
		if all[name] == nil {
			t.Errorf("page %q is missing (want content/ or labs/%s.md and %s.ko.md)", name, name, name)
		}
	}
	for _, name := range sortedNames(all) {
		en, ko := all[name]["en"], all[name]["ko"]
		switch {
		case en == nil:
			t.Errorf("%s: no English version (%s.md)", ko.path, name)
			continue
		case ko == nil:
			t.Errorf("%s: no Korean version (%s.ko.md)", en.path, name)
			continue
		}
		for _, p := range []*page{en, ko} {
			for _, k := range frontKeys {
				v, ok := p.front[k]
				switch {
				case !ok:
					t.Errorf("%s: front matter has no %s", p.path, k)
				case k == "weight":
					if _, isInt := v.(int64); !isInt {
						t.Errorf("%s: weight = %v: want an integer", p.path, v)
					}
				default:
					if s, _ := v.(string); strings.TrimSpace(s) == "" {
						t.Errorf("%s: %s: want a non-empty string", p.path, k)
					}
				}
			}
			other := ko
			if p == ko {
				other = en
			}
			for k := range p.front {
				if _, ok := other.front[k]; !ok {
					t.Errorf("%s: front matter key %q is missing from %s", p.path, k, other.path)
				}
			}
		}
		if en.front["weight"] != ko.front["weight"] {
			t.Errorf("%s: weight %v, but %s has %v", ko.path, ko.front["weight"], en.path, en.front["weight"])
		}
		// The Korean page is a translation, not a copy.
		if s, _ := ko.front["summary"].(string); hangulShare(s) < 0.3 {
			t.Errorf("%s: summary %q is not in Korean", ko.path, s)
		}
		if share := hangulShare(inlineCodeRE.ReplaceAllString(prose(ko.body), "")); share < 0.5 {
			t.Errorf("%s: only %.0f%% of the prose's letters are Hangul: translate the page", ko.path, 100*share)
		}
		if share := hangulShare(prose(en.body)); share > 0.01 {
			t.Errorf("%s: %.0f%% of the prose's letters are Hangul in the English page", en.path, 100*share)
		}
	}
}

// hangulShare is the fraction of letters in s that are Hangul.
func hangulShare(s string) float64 {
	var letters, hangul int
	for _, r := range s {
		if unicode.IsLetter(r) {
			letters++
			if unicode.Is(unicode.Hangul, r) {
				hangul++
			}
		}
	}
	if letters == 0 {
		return 0
	}
	return float64(hangul) / float64(letters)
}

// ---------------------------------------------------------------------------
// Blocks: they run, and both languages hold the same ones.

var (
	resultsMu sync.Mutex
	results   = map[string]map[string]*lab.BlockResult{} // page → block id → result
)

// runPage runs the English page's blocks once and returns them by id.
func runPage(t *testing.T, p *page) map[string]*lab.BlockResult {
	t.Helper()
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if r, ok := results[p.name]; ok {
		return r
	}
	out := map[string]*lab.BlockResult{}
	if len(p.lab.Blocks) > 0 {
		rs, err := p.lab.Run(context.Background(), nil, lab.RunOptions{Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		for _, r := range rs {
			out[r.ID] = r
		}
	}
	results[p.name] = out
	return out
}

func TestBlocksRun(t *testing.T) {
	all := pages(t)
	for _, name := range sortedNames(all) {
		p := all[name]["en"]
		if p == nil || len(p.lab.Blocks) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			rs := runPage(t, p)
			for _, b := range p.lab.Blocks {
				if len(b.Expects) == 0 {
					t.Errorf("%s:%d: block %q states no expectation: write what the prose says about it as expect = [...]", p.path, b.FenceLine, b.ID)
				}
				for _, c := range rs[b.ID].Checks {
					if !c.OK {
						t.Errorf("%s:%d: block %q: %s: got %s", p.path, c.Line, b.ID, c.Expect, c.Got)
					}
				}
			}
		})
	}
}

// A translation's blocks run the English blocks' scenarios: the same ids,
// keys, values, variants, expectations and prediction metric, in the same
// order. What a reader reads is the translation's own: title, note, variant
// labels, the TOML's comments, the prediction's question, unit, choices and
// explanation.
func TestTranslationsHaveTheSameBlocks(t *testing.T) {
	all := pages(t)
	for _, name := range sortedNames(all) {
		en, ko := all[name]["en"], all[name]["ko"]
		if en == nil || ko == nil {
			continue // TestBothLanguages reports it
		}
		ef, kf := simFences(en.lab), simFences(ko.lab)
		for i := 0; i < max(len(ef), len(kf)); i++ {
			switch {
			case i >= len(kf):
				t.Errorf("%s: block %q of %s is missing", ko.path, ef[i].Attrs["id"], en.path)
			case i >= len(ef):
				t.Errorf("%s:%d: block %q is not in %s", ko.path, kf[i].Line, kf[i].Attrs["id"], en.path)
			case !maps(ef[i].Attrs, kf[i].Attrs):
				t.Errorf("%s:%d: attributes %v, but %s:%d has %v", ko.path, kf[i].Line, kf[i].Attrs, en.path, ef[i].Line, ef[i].Attrs)
			default:
				eb, _ := en.lab.Block(ef[i].Attrs["id"])
				kb, _ := ko.lab.Block(kf[i].Attrs["id"])
				if d := lab.ScenarioDiff(eb, kb); d != "" {
					t.Errorf("%s:%d: block %q runs another scenario than %s:%d: %s (a translation changes only what a reader reads)",
						ko.path, kb.FenceLine, kb.ID, en.path, eb.FenceLine, d)
				}
			}
		}
	}
}

func simFences(l *lab.Lab) []*lab.Fence {
	var out []*lab.Fence
	for _, f := range l.Fences {
		if f.Lang == "sim" {
			out = append(out, f)
		}
	}
	return out
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// {{< sim "BLOCK" "VARIANT" "METRIC" ["PAGE"] >}}

var (
	shortcodeRE = regexp.MustCompile(`(?s)\{\{[<%]\s*(\w+)(.*?)[>%]\}\}`)
	argRE       = regexp.MustCompile(`^\s*"([^"]*)"`)
)

// shortcodeArgs splits a shortcode's arguments; all must be quoted.
func shortcodeArgs(s string) ([]string, bool) {
	var args []string
	for strings.TrimSpace(s) != "" {
		m := argRE.FindStringSubmatch(s)
		if m == nil {
			return nil, false
		}
		args = append(args, m[1])
		s = s[len(m[0]):]
	}
	return args, true
}

func TestSimReferences(t *testing.T) {
	all := pages(t)
	refs := 0
	for _, name := range sortedNames(all) {
		for _, p := range all[name] {
			for _, m := range shortcodeRE.FindAllStringSubmatchIndex(p.body, -1) {
				if p.body[m[2]:m[3]] != "sim" {
					continue
				}
				refs++
				where := fmt.Sprintf("%s:%d", p.path, p.bodyLine+strings.Count(p.body[:m[0]], "\n"))
				args, ok := shortcodeArgs(p.body[m[4]:m[5]])
				if !ok || len(args) < 3 || len(args) > 4 {
					t.Errorf("%s: want {{< sim \"BLOCK\" \"VARIANT\" \"METRIC\" [\"PAGE\"] >}}, got %s", where, p.body[m[0]:m[1]])
					continue
				}
				if err := resolveRef(t, all, p, args); err != nil {
					t.Errorf("%s: %s: %v", where, p.body[m[0]:m[1]], err)
				}
			}
		}
	}
	if refs == 0 {
		t.Error("no page uses {{< sim >}}: the test would prove nothing")
	}
}

// resolveRef finds the value a sim shortcode prints.
func resolveRef(t *testing.T, all map[string]map[string]*page, from *page, args []string) error {
	name := from.name
	if len(args) == 4 {
		name = args[3]
	}
	target := all[name]["en"]
	if target == nil {
		return fmt.Errorf("no page %q", name)
	}
	b, err := target.lab.Block(args[0])
	if err != nil {
		return err
	}
	if b.Variant(args[1]) == nil {
		var names []string
		for _, v := range b.Variants {
			names = append(names, v.Name)
		}
		return fmt.Errorf("block %q has no variant %q (variants: %s)", b.ID, args[1], strings.Join(names, ", "))
	}
	r := runPage(t, target)[b.ID]
	for _, v := range r.Variants {
		if v.Name != args[1] {
			continue
		}
		var cur any = lab.MetricsOf(v)
		for _, part := range strings.Split(args[2], ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return fmt.Errorf("no metric %q", args[2])
			}
			if cur, ok = m[part]; !ok {
				return fmt.Errorf("no metric %q (see sim run --json)", args[2])
			}
		}
		switch cur.(type) {
		case float64, []any:
			return nil
		case string:
			if args[2] == "error" {
				return nil
			}
		}
		return fmt.Errorf("metric %q of variant %q is %v, not a value to print", args[2], args[1], cur)
	}
	return fmt.Errorf("variant %q did not run", args[1])
}

// ---------------------------------------------------------------------------
// The numbers rule.

// A number is one numeric literal of a page's prose.
type number struct {
	text  string
	value float64 // seconds for durations, bytes for sizes, else as written
	raw   float64 // as written, whatever the unit
	class string  // "s" (a duration), "B" (a size) or "" (plain)
	line  int
}

// An allowance is a value a page may state: a block's parameter or
// expectation, or a sourced default from the reference table.
type allowance struct {
	lo, hi float64
	class  string
}

func (a allowance) admits(n number) bool {
	v := n.value
	if n.class == "" {
		if a.class != "" {
			return false
		}
		v = n.raw
	} else if a.class != n.class {
		return false
	}
	eps := 1e-9 * math.Max(1, math.Abs(v))
	return v >= a.lo-eps && v <= a.hi+eps
}

func exact(v float64, class string) allowance { return allowance{v, v, class} }

func TestNumbersHaveSources(t *testing.T) {
	all := pages(t)
	reg := registry(t, all)
	for _, name := range sortedNames(all) {
		en := all[name]["en"]
		if en == nil {
			continue
		}
		allowed := append(blockAllowances(en.lab), reg...)
		for _, p := range all[name] {
			for _, n := range pageNumbers(p) {
				if !admitted(allowed, n) {
					t.Errorf("%s:%d: %q is not a parameter or expectation of a block on this page nor a default in the reference table; "+
						"write {{< sim \"BLOCK\" \"VARIANT\" \"METRIC\" >}}, add an expectation, or cite the default in content/reference.md",
						p.path, n.line, n.text)
				}
			}
		}
	}
}

func admitted(allowed []allowance, n number) bool {
	for _, a := range allowed {
		if a.admits(n) {
			return true
		}
	}
	return false
}

// TestNumbersRuleCanFail: the rule flags a number nobody vouches for, and
// accepts the same sentence once a block states it.
func TestNumbersRuleCanFail(t *testing.T) {
	src := "+++\ntitle = \"t\"\n+++\n\nA cold call takes 93 ms; the pool has 8 connections.\n\n" +
		"```sim {id=\"b\"}\nrtt = \"12ms\"\nexpect = [\"total_ms.p50 ≈ 93 ±10%\"]\n```\n"
	l, err := lab.Parse("x.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p := &page{path: "x.md", body: src[strings.Index(src, "\nA")+1:], bodyLine: 5, front: map[string]any{}, lab: l}
	var flagged []string
	for _, n := range pageNumbers(p) {
		if !admitted(blockAllowances(l), n) {
			flagged = append(flagged, n.text)
		}
	}
	if !slices.Equal(flagged, []string{"8"}) {
		t.Errorf("flagged %q, want only the pool's 8", flagged)
	}
	// 88 ms is within the expectation's ±10%; 80 ms is not; 93 s is not 93 ms.
	for text, ok := range map[string]bool{"88 ms": true, "80 ms": false, "93 s": false, "12 ms": true, "0.012 s": true} {
		ns := scanNumbers(text, 1)
		if len(ns) != 1 {
			t.Fatalf("scanNumbers(%q) = %v", text, ns)
		}
		if got := admitted(blockAllowances(l), ns[0]); got != ok {
			t.Errorf("%q admitted = %v, want %v", text, got, ok)
		}
	}
}

func TestScanNumbers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // text=value/class, space-separated
	}{
		{"a median of 93 ms, then 14ms", "93 ms=0.093/s 14ms=0.014/s"},
		{"28,232 ports; 32768–60999", "28,232=28232/ 32768=32768/ 60999=60999/"},
		{"PHP 8.5.4, libcurl 8.19.0, Linux 4.19, TLS 1.3, HTTP/1.1, nginx 1.29.7", ""},
		{"curl 118 s, Go 90 s, nginx 75 s", "118 s=118/s 90 s=90/s 75 s=75/s"},
		{"errno 99, RFC 8446 §2, March 2026, IPv4, kb14, rate-600, 0-RTT, 4-tuple, 3way, connect(2)", ""},
		{"14.6 KB and 219000 B; 2³¹", "14.6 KB=14600/B 219000 B=219000/B 2³¹=2.147483648e+09/"},
		{"75초 동안, 93ms에서 14ms로, 28,232개, 2026년 3월", "75초=75/s 93ms=0.093/s 14ms=0.014/s 28,232=28232/"},
		{"1. first\n2) second\nthe 24 h lifetime", "24 h=86400/s"},
		{"`pm.max_requests = 2` and `net.ipv4.tcp_tw_reuse`", "2=2/"},
	} {
		var got []string
		for _, n := range scanNumbers(c.in, 1) {
			got = append(got, fmt.Sprintf("%s=%g/%s", n.text, n.value, n.class))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("scanNumbers(%q)\n got %s\nwant %s", c.in, g, c.want)
		}
	}
}

// pageNumbers lists the numbers a page's prose states: its title and
// summary, and its body without code blocks, shortcodes, comments and link
// targets.
func pageNumbers(p *page) []number {
	var out []number
	for _, k := range []string{"title", "linkTitle", "summary"} {
		if s, ok := p.front[k].(string); ok {
			out = append(out, scanNumbers(s, 1)...)
		}
	}
	return append(out, scanNumbers(prose(p.body), p.bodyLine)...)
}

var (
	commentRE = regexp.MustCompile(`(?s)<!--.*?-->`)
	linkRE    = regexp.MustCompile(`\]\([^)\s]*(\s+"[^"]*")?\)`)
	urlRE     = regexp.MustCompile(`<?https?://[^\s>)]+>?`)
)

// prose blanks what is not prose in a Markdown body, keeping its lines.
func prose(body string) string {
	lines := strings.Split(body, "\n")
	fence := ""
	for i, l := range lines {
		trim := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(trim, fence) && strings.Trim(trim, fence[:1]) == "" {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		for _, f := range []string{"```", "~~~"} {
			if strings.HasPrefix(trim, f) {
				n := len(trim) - len(strings.TrimLeft(trim, f[:1]))
				fence = strings.Repeat(f[:1], n)
				lines[i] = ""
			}
		}
	}
	s := strings.Join(lines, "\n")
	keepLines := func(m string) string { return strings.Repeat("\n", strings.Count(m, "\n")) + " " }
	s = shortcodeRE.ReplaceAllStringFunc(s, keepLines)
	s = commentRE.ReplaceAllStringFunc(s, keepLines)
	s = linkRE.ReplaceAllString(s, "]")
	return urlRE.ReplaceAllString(s, " ")
}

// Units a number may carry, by the factor to seconds or bytes.
var (
	durationUnits = map[string]float64{
		"µs": 1e-6, "us": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
		"ms": 1e-3, "msec": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
		"s": 1, "sec": 1, "second": 1, "seconds": 1,
		"min": 60, "minute": 60, "minutes": 60,
		"h": 3600, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400,
	}
	sizeUnits = map[string]float64{"B": 1, "byte": 1, "bytes": 1, "KB": 1e3, "kB": 1e3, "KiB": 1024, "MB": 1e6, "GB": 1e9}
	// Korean units attach to the number and take particles after them;
	// longest first.
	koreanUnits = []struct {
		prefix string
		factor float64
		class  string
	}{
		{"마이크로초", 1e-6, "s"}, {"밀리초", 1e-3, "s"}, {"초", 1, "s"}, {"분", 60, "s"}, {"시간", 3600, "s"},
		{"킬로바이트", 1e3, "B"}, {"바이트", 1, "B"},
		{"년", 0, "date"}, {"월", 0, "date"},
	}
	// A dotted number after one of these words is a version.
	versionWords = map[string]bool{
		"php": true, "nginx": true, "linux": true, "libcurl": true, "curl": true, "tls": true, "http": true,
		"openssl": true, "go": true, "flask": true, "hugo": true, "chrome": true, "chromium": true,
		"apache": true, "httpd": true, "macos": true, "werkzeug": true, "redis": true, "redis-py": true, "python": true,
		"version": true, "ubuntu": true, "debian": true, "guzzle": true, "kernel": true, "since": true,
		"gunicorn": true, "redis-server": true, "siege": true,
	}
	// Any number after one of these words names something.
	nameWords = map[string]bool{
		"rfc": true, "errno": true, "january": true, "february": true, "march": true, "april": true,
		"may": true, "june": true, "july": true, "august": true, "september": true, "october": true,
		"november": true, "december": true,
	}
	superscripts = map[rune]int{'⁰': 0, '¹': 1, '²': 2, '³': 3, '⁴': 4, '⁵': 5, '⁶': 6, '⁷': 7, '⁸': 8, '⁹': 9}
)

func isDigit(r rune) bool       { return r >= '0' && r <= '9' }
func isASCIILetter(r rune) bool { return r < 128 && unicode.IsLetter(r) }

// scanNumbers finds the numeric literals in s (whose first line is line).
// It leaves out digits that are part of a name (IPv4, kb14, rate-600,
// 0-RTT, C1, #18527, §2), versions (PHP 8.5, nginx 1.29.7, HTTP/1.1), RFC
// and errno numbers, dates, and list markers.
func scanNumbers(s string, line int) []number {
	rs := []rune(s)
	var out []number
	at := func(i int) rune {
		if i < 0 || i >= len(rs) {
			return 0
		}
		return rs[i]
	}
	for i := 0; i < len(rs); i++ {
		if rs[i] == '\n' {
			line++
			continue
		}
		if !isDigit(rs[i]) {
			continue
		}
		start := i
		j := i
		for isDigit(at(j)) {
			j++
		}
		// 28,232: thousands groups.
		for j-start <= 3 || strings.Contains(string(rs[start:j]), ",") {
			if at(j) == ',' && isDigit(at(j+1)) && isDigit(at(j+2)) && isDigit(at(j+3)) && !isDigit(at(j+4)) {
				j += 4
				continue
			}
			break
		}
		version := false
		if at(j) == '.' && isDigit(at(j+1)) {
			j++
			for isDigit(at(j)) {
				j++
			}
			for at(j) == '.' && isDigit(at(j+1)) { // 8.19.0
				version = true
				j++
				for isDigit(at(j)) {
					j++
				}
			}
		}
		text := string(rs[start:j])
		raw, _ := strconv.ParseFloat(strings.ReplaceAll(text, ",", ""), 64)
		exp, hasExp := 0, false
		for k, ok := superscripts[at(j)]; ok; k, ok = superscripts[at(j)] {
			exp, hasExp = exp*10+k, true
			j++
		}
		if hasExp {
			raw = math.Pow(raw, float64(exp))
			text = string(rs[start:j])
		}
		i = j - 1
		// What comes before: part of a name, or a word that makes it one.
		prev := at(start - 1)
		if isASCIILetter(prev) || isDigit(prev) || strings.ContainsRune("_./#§$%@", prev) ||
			prev == '-' && !isDigit(at(start-2)) || prev == '(' && isASCIILetter(at(start-2)) { // connect(2)
			continue
		}
		word := prevWord(rs, start)
		if nameWords[word] || version || versionWords[word] && strings.Contains(text, ".") {
			continue
		}
		if lineStart(rs, start) && (at(j) == '.' || at(j) == ')') && (at(j+1) == ' ' || at(j+1) == '\n') {
			continue // a list marker
		}
		// What comes after: a unit, or letters that make it a name.
		n := number{text: text, value: raw, raw: raw, line: line}
		k := j
		if at(k) == '-' && isASCIILetter(at(k+1)) { // 0-RTT, 4-tuple
			continue
		}
		if at(k) == ' ' || at(k) == '\u00a0' || at(k) == '\u202f' || at(k) == '\u2009' {
			k++
		}
		w := k
		for isASCIILetter(at(w)) || at(w) == 'µ' {
			w++
		}
		unit := string(rs[k:w])
		attached := k == j
		switch {
		case unit == "":
			if prefix, f, class, ok := koreanUnit(rs[k:]); ok {
				if class == "date" {
					continue
				}
				n.value, n.class, n.text = raw*f, class, string(rs[start:k])+prefix
			}
		case durationUnits[unit] > 0:
			n.value, n.class, n.text = raw*durationUnits[unit], "s", string(rs[start:w])
		case sizeUnits[unit] > 0:
			n.value, n.class, n.text = raw*sizeUnits[unit], "B", string(rs[start:w])
		case attached:
			continue // 3way, 2xx: a name
		}
		out = append(out, n)
	}
	return out
}

// koreanUnit reads the unit at the start of rs, if any.
func koreanUnit(rs []rune) (prefix string, factor float64, class string, ok bool) {
	s := string(rs[:min(len(rs), 8)])
	for _, u := range koreanUnits {
		if strings.HasPrefix(s, u.prefix) {
			return u.prefix, u.factor, u.class, true
		}
	}
	return "", 0, "", false
}

// prevWord returns the lower-cased word before position i, across spaces.
func prevWord(rs []rune, i int) string {
	j := i - 1
	for j >= 0 && (rs[j] == ' ' || rs[j] == '\u00a0' || rs[j] == '(') {
		j--
	}
	end := j + 1
	for j >= 0 && (unicode.IsLetter(rs[j]) || isDigit(rs[j]) || rs[j] == '-') {
		j--
	}
	return strings.ToLower(string(rs[j+1 : end]))
}

func lineStart(rs []rune, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch rs[j] {
		case '\n':
			return true
		case ' ', '\t':
		default:
			return false
		}
	}
	return true
}

// blockAllowances lists the values a lab's blocks state: every scenario
// parameter of every block and variant, and every number of every
// expectation (a target with its tolerance).
func blockAllowances(l *lab.Lab) []allowance {
	var out []allowance
	for _, b := range l.Blocks {
		settings := slices.Clone(b.Base)
		for _, v := range b.Variants {
			settings = append(settings, v.Settings...)
		}
		for _, st := range settings {
			out = append(out, settingAllowances(st)...)
		}
		for _, x := range b.Expects {
			out = append(out, expectAllowances(x.Text)...)
		}
	}
	return out
}

func settingAllowances(st lab.Setting) []allowance {
	bytesKey := strings.HasSuffix(st.Key, "_bytes") || st.Key == "mss"
	num := func(v float64) []allowance {
		out := []allowance{exact(v, "")}
		if bytesKey {
			out = append(out, exact(v, "B"))
		}
		return out
	}
	switch v := st.Value.(type) {
	case int64:
		return num(float64(v))
	case float64:
		return num(v)
	case string:
		if d, err := time.ParseDuration(v); err == nil {
			out := []allowance{exact(d.Seconds(), "s")}
			if m := leadingNumber.FindString(v); m != "" {
				f, _ := strconv.ParseFloat(m, 64)
				out = append(out, exact(f, ""))
			}
			return out
		}
		if r, err := sim.ParsePortRange(v); err == nil {
			return []allowance{exact(float64(r.Lo), ""), exact(float64(r.Hi), "")}
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return num(f)
		}
	}
	return nil
}

var (
	leadingNumber = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?`)
	toleranceRE   = regexp.MustCompile(`≈\s*([0-9][0-9_.]*)\s*±\s*([0-9.]+)(%?)`)
	timeMetricRE  = regexp.MustCompile(`[a-z]_(ms|s)\b`)
	exprNumberRE  = regexp.MustCompile(`(^|[^A-Za-z0-9_.-])([0-9][0-9_]*(\.[0-9]+)?)`)
)

// expectAllowances reads the numbers of one expectation. A number compared
// with a time metric (total_ms, first_port_error_s) is also a duration.
func expectAllowances(text string) []allowance {
	scale := 0.0
	if m := timeMetricRE.FindStringSubmatch(text); m != nil {
		scale = map[string]float64{"ms": 1e-3, "s": 1}[m[1]]
	}
	var out []allowance
	add := func(lo, hi float64) {
		out = append(out, allowance{lo, hi, ""})
		if scale > 0 {
			out = append(out, allowance{lo * scale, hi * scale, "s"})
		}
	}
	for _, m := range toleranceRE.FindAllStringSubmatch(text, -1) {
		x, _ := strconv.ParseFloat(strings.ReplaceAll(m[1], "_", ""), 64)
		tol, _ := strconv.ParseFloat(m[2], 64)
		if m[3] == "%" {
			tol = math.Abs(x) * tol / 100
		}
		add(x-tol, x+tol)
	}
	rest := toleranceRE.ReplaceAllString(text, " ")
	for _, m := range exprNumberRE.FindAllStringSubmatch(rest, -1) {
		x, _ := strconv.ParseFloat(strings.ReplaceAll(m[2], "_", ""), 64)
		add(x, x)
	}
	return out
}

// ---------------------------------------------------------------------------
// The reference table: sourced defaults, checked against the model.

// A registryRow is one row of the reference page's table of defaults:
// | setting | default | connlab | source |.
type registryRow struct {
	line    int
	setting string
	values  []number
	model   string // what in connlab holds it ("" for —)
	sources []string
}

// modelValues are the connlab values a reference row may name, beyond the
// scenario keys (whose defaults come from sim.Default()).
var modelValues = map[string]func(sim.Scenario) (float64, string){
	"sim.TimeWaitLen":  func(sim.Scenario) (float64, string) { return sim.TimeWaitLen.Seconds(), "s" },
	"sim.TWReuseDelay": func(sim.Scenario) (float64, string) { return sim.TWReuseDelay.Seconds(), "s" },
	"sim.PortShufflePeriod": func(sim.Scenario) (float64, string) {
		return sim.PortShufflePeriod.Seconds(), "s"
	},
	"port_range size": func(d sim.Scenario) (float64, string) { return float64(d.PortRange.Size()), "" },
	"port_range size ÷ sim.TimeWaitLen": func(d sim.Scenario) (float64, string) {
		return float64(d.PortRange.Size()) / sim.TimeWaitLen.Seconds(), ""
	},
	"init_cwnd × mss": func(d sim.Scenario) (float64, string) { return float64(d.InitCwnd * d.MSS), "B" },
}

// registry returns the reference table's values as allowances for every
// page, after checking the table.
func registry(t *testing.T, all map[string]map[string]*page) []allowance {
	t.Helper()
	ref := all["reference"]
	if ref["en"] == nil {
		t.Fatal("no content/reference.md: it holds the sourced defaults pages may state")
	}
	rows, _ := registryRows(ref["en"]) // TestReferenceMatchesModel reports its problems
	var out []allowance
	for _, r := range rows {
		for _, n := range r.values {
			out = append(out, exact(n.value, n.class))
			if n.class != "" {
				out = append(out, exact(n.raw, ""))
			}
		}
	}
	return out
}

var sourceKeyRE = regexp.MustCompile(`(?m)^\s*[-*]\s+\*\*([A-Z][A-Z0-9/]*)\*\*`)

// registryRows parses the table of defaults of a reference page and
// reports what is wrong with it.
func registryRows(p *page) (rows []registryRow, problems []string) {
	fail := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: ", p.path, line)+fmt.Sprintf(format, args...))
	}
	defined := map[string]bool{}
	for _, m := range sourceKeyRE.FindAllStringSubmatch(p.body, -1) {
		for _, k := range strings.Split(m[1], "/") {
			defined[k] = true
		}
	}
	inTable := false
	for i, l := range strings.Split(p.body, "\n") {
		line := p.bodyLine + i
		if !strings.HasPrefix(l, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if len(cells) == 4 && cells[2] == "connlab" {
			inTable = true // the header
			continue
		}
		if !inTable || strings.HasPrefix(cells[0], "---") || strings.HasPrefix(cells[0], ":--") {
			continue
		}
		if len(cells) != 4 {
			fail(line, "want 4 cells (setting | default | connlab | source), got %d", len(cells))
			continue
		}
		r := registryRow{line: line, setting: cells[0], values: scanNumbers(cells[1], line)}
		if cells[2] != "—" {
			r.model = strings.ReplaceAll(cells[2], "`", "")
		}
		for _, s := range strings.FieldsFunc(cells[3], func(r rune) bool { return r == ',' || r == ' ' }) {
			r.sources = append(r.sources, s)
			if !defined[s] {
				fail(line, "source %q is not in the page's list of sources (- **%s** …)", s, s)
			}
		}
		if len(r.values) == 0 {
			fail(line, "%s: the default %q holds no number", r.setting, cells[1])
		}
		if len(r.sources) == 0 {
			fail(line, "%s: no source", r.setting)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		fail(0, "no table of defaults (a table whose header's third cell is \"connlab\")")
	}
	return rows, problems
}

// modelDefault returns what connlab holds for a reference row: a scenario
// key's default, a constant, or a value derived from defaults.
func modelDefault(name string) (vals []float64, class string, err error) {
	d := sim.Default()
	if f, ok := modelValues[name]; ok {
		v, c := f(d)
		return []float64{v}, c, nil
	}
	s, ok := d.Get(name)
	p, _ := sim.LookupParam(name)
	if !ok {
		return nil, "", fmt.Errorf("%q is neither a scenario key (sim params) nor one of the derived values this test knows", name)
	}
	switch p.Kind {
	case "duration":
		dur, err := time.ParseDuration(s)
		return []float64{dur.Seconds()}, "s", err
	case "ports":
		r, err := sim.ParsePortRange(s)
		return []float64{float64(r.Lo), float64(r.Hi)}, "", err
	case "bool":
		return []float64{map[string]float64{"true": 1}[s]}, "", nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, "", fmt.Errorf("default %q of %s is not a number", s, name)
	}
	return []float64{f}, "", nil
}

func TestReferenceMatchesModel(t *testing.T) {
	all := pages(t)
	ref := all["reference"]
	if ref["en"] == nil || ref["ko"] == nil {
		t.Fatal("content/reference.md and reference.ko.md are both needed")
	}
	en, problems := registryRows(ref["en"])
	ko, koProblems := registryRows(ref["ko"])
	for _, p := range append(problems, koProblems...) {
		t.Error(p)
	}
	checked := 0
	for _, r := range en {
		if r.model == "" {
			continue
		}
		want, class, err := modelDefault(r.model)
		if err != nil {
			t.Errorf("%s:%d: %s: %v", ref["en"].path, r.line, r.setting, err)
			continue
		}
		checked++
		if len(r.values) < len(want) {
			t.Errorf("%s:%d: %s states %d number(s); connlab's %s has %v", ref["en"].path, r.line, r.setting, len(r.values), r.model, want)
			continue
		}
		for i, w := range want {
			n := r.values[i]
			got, gotClass := n.value, n.class
			if class == "" {
				got, gotClass = n.raw, ""
			}
			if gotClass != class || math.Abs(got-w) > 0.005*math.Max(1, math.Abs(w)) {
				t.Errorf("%s:%d: %s: the page says %s, connlab's %s is %g%s: update the page and every page that states it",
					ref["en"].path, r.line, r.setting, n.text, r.model, w, map[string]string{"s": " s", "B": " B"}[class])
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d reference rows name what connlab holds; the check would prove little", checked)
	}
	if len(en) != len(ko) {
		t.Fatalf("%s has %d rows of defaults, %s has %d", ref["en"].path, len(en), ref["ko"].path, len(ko))
	}
	for i := range en {
		e, k := en[i], ko[i]
		if k.model != e.model || !slices.Equal(k.sources, e.sources) || len(k.values) != len(e.values) {
			t.Errorf("%s:%d: row differs from %s:%d (same values, connlab cell and sources in both languages)", ref["ko"].path, k.line, ref["en"].path, e.line)
			continue
		}
		for j := range e.values {
			if e.values[j].value != k.values[j].value || e.values[j].class != k.values[j].class {
				t.Errorf("%s:%d: %s, but %s:%d has %s", ref["ko"].path, k.line, k.values[j].text, ref["en"].path, e.line, e.values[j].text)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Commands and links a page shows.

var (
	inlineCodeRE = regexp.MustCompile("`([^`\n]+)`")
	simCmdRE     = regexp.MustCompile(`(?:^|[\s/(])sim\s+([a-z][a-z-]*)`)
	makeRE       = regexp.MustCompile(`(?:^|[\s(])make\s+([a-z][a-z-]*)`)
	setRE        = regexp.MustCompile(`--set[ =]([a-z_]+)=`)
	targetRE     = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
	refRE        = regexp.MustCompile(`\{\{<\s*(?:rel)?ref\s+"([^"]+)"\s*>\}\}`)
)

// code returns a page's inline code and the bodies of its shell blocks.
func code(body string) []string {
	var out []string
	for _, m := range inlineCodeRE.FindAllStringSubmatch(prose(body), -1) {
		out = append(out, m[1])
	}
	const (
		outside = iota
		shell   // a block of commands: collect it
		other   // another language: skip it
	)
	state := outside
	var cur []string
	for _, l := range strings.Split(body, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case state == outside && strings.HasPrefix(t, "```"):
			state, cur = other, nil
			switch strings.TrimPrefix(t, "```") {
			case "", "sh", "shell", "console", "bash":
				state = shell
			}
		case state != outside && t == "```":
			if state == shell {
				out = append(out, strings.Join(cur, "\n"))
			}
			state = outside
		case state == shell:
			cur = append(cur, l)
		}
	}
	return out
}

func TestCommandsExist(t *testing.T) {
	var help bytes.Buffer
	cli.Run(context.Background(), &cli.Env{Stdout: &help, Stderr: &help}, []string{"help"})
	cmds := map[string]bool{}
	for _, l := range strings.Split(help.String(), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(l, "  ") {
			cmds[f[0]] = true
		}
	}
	if !cmds["run"] {
		t.Fatalf("sim help lists no run command:\n%s", help.String())
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range targetRE.FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	all := pages(t)
	seen := 0
	for _, name := range sortedNames(all) {
		for _, p := range all[name] {
			for _, c := range code(p.body) {
				for _, m := range simCmdRE.FindAllStringSubmatch(c, -1) {
					seen++
					if !cmds[m[1]] {
						t.Errorf("%s: `%s` shows `sim %s`, which sim help does not list", p.path, c, m[1])
					}
				}
				for _, m := range makeRE.FindAllStringSubmatch(c, -1) {
					seen++
					if !targets[m[1]] {
						t.Errorf("%s: `%s` shows `make %s`, which the Makefile does not define", p.path, c, m[1])
					}
				}
				for _, m := range setRE.FindAllStringSubmatch(c, -1) {
					if _, ok := sim.LookupParam(m[1]); !ok {
						t.Errorf("%s: `%s` sets %q, which is not a scenario key (sim params)", p.path, c, m[1])
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Error("no page shows a sim or make command")
	}
}

func TestLinks(t *testing.T) {
	all := pages(t)
	for _, name := range sortedNames(all) {
		for _, p := range all[name] {
			for _, m := range refRE.FindAllStringSubmatch(p.body, -1) {
				target := strings.TrimPrefix(m[1], "/")
				target, _, _ = strings.Cut(target, "#")
				target = strings.TrimSuffix(target, "/")
				if target == "" {
					target = "_index"
				}
				target = strings.TrimSuffix(target, ".md")
				path := filepath.Join("../content", target+".md")
				if rest, ok := strings.CutPrefix(target, "labs/"); ok {
					path = filepath.Join("../labs", rest+".md")
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: %s points at %s, which does not exist", p.path, m[0], path)
				}
			}
		}
	}
}
