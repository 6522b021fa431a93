package class

import (
	"regexp"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim/i18n"
)

var (
	landingKeyRE = regexp.MustCompile(`\{\{t "([a-z]+)" "([a-z0-9_]+)"\}\}`)
	teacherKeyRE = regexp.MustCompile(`data-t="([a-z0-9_]+)"|\bT\.([a-z0-9_]+)|\btr\("([a-z0-9_]+)"`)
)

// Every word the class pages ask for is in sim/i18n, in both languages,
// and every class_ key there is asked for: the landing page's through t,
// the teacher's page's through its T (data-t, T.key, tr("key")), where a
// missing key would show "undefined".
func TestPageWords(t *testing.T) {
	used := map[string]bool{}
	for _, m := range landingKeyRE.FindAllStringSubmatch(landingHTML, -1) {
		used[m[2]] = true
		if _, ok := i18n.Lookup(m[1], m[2]); !ok {
			t.Errorf("landing.html asks for %s in %s, which sim/i18n/%s.toml lacks", m[2], m[1], m[1])
		}
	}
	if n := strings.Count(landingHTML, "{{t "); n != len(landingKeyRE.FindAllString(landingHTML, -1)) || n < 20 {
		t.Errorf("landing.html: %d calls of t, the pattern finds %d", n, len(landingKeyRE.FindAllString(landingHTML, -1)))
	}
	teacher := 0
	for _, m := range teacherKeyRE.FindAllStringSubmatch(teacherHTML, -1) {
		key := "class_teacher_" + m[1] + m[2] + m[3]
		used[key] = true
		teacher++
		for _, lang := range i18n.Langs {
			if _, ok := i18n.Lookup(lang, key); !ok {
				t.Errorf("teacher.html asks for %s, which sim/i18n/%s.toml lacks", key, lang)
			}
		}
	}
	if teacher < 30 {
		t.Errorf("teacher.html: the pattern finds only %d words", teacher)
	}
	for _, k := range i18n.Keys("en") {
		if strings.HasPrefix(k, "class_landing_") || strings.HasPrefix(k, "class_teacher_") {
			if !used[k] && !used[strings.TrimSuffix(k, "_one")] {
				t.Errorf("sim/i18n has %s, which no class page asks for", k)
			}
		}
	}
}
