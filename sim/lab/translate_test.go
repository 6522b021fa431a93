package lab

import (
	"strings"
	"testing"
)

// A translation's block may change what a reader reads, not what runs.
func TestScenarioDiff(t *testing.T) {
	en := "```sim {id=\"b\"}\ntitle = \"Ten calls\"\nnote = \"One worker.\"\nrequests = 10 # ten\nrtt = \"12ms\"\nexpect = [\"p.connects == 1\"]\n" +
		"[predict]\nquestion = \"How many?\"\nmetric = \"p.connects\"\nunit = \"connections\"\ntolerance = 0\n" +
		"[[variant]]\nname = \"p\"\nlabel = \"persistent\"\nreuse = \"process\"\n```\n"
	block := func(src string) *Block {
		t.Helper()
		l, err := Parse("x.md", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return l.Blocks[0]
	}
	a := block(en)
	ko := strings.NewReplacer("Ten calls", "호출 열 번", "One worker.", "워커 하나.", "# ten", "# 열 번", "How many?", "몇 개?",
		"connections", "개", "persistent\"", "영구 핸들\"").Replace(en)
	if d := ScenarioDiff(a, block(ko)); d != "" {
		t.Errorf("a translated block: %s", d)
	}
	for _, c := range []struct{ from, to, want string }{
		{"rtt = \"12ms\"", "rtt = \"13ms\"", "keys"},
		{"reuse = \"process\"", "reuse = \"request\"", "variant p"},
		{"p.connects == 1\"", "p.connects == 1\", \"p.connects < 2\"", "expect"},
		{"metric = \"p.connects\"", "metric = \"p.reused\"", "predict"},
		{"tolerance = 0", "tolerance = 1", "predict"},
	} {
		if d := ScenarioDiff(a, block(strings.Replace(en, c.from, c.to, 1))); !strings.Contains(d, c.want) {
			t.Errorf("%s → %s: %q, want a difference in %s", c.from, c.to, d, c.want)
		}
	}
}
