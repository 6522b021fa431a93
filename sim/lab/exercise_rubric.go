package lab

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An explain exercise is checked against its rubric: the key points a
// good answer names, each with the words (synonyms, in the page's language
// and in English) that count as naming it.
//
//	rubric = [
//	  { point = "the server closes an idle connection after keepalive_timeout", any = ["keepalive_timeout", "idle timeout", "75"] },
//	  { point = "after 60 s it is still open, after 80 s it is gone", any = ["still open", "already closed"] },
//	]
//	pass = 2       # points an answer must name (default: all of them)
//
// The key points are shown after the student's answer, each marked found
// or missing. A worked example (worked = "…", any kind) is shown before the
// question, folded, for the student who wants to see one first.

// A RubricPoint is one key point of an explanation.
type RubricPoint struct {
	Point string   `json:"point"`
	Any   []string `json:"any"`
}

const (
	maxRubricPoints = 8
	maxSynonyms     = 16
)

// rubric reads rubric, pass and worked.
func (r *exerciseReader) rubric() error {
	x := r.x
	var err error
	if x.Worked, err = r.str("worked", false); err != nil {
		return err
	}
	v, ok := r.doc["rubric"]
	if !ok {
		if _, has := r.doc["pass"]; has {
			return r.fail("pass", "pass needs a rubric")
		}
		return nil
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 || len(list) > maxRubricPoints {
		return r.fail("rubric", `rubric: want 1 to %d key points, e.g. rubric = [{ point = "…", any = ["word", "synonym"] }]`, maxRubricPoints)
	}
	for i, e := range list {
		key := fmt.Sprintf("rubric[%d]", i)
		if x.lines[key] == 0 {
			key = "rubric"
		}
		m, ok := e.(map[string]any)
		if !ok {
			return r.fail(key, `rubric[%d]: want { point = "…", any = ["…"] }`, i)
		}
		for k := range m {
			if k != "point" && k != "any" {
				return r.fail(key, "rubric[%d]: unknown key %q (point, any)", i, k)
			}
		}
		p := RubricPoint{}
		p.Point, _ = m["point"].(string)
		if strings.TrimSpace(p.Point) == "" || len(p.Point) > MaxExerciseText {
			return r.fail(key, "rubric[%d]: point: say the key point in a sentence", i)
		}
		words, _ := m["any"].([]any)
		if len(words) == 0 || len(words) > maxSynonyms {
			return r.fail(key, "rubric[%d]: any: want 1 to %d words or phrases that name the point", i, maxSynonyms)
		}
		for j, w := range words {
			s, ok := w.(string)
			if !ok || strings.TrimSpace(normalizeAnswer(s)) == "" || len(s) > 200 {
				return r.fail(key, "rubric[%d]: any[%d]: want a word or phrase", i, j)
			}
			p.Any = append(p.Any, s)
		}
		x.Rubric = append(x.Rubric, p)
	}
	x.Pass = len(x.Rubric)
	if pv, ok := r.doc["pass"]; ok {
		n, ok := toInt(pv)
		if !ok || n < 1 || n > len(x.Rubric) {
			return r.fail("pass", "pass: want how many key points an answer must name, 1 to %d", len(x.Rubric))
		}
		x.Pass = n
	}
	return nil
}

// normalizeAnswer lower-cases s and folds its runs of spaces (and the
// punctuation between words) into one space, so that "Keep-alive  timeout"
// and "keep-alive timeout" read alike. Letters, digits, '_', '.', '-' and
// ':' stay: they are part of names (keepalive_timeout, 0.5, 127.0.0.1).
func normalizeAnswer(s string) string {
	var b strings.Builder
	space := true
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_.-:%", r) {
			b.WriteRune(r)
			space = false
			continue
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

func isASCIIAlnum(r rune) bool {
	return r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// mentions reports whether the normalized text names the phrase: found
// where a word may start (not inside an ASCII word or number: "60" is not
// in "600", "tcp" is not in "httpcp") and ending where the phrase does for
// a number ("60" is not "600") or a short word ("fin" is not in "final"),
// while a longer word may take an ending ("timeout" names "timeouts").
// Korean particles may follow a phrase (타임아웃이).
func mentions(text, phrase string) bool {
	p := normalizeAnswer(phrase)
	if p == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(p)
	last, _ := utf8.DecodeLastRuneInString(p)
	tail := 0 // ASCII letters the phrase ends with
	for i := len(p) - 1; i >= 0 && p[i] < utf8.RuneSelf && unicode.IsLetter(rune(p[i])); i-- {
		tail++
	}
	for i := 0; i <= len(text)-len(p); {
		j := strings.Index(text[i:], p)
		if j < 0 {
			return false
		}
		at := i + j
		before, _ := utf8.DecodeLastRuneInString(text[:at])
		after, _ := utf8.DecodeRuneInString(text[at+len(p):])
		okStart := at == 0 || !isASCIIAlnum(first) || !isASCIIAlnum(before)
		okEnd := at+len(p) == len(text) ||
			(!unicode.IsDigit(last) || !unicode.IsDigit(after)) && (tail == 0 || tail > 3 || !isASCIIAlnum(after))
		if okStart && okEnd {
			return true
		}
		_, size := utf8.DecodeRuneInString(text[at:])
		i = at + size
	}
	return false
}

// GradeRubric says which key points an answer names.
func GradeRubric(answer string, rubric []RubricPoint) []bool {
	text := normalizeAnswer(answer)
	out := make([]bool, len(rubric))
	for i, p := range rubric {
		for _, w := range p.Any {
			if mentions(text, w) {
				out[i] = true
				break
			}
		}
	}
	return out
}
