package lab

import (
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
