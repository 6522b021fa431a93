package lab

import (
	"strings"
)

// An Exercise is one ```exercise block of a lab: a question the student
// answers before the run reveals the answer. It is TOML, like a ```sim
// block, with an id attribute:
//
//	```exercise {id="warm-call"}
//	kind = "number"
//	question = "The API is {rtt} away. How long does the 2nd request's call take, in ms?"
//	block = "across-requests"   # a ```sim block of the same lab
//	variant = "persistent"      # one of its variants
//	set = { rtt = "20ms" }      # overrides, as sim run --set takes them
//	call = 2                    # optional: read the 2nd call of the run only
//	metric = "total_ms"         # what the answer is
//	unit = "ms"
//	tolerance = "10%"           # or an absolute number: tolerance = 2
//	vary = { rtt = ["10ms", "20ms", "30ms"] }   # per-student values (seed)
//	hints = ["The connection is already open: which phases are left?"]
//	explain = "One round trip and the server's 2 ms: {answer} ms."
//	expect = ["answer ≈ 22 ±5%"]
//	```
//
// Kinds:
//   - number: the answer is computed by the model from the exercise's
//     scenario (block, variant, set, and the seed's vary picks), never typed
//     in. metric is a summary metric as `sim run --json` names it
//     (total_ms.p50, connects, first_port_error_s, num_connects[1]) or an
//     expression of them (share.total_ms.p50 - persistent.total_ms.p50,
//     where a first name that is a variant of the block selects it). With
//     call = N, the metric reads the Nth call of the run, in the order calls
//     end (the order of num_connects): total_ms, connect_ms, num_connects, …
//   - choice: choices (2 to 8) and correct (1-based). block and variant are
//     optional: the run the reveal shows. Instead of correct, a choice whose
//     right answer depends on the numbers has correct_when: one expectation
//     per choice ("" for a choice that is never right), with the names of
//     a number's metric; the model runs the seed's scenario and the one
//     choice whose expectation holds is right:
//     correct_when = ["errors > 0", "errors == 0", ""]
//   - explain: model_answer, shown after the student has written theirs,
//     and rubric: the key points the answer must name (exercise_rubric.go).
//
// Placeholders {key} in question, hints and explain are replaced by the
// scenario's values ({rtt} → "20ms"); {answer} in explain by the answer.
// {{ and }} are literal braces. expect states what the answer must be (the
// expectation grammar of ```sim blocks, with the name answer, and the lab's
// metrics as block.variant.metric); tests check it for the unseeded answer.
type Exercise struct {
	ID        string
	Kind      ExerciseKind
	File      string
	Line      int // first line of the TOML body
	FenceLine int
	Source    string

	Title    string
	Question string
	Unit     string
	Hints    []string
	Explain  string
	Choices  []string
	Correct  int // choice: 1-based; 0 when correct_when computes it
	// CorrectWhen is a computed choice's expectation per choice ("" never).
	CorrectWhen []string
	ModelAnswer string
	Rubric      []RubricPoint // explain: the key points an answer names (exercise_rubric.go)
	Pass        int           // how many of them it must name
	Worked      string        // a worked example, shown folded before the question

	Block   string // id of a ```sim block of the same lab ("" for none)
	Variant string
	Set     []Setting // overrides, in order written
	Metric  string
	Call    int // 0: the whole run

	Tolerance    float64
	TolerancePct bool
	Vary         []Vary
	Expects      []*Expect

	block       *Block
	metric      node      // bound: refNodes carry block and variant
	correctWhen []*Expect // bound, one per choice; nil for ""
	lines       map[string]int
}

// A Vary is a scenario key whose value depends on the student's seed.
type Vary struct {
	Key    string `json:"key"`
	Values []any  `json:"values"` // as Scenario.Set takes them
	Line   int    `json:"line,omitempty"`
}

// ExerciseKind is what an exercise asks for, and how an answer is checked.
type ExerciseKind string

const (
	KindNumber  ExerciseKind = "number"  // a number, within a tolerance of the model's
	KindChoice  ExerciseKind = "choice"  // one of its choices
	KindExplain ExerciseKind = "explain" // words, checked against a rubric's points
)

// ExerciseKinds lists the kinds of exercise.
var ExerciseKinds = []ExerciseKind{KindNumber, KindChoice, KindExplain}

// kindList is ExerciseKinds for a message: "number, choice, explain".
func kindList() string {
	s := ""
	for i, k := range ExerciseKinds {
		if i > 0 {
			s += ", "
		}
		s += string(k)
	}
	return s
}

// Limits on an exercise block, so a page cannot ask for unbounded work.
const (
	MaxExerciseText  = 4000 // characters of question, explain, a hint, a choice, model_answer
	MaxHints         = 6
	MaxChoices       = 8
	MaxVaryValues    = 1000 // values one vary key may take
	maxVaryKeys      = 4
	maxExercisesALab = 30
)

// Exercises returns the lab's exercises (its ```exercise blocks), in the
// order they appear. A lab read from its source parses them now, and errors
// carry the file and line.
func (l *Lab) Exercises() ([]*Exercise, error) {
	if l.fromData {
		return l.exercises, nil
	}
	return l.readExercises()
}

func variantNames(b *Block) string {
	names := make([]string, len(b.Variants))
	for i, v := range b.Variants {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}
