package lab

import (
	"context"
	"strings"
	"testing"
)

const predictLab = "+++\ntitle = \"p\"\n+++\n\n```sim {id=\"w\"}\n" +
	"workers = 4\nrequests = 12\nrtt = \"10ms\"\ndns = \"0s\"\ntls = \"none\"\n" +
	"expect = [\"persistent.connects == 4\"]\n" +
	"%s\n" +
	"[[variant]]\nname = \"share\"\nreuse = \"request\"\n\n" +
	"[[variant]]\nname = \"persistent\"\nreuse = \"process\"\n```\n"

func parsePredictLab(t *testing.T, table string) (*Lab, error) {
	t.Helper()
	return Parse("p.md", []byte(strings.Replace(predictLab, "%s", table, 1)))
}

// The model answers a block's prediction: a number with its tolerance, or
// the choice whose value is nearest to the metric.
func TestPredictAnswer(t *testing.T) {
	for _, c := range []struct {
		table  string
		kind   string
		value  float64
		tol    float64
		choice int
	}{
		{"[predict]\nquestion = \"How many connections?\"\nmetric = \"persistent.connects\"\nunit = \"connections\"\ntolerance = 0\n", "number", 4, 0, 0},
		{"[predict]\nquestion = \"How many?\"\nmetric = \"share.connects - persistent.connects\"\ntolerance = \"25%\"\n", "number", 8, 2, 0},
		{"[predict]\nquestion = \"How many?\"\nmetric = \"persistent.connects\"\nchoices = [\"one\", \"one per worker\", \"one per request\"]\nvalues = [1, 4, 12]\n", "choice", 4, 0, 2},
		{"[predict]\nquestion = \"How many?\"\nmetric = \"share.connects\"\nchoices = [\"a few\", \"many\"]\nvalues = [2, 10]\n", "choice", 12, 0, 2},
	} {
		l, err := parsePredictLab(t, c.table)
		if err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		p := l.Blocks[0].Predict
		if p == nil || p.Kind != c.kind {
			t.Fatalf("%s: predict %+v, want kind %s", c.table, p, c.kind)
		}
		rs, err := l.Run(context.Background(), nil, RunOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		a := rs[0].Predict
		if a == nil || a.Value != c.value || a.Tolerance != c.tol || a.Choice != c.choice {
			t.Errorf("%s: answer %+v, want value %v tolerance %v choice %d", c.table, a, c.value, c.tol, c.choice)
		}
		if c.kind == "number" && (!a.Right(c.value+c.tol) || a.Right(c.value+c.tol+1)) {
			t.Errorf("%s: Right does not hold the tolerance %v", c.table, c.tol)
		}
	}
	// A block without [predict] has no answer.
	l, err := parsePredictLab(t, "")
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := l.Run(context.Background(), nil, RunOptions{Seed: 1})
	if rs[0].Predict != nil || l.Blocks[0].Predict != nil {
		t.Errorf("no [predict], yet %+v", rs[0].Predict)
	}
}

// A wrong [predict] table is an error that names the file, the line and the
// problem.
func TestPredictErrors(t *testing.T) {
	for _, c := range []struct{ table, want string }{
		{"predict = 3\n", "predict: want a table"},
		{"[predict]\nmetric = \"persistent.connects\"\ntolerance = 0\n", "question is missing"},
		{"[predict]\nquestion = \"q\"\ntolerance = 0\n", "metric is missing"},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.connects\"\n", "tolerance is missing"},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.conects\"\ntolerance = 0\n", "no metric"},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistant.connects\"\ntolerance = 0\n", "no variant or block"},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.connects +\"\ntolerance = 0\n", "missing value"},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.connects\"\ntolerance = 0\nanswer = 4\n", "unknown key \"answer\""},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.connects\"\nchoices = [\"a\", \"b\"]\nvalues = [1]\n", "as many values"},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.connects\"\nchoices = [\"a\", \"b\"]\nvalues = [1, 1]\n", "given twice"},
		{"[predict]\nquestion = \"q\"\nmetric = \"persistent.connects\"\nchoices = [\"a\", \"b\"]\nvalues = [1, 2]\ntolerance = 1\n", "a choice has no tolerance"},
		{"[predict]\nquestion = \"is it {answer}?\"\nmetric = \"persistent.connects\"\ntolerance = 0\n", "{answer} may only appear in explain"},
	} {
		_, err := parsePredictLab(t, c.table)
		if err == nil {
			t.Errorf("%q: no error, want %q", c.table, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "p.md:") {
			t.Errorf("%q: error %q, want p.md:LINE and %q", c.table, err, c.want)
		}
	}
	// The line is the key's.
	_, err := parsePredictLab(t, "[predict]\nquestion = \"q\"\nmetric = \"persistent.connects\"\ntolerance = \"ten\"\n")
	if err == nil || !strings.HasPrefix(err.Error(), "p.md:15:") {
		t.Errorf("a bad tolerance on line 15: %v", err)
	}
	// A prediction reads its own block only.
	src := strings.Replace(predictLab, "%s", "", 1) + "\n```sim {id=\"v\"}\nrequests = 2\n[predict]\nquestion = \"q\"\nmetric = \"w.persistent.connects\"\ntolerance = 0\n```\n"
	if _, err := Parse("p.md", []byte(src)); err == nil || !strings.Contains(err.Error(), "reads another block") {
		t.Errorf("a prediction of another block's metric: %v", err)
	}
	// [predict] in a variant belongs at the top.
	src = strings.Replace(predictLab, "%s", "", 1)
	src = strings.Replace(src, "reuse = \"process\"\n", "reuse = \"process\"\npredict = { question = \"q\" }\n", 1)
	if _, err := Parse("p.md", []byte(src)); err == nil || !strings.Contains(err.Error(), "belongs at the top") {
		t.Errorf("predict in a variant: %v", err)
	}
}
