package site

// Teaching checks on the pages' sources (no build): the Korean pages keep
// the glossary's terms, both languages link to the same pages, every page
// opens with what it teaches and how long it takes (and says so truly), and
// no prose states a block's result above the point where the page asks the
// reader to predict it.

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// glossary is site/data/glossary.toml.
type glossary struct {
	Term []struct {
		En    string   `toml:"en"`
		Also  []string `toml:"also"`
		Ko    string   `toml:"ko"`
		Keep  bool     `toml:"keep"`
		Avoid []string `toml:"avoid"`
		Why   string   `toml:"why"`
	} `toml:"term"`
	Proper struct {
		Words []string `toml:"words"`
	} `toml:"proper"`
}

func readGlossary(t testing.TB) *glossary {
	t.Helper()
	src, err := os.ReadFile("data/glossary.toml")
	if err != nil {
		t.Fatal(err)
	}
	var g glossary
	if err := toml.Unmarshal(src, &g); err != nil {
		t.Fatalf("site/data/glossary.toml: %v", err)
	}
	return &g
}

// koreanTexts are the Korean UI strings a page shows besides its own file.
func koreanTexts(t testing.TB) (string, string) {
	t.Helper()
	src, err := os.ReadFile("i18n/ko.toml")
	if err != nil {
		t.Fatal(err)
	}
	return "site/i18n/ko.toml", string(src)
}

// Every Korean page (front matter, prose, blocks, exercises) and the Korean
// UI strings keep the glossary: no calque it names, and the Korean word for
// every term its English page uses.
func TestGlossary(t *testing.T) {
	g := readGlossary(t)
	if len(g.Term) < 10 {
		t.Fatalf("the glossary has %d terms", len(g.Term))
	}
	all := pages(t)
	type text struct{ path, body string }
	var kos []text
	for _, name := range sortedNames(all) {
		if ko := all[name]["ko"]; ko != nil {
			src, err := os.ReadFile(ko.path)
			if err != nil {
				t.Fatal(err)
			}
			kos = append(kos, text{ko.path, string(src)})
		}
	}
	path, ui := koreanTexts(t)
	kos = append(kos, text{path, ui})
	for _, term := range g.Term {
		if term.En == "" || term.Ko == "" || term.Why == "" {
			t.Errorf("glossary term %+v: en, ko and why are needed", term)
			continue
		}
		for _, a := range term.Avoid {
			re, err := regexp.Compile(a)
			if err != nil {
				t.Errorf("glossary %q: avoid %q: %v", term.En, a, err)
				continue
			}
			for _, k := range kos {
				for _, loc := range re.FindAllStringIndex(k.body, -1) {
					line := 1 + strings.Count(k.body[:loc[0]], "\n")
					t.Errorf("%s:%d: %q: write %q (%s)", k.path, line, k.body[loc[0]:loc[1]], term.Ko, term.Why)
				}
			}
		}
	}
	// A term the English page uses appears in its Korean page in the
	// glossary's form.
	for _, name := range sortedNames(all) {
		en, ko := all[name]["en"], all[name]["ko"]
		if en == nil || ko == nil {
			continue
		}
		enText := strings.ToLower(prose(en.body))
		koSrc, _ := os.ReadFile(ko.path)
		for _, term := range g.Term {
			uses := false
			for _, w := range append([]string{term.En}, term.Also...) {
				if regexp.MustCompile(`\b` + regexp.QuoteMeta(strings.ToLower(w)) + `\b`).MatchString(enText) {
					uses = true
				}
			}
			if uses && !strings.Contains(string(koSrc), term.Ko) {
				t.Errorf("%s uses %q, but %s never writes %q (the glossary's word for it)", en.path, term.En, ko.path, term.Ko)
			}
		}
	}
}

// TestGlossaryCanFail: a calque on a Korean page is named.
func TestGlossaryCanFail(t *testing.T) {
	g := readGlossary(t)
	found := 0
	for _, term := range g.Term {
		for _, a := range term.Avoid {
			for _, s := range []string{"차가운 호출 하나", "닫힌 부하와 열린 부하", "연결 하나의 값"} {
				if regexp.MustCompile(a).MatchString(s) {
					found++
				}
			}
		}
	}
	if found < 4 {
		t.Errorf("the glossary flags %d of the issue's four calques", found)
	}
}

var pageLinkRE = regexp.MustCompile(`\{\{<\s*(?:rel)?ref\s+"([^"#]+)(#[^"]*)?"\s*>\}\}|\]\((https?://[^)\s]+)\)`)

// pageLinks lists the pages and addresses a page links to, with how often.
func pageLinks(body string) map[string]int {
	out := map[string]int{}
	for _, m := range pageLinkRE.FindAllStringSubmatch(body, -1) {
		target := m[1]
		if target == "" {
			target = m[3]
		}
		out[strings.TrimPrefix(target, "/")]++
	}
	return out
}

// The English and Korean pages link to the same pages and addresses, as
// often.
func TestSameLinks(t *testing.T) {
	all := pages(t)
	checked := 0
	for _, name := range sortedNames(all) {
		en, ko := all[name]["en"], all[name]["ko"]
		if en == nil || ko == nil {
			continue
		}
		el, kl := pageLinks(en.body), pageLinks(ko.body)
		var targets []string
		for k := range el {
			targets = append(targets, k)
		}
		for k := range kl {
			if _, ok := el[k]; !ok {
				targets = append(targets, k)
			}
		}
		slices.Sort(targets)
		for _, k := range targets {
			checked++
			if el[k] != kl[k] {
				t.Errorf("%s links to %s %d time(s), %s %d time(s)", en.path, k, el[k], ko.path, kl[k])
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d links checked", checked)
	}
}

func fmtList(xs []string) string { return fmt.Sprintf("%q", xs) }
