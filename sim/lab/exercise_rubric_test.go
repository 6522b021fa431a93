package lab

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rubricCases are the cases a rubric matcher must agree on, in
// testdata/rubric.json: the page's twin
// (site/assets/ts/exercise/rubric.ts) is held to the same file by the
// site's browser test.
func rubricCases(t *testing.T) []struct {
	Answer string `json:"answer"`
	Phrase string `json:"phrase"`
	Want   bool   `json:"want"`
} {
	t.Helper()
	raw, err := os.ReadFile("testdata/rubric.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Answer string `json:"answer"`
		Phrase string `json:"phrase"`
		Want   bool   `json:"want"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestMentions(t *testing.T) {
	for _, c := range rubricCases(t) {
		if got := mentions(normalizeAnswer(c.Answer), c.Phrase); got != c.Want {
			t.Errorf("mentions(%q, %q) = %v, want %v", c.Answer, c.Phrase, got, c.Want)
		}
	}
}

// An explanation passes when it names enough key points; the verdict says
// which.
func TestRubricCheck(t *testing.T) {
	in := &Instance{Kind: "explain", Pass: 2, Rubric: []RubricPoint{
		{Point: "the server's idle timeout", Any: []string{"keepalive_timeout", "idle timeout", "타임아웃"}},
		{Point: "still open after 60 s, closed after 80 s", Any: []string{"still open", "already closed", "아직 열려"}},
		{Point: "traffic per worker", Any: []string{"per worker", "each worker", "워커마다"}},
	}}
	for answer, want := range map[string][]bool{
		"nginx's keepalive_timeout closed it; after 60 s it was still open":  {true, true, false},
		"Each worker has its own connection, and the idle timeout closes it": {true, false, true},
		"it is slow": {false, false, false},
		"서버의 타임아웃이 지나 닫혔고, 워커마다 연결이 따로 있습니다": {true, false, true},
	} {
		v, err := in.Check(answer)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ok := range want {
			if ok {
				n++
			}
		}
		if !slices.Equal(v.Points, want) || v.OK != (n >= 2) {
			t.Errorf("Check(%q) = %+v, want points %v", answer, v, want)
		}
	}
	if _, err := in.Check("  "); err == nil {
		t.Error("an empty explanation is not an answer")
	}
	// Without a rubric any explanation is accepted, as before.
	v, err := (&Instance{Kind: "explain"}).Check("anything")
	if err != nil || !v.OK || v.Points != nil {
		t.Errorf("no rubric: %+v %v", v, err)
	}
}

func TestRubricErrors(t *testing.T) {
	head := "+++\ntitle = \"t\"\n+++\n\n```exercise {id=\"e\"}\nkind = \"explain\"\nquestion = \"Why?\"\nmodel_answer = \"Because.\"\n"
	for body, want := range map[string]string{
		"rubric = []\n":                                              "want 1 to 8 key points",
		"rubric = [\"x\"]\n":                                         "want { point",
		"rubric = [{ point = \"p\" }]\n":                             "any: want 1 to 16",
		"rubric = [{ point = \"\", any = [\"a\"] }]\n":               "say the key point",
		"rubric = [{ point = \"p\", any = [\"a\"], why = \"w\" }]\n": "unknown key \"why\"",
		"rubric = [{ point = \"p\", any = [\"a\"] }]\npass = 2\n":    "pass: want how many",
		"pass = 1\n": "pass needs a rubric",
	} {
		l, err := Parse("x.md", []byte(head+body+"```\n"))
		if err == nil {
			_, err = l.Exercises()
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "x.md:") {
			t.Errorf("%q: %v, want x.md:LINE and %q", body, err, want)
		}
	}
	l, _ := Parse("x.md", []byte("+++\ntitle = \"t\"\n+++\n\n```exercise {id=\"e\"}\nkind = \"number\"\nquestion = \"q\"\nblock = \"b\"\nmetric = \"connects\"\ntolerance = 0\nrubric = [{ point = \"p\", any = [\"a\"] }]\n```\n"))
	if _, err := l.Exercises(); err == nil || !strings.Contains(err.Error(), "rubric belongs to kind = \"explain\"") {
		t.Errorf("a rubric on a number: %v", err)
	}
}

// Every explanation exercise of the labs, in each language, has a rubric
// that its own model answer passes, naming every key point, and that an
// answer naming none fails.
func TestLabRubrics(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.md")
	n := 0
	for _, f := range files {
		_, xs, err := ReadExercises(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			if x.Kind != "explain" {
				continue
			}
			n++
			if len(x.Rubric) == 0 {
				t.Errorf("%s:%d: exercise %s: an explanation needs a rubric (the key points it is checked against)", f, x.FenceLine, x.ID)
				continue
			}
			in := &Instance{Kind: "explain", Rubric: x.Rubric, Pass: x.Pass}
			v, err := in.Check(x.ModelAnswer)
			if err != nil || !v.OK || slices.Contains(v.Points, false) {
				t.Errorf("%s:%d: exercise %s: the model answer names key points %v of the rubric: each point needs a word it uses", f, x.FenceLine, x.ID, v.Points)
			}
			if v, _ := in.Check("I do not know."); v.OK {
				t.Errorf("%s: exercise %s: \"I do not know.\" passes the rubric", f, x.ID)
			}
		}
	}
	if n == 0 {
		t.Error("no explanation exercise in the labs")
	}
}
