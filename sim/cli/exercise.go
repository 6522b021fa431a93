package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim/i18n"
	"github.com/connlab/connlab/sim/lab"
	"github.com/pelletier/go-toml/v2"
)

func exerciseCommand() *command {
	return &command{
		name:    "exercise",
		summary: "ask a lab's exercises in the terminal (predict, then see the model's answer), or print the teacher's key",
		usage:   "[--seed N] [--lang en|ko] [--id ID] [--answers-from FILE] FILE | --key [--json] [--seed N] [--lang en|ko] FILE",
		example: `  sim exercise labs/php-persistent-share.md              # answer on the keyboard
  sim exercise --seed 42 labs/port-exhaustion.md         # your own numbers (a student's ?seed=)
  sim exercise --lang ko labs/php-persistent-share.md    # reads labs/php-persistent-share.ko.md
  sim exercise --answers-from answers.toml labs/connection-pool.md
  sim exercise --key labs/nginx-keepalive.md             # the teacher's key, with each answer's scenario
  sim exercise --key --json labs/idle-timeouts.md > key.json

Numeric answers are computed by the model from each exercise's scenario, so
they follow the lab. A wrong answer gets a hint; type ? for a hint, show to
see the answer, skip to move on. --answers-from reads "id = answer" lines
(TOML; a list gives successive tries, e.g. warm-call = [40, 22]); the exit
status is then 1 unless every number and choice was answered right.`,
		run: exerciseCmd,
	}
}

// KeyOutput is what `sim exercise --key --json` prints.
type KeyOutput struct {
	Lab       string          `json:"lab"`
	File      string          `json:"file"`
	Lang      string          `json:"lang"`
	Seed      uint64          `json:"seed"`
	Exercises []*lab.Instance `json:"exercises"`
}

func exerciseCmd(ctx context.Context, env *Env, args []string) error {
	c := find("exercise")
	fs := flag.NewFlagSet("exercise", flag.ContinueOnError)
	key := fs.Bool("key", false, "print the teacher's key: every answer with the scenario it comes from")
	asJSON := fs.Bool("json", false, "with --key, print JSON")
	seed := fs.Uint64("seed", 0, "a student's seed: varies the exercises' numbers (0: the lab's own)")
	lang := fs.String("lang", "", "language: en or ko (ko reads FILE's .ko.md translation; default: from FILE)")
	only := fs.String("id", "", "ask only the exercise with this id")
	answers := fs.String("answers-from", "", "read answers from `FILE` (\"id = answer\" lines) instead of the keyboard")
	pos, err := parse(c, env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one FILE"}
	}
	if *asJSON && !*key {
		return usageError{"--json goes with --key"}
	}
	if *key && *answers != "" {
		return usageError{"--answers-from and --key do not go together"}
	}
	if *seed > maxSeed {
		return usageError{fmt.Sprintf("--seed: at most %d", uint64(maxSeed))}
	}
	file, lg, err := labForLang(pos[0], *lang)
	if err != nil {
		return err
	}
	l, err := lab.ReadFileContext(ctx, file)
	if err != nil {
		return err
	}
	xs, err := l.Exercises()
	if err != nil {
		return err
	}
	if len(xs) == 0 {
		return fmt.Errorf("%s: no ```exercise blocks", file)
	}
	if *only != "" {
		var keep []*lab.Exercise
		var ids []string
		for _, x := range xs {
			ids = append(ids, x.ID)
			if x.ID == *only {
				keep = append(keep, x)
			}
		}
		if keep == nil {
			return fmt.Errorf("%s: no exercise %q (exercises: %s)", file, *only, strings.Join(ids, ", "))
		}
		xs = keep
	}
	// Compute every instance first: a bad scenario stops before any output.
	ins := make([]*lab.Instance, len(xs))
	for i, x := range xs {
		if ins[i], err = x.Instance(ctx, *seed); err != nil {
			return err
		}
	}
	if *key {
		if *asJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(KeyOutput{Lab: l.Title, File: l.File, Lang: lg, Seed: *seed, Exercises: ins})
		}
		printKey(env.Stdout, l, lg, *seed, ins)
		return nil
	}
	t := textsIn(lg)
	q := &quiz{ctx: ctx, env: env, t: t, file: l.File}
	fmt.Fprintf(env.Stdout, t.intro+"\n", titleOf(l), len(ins), *seed)
	if *answers != "" {
		tries, err := readAnswers(*answers, xs)
		if err != nil {
			return err
		}
		q.tries = tries
	} else {
		q.lines = readLines(ctx, env.Stdin)
	}
	for i, in := range ins {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !q.ask(i, len(ins), in) {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "\n"+t.summary+"\n", q.right, q.graded, q.firstTry)
	if q.tries != nil && q.right < q.graded {
		return exitError(1)
	}
	return nil
}

// maxSeed is the largest seed a browser can hold exactly (2^53 - 1).
const maxSeed = 1<<53 - 1

// labForLang finds the file for a language: ko reads the .ko.md beside an
// English lab; a .ko.md file defaults to ko.
func labForLang(file, lang string) (string, string, error) {
	isKo := strings.HasSuffix(file, ".ko.md")
	switch lang {
	case "":
		if isKo {
			return file, "ko", nil
		}
		return file, "en", nil
	case "en":
		if isKo {
			en := strings.TrimSuffix(file, ".ko.md") + ".md"
			return en, "en", nil
		}
		return file, "en", nil
	case "ko":
		if isKo || !strings.HasSuffix(file, ".md") {
			return file, "ko", nil
		}
		ko := strings.TrimSuffix(file, ".md") + ".ko.md"
		if _, err := os.Stat(ko); err != nil {
			return "", "", fmt.Errorf("--lang ko: %s has no Korean translation (%s does not exist)", file, ko)
		}
		return ko, "ko", nil
	}
	return "", "", usageError{fmt.Sprintf("--lang %q: want en or ko", lang)}
}

func titleOf(l *lab.Lab) string {
	if l.Title != "" {
		return l.Title
	}
	return l.File
}

// uiText holds the terminal's words in one language.
type uiText struct {
	intro, summary                            string
	number, choice, explain                   string
	promptNumber, promptChoice, promptExplain string
	right, wrong, high, low, hint, noHint     string
	answerIs, why, seeRun, modelAnswer        string
	help, skipped, stopped                    string
	keyTitle, keyAnswer, keyScenario, keyRun  string
	keyCorrect                                string
	keyPoints, worked                         string
}

// textsIn returns the terminal's words in lang (en or ko), read from the UI
// strings every part of connlab shares (sim/i18n, keys cli_exercise_*).
// Each row names a message's key and the layout put before it here (an
// indent, a blank line), which the strings leave out.
func textsIn(lang string) uiText {
	var t uiText
	for _, m := range []struct {
		to          *string
		key, layout string
	}{
		{&t.intro, "cli_exercise_intro", ""},
		{&t.summary, "cli_exercise_summary", ""},
		{&t.number, "cli_exercise_number", ""},
		{&t.choice, "cli_exercise_choice", ""},
		{&t.explain, "cli_exercise_explain", ""},
		{&t.promptNumber, "cli_exercise_prompt_number", ""},
		{&t.promptChoice, "cli_exercise_prompt_choice", ""},
		{&t.promptExplain, "cli_exercise_prompt_explain", ""},
		{&t.right, "cli_exercise_right", ""},
		{&t.wrong, "cli_exercise_wrong", ""},
		{&t.high, "cli_exercise_too_high", ""},
		{&t.low, "cli_exercise_too_low", ""},
		{&t.hint, "cli_exercise_hint", "  "},
		{&t.noHint, "cli_exercise_no_hint", "  "},
		{&t.answerIs, "cli_exercise_answer_is", "  "},
		{&t.why, "cli_exercise_why", "  "},
		{&t.seeRun, "cli_exercise_see_run", "  "},
		{&t.modelAnswer, "cli_exercise_model_answer", "  "},
		{&t.help, "cli_exercise_help", "  "},
		{&t.skipped, "cli_exercise_skipped", "  "},
		{&t.stopped, "cli_exercise_stopped", "\n"},
		{&t.keyTitle, "cli_exercise_key_title", ""},
		{&t.keyAnswer, "cli_exercise_key_answer", ""},
		{&t.keyScenario, "cli_exercise_key_scenario", ""},
		{&t.keyRun, "cli_exercise_key_run", ""},
		{&t.keyCorrect, "cli_exercise_key_correct", ""},
		{&t.keyPoints, "cli_exercise_key_points", "  "},
		{&t.worked, "cli_exercise_worked", ""},
	} {
		*m.to = m.layout + i18n.Text(lang, m.key)
	}
	return t
}

// quiz asks exercises on a terminal or from an answers file.
type quiz struct {
	ctx   context.Context
	env   *Env
	t     uiText
	file  string
	lines <-chan string       // the keyboard
	tries map[string][]string // --answers-from
	cur   []string

	graded, right, firstTry int
}

// readLines sends the lines of r until it ends or ctx is done, so that a
// prompt waiting for the student stops at Ctrl-C.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 4096), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return lines
}

// next returns the student's next line, or false at the end of input (or
// once the command is interrupted).
func (q *quiz) next(prompt string) (string, bool) {
	fmt.Fprint(q.env.Stdout, prompt)
	if q.tries != nil {
		if len(q.cur) == 0 {
			fmt.Fprintln(q.env.Stdout)
			return "", false
		}
		s := q.cur[0]
		q.cur = q.cur[1:]
		fmt.Fprintln(q.env.Stdout, s)
		return s, true
	}
	select {
	case l, ok := <-q.lines:
		if !ok {
			fmt.Fprintln(q.env.Stdout)
			return "", false
		}
		return strings.TrimSpace(l), true
	case <-q.ctx.Done():
		fmt.Fprintln(q.env.Stdout)
		return "", false
	}
}

// ask runs one exercise; false means the input ended.
func (q *quiz) ask(i, n int, in *lab.Instance) bool {
	w, t := q.env.Stdout, q.t
	kind := map[string]string{"number": t.number, "choice": t.choice, "explain": t.explain}[string(in.Kind)]
	title := in.Title
	if title != "" {
		title = " " + title
	}
	if in.Worked != "" {
		fmt.Fprintf(w, "\n"+q.t.worked+"\n", in.Worked)
	}
	fmt.Fprintf(w, "\n[%d/%d]%s (%s, %s)\n%s\n", i+1, n, title, in.ID, kind, in.Question)
	for j, c := range in.Choices {
		fmt.Fprintf(w, "  %d) %s\n", j+1, c)
	}
	if q.tries != nil {
		tries, ok := q.tries[in.ID]
		if !ok {
			fmt.Fprintln(w, t.skipped)
			if in.Kind != "explain" {
				q.graded++
			}
			return true
		}
		q.cur = tries
	}
	prompt := t.promptExplain
	switch in.Kind {
	case "number":
		unit := ""
		if in.Unit != "" {
			unit = " (" + in.Unit + ")"
		}
		prompt = fmt.Sprintf(t.promptNumber, unit)
	case "choice":
		prompt = fmt.Sprintf(t.promptChoice, len(in.Choices))
	}
	if in.Kind != "explain" {
		q.graded++
	}
	hints, wrong := 0, 0
	showHint := func() {
		if hints < len(in.Hints) {
			fmt.Fprintf(w, t.hint+"\n", in.Hints[hints])
			hints++
		} else {
			fmt.Fprintln(w, t.noHint)
		}
	}
	for {
		line, ok := q.next(prompt)
		if !ok {
			if q.ctx.Err() != nil {
				return false
			}
			if q.tries == nil {
				fmt.Fprintln(w, t.stopped)
				return false
			}
			q.reveal(in, false)
			return true
		}
		switch strings.ToLower(line) {
		case "":
			fmt.Fprintln(w, t.help)
			continue
		case "?", "hint", "힌트":
			showHint()
			continue
		case "show", "정답":
			q.reveal(in, false)
			return true
		case "skip", "건너뛰기":
			fmt.Fprintln(w, t.skipped)
			return true
		}
		v, err := in.Check(line)
		if err != nil {
			fmt.Fprintf(w, "  %v\n", err)
			continue
		}
		if in.Kind == "explain" {
			q.points(in, v)
			q.reveal(in, true)
			return true
		}
		if v.OK {
			q.right++
			if wrong == 0 {
				q.firstTry++
			}
			q.reveal(in, true)
			return true
		}
		wrong++
		how := ""
		switch v.Direction {
		case "high":
			how = t.high
		case "low":
			how = t.low
		}
		fmt.Fprintf(w, t.wrong+"\n", how)
		showHint()
	}
}

// points shows which of the rubric's key points an explanation named.
func (q *quiz) points(in *lab.Instance, v lab.Verdict) {
	if len(v.Points) == 0 {
		return
	}
	named := 0
	for _, ok := range v.Points {
		if ok {
			named++
		}
	}
	fmt.Fprintf(q.env.Stdout, q.t.keyPoints+"\n", named, len(v.Points), in.Pass)
	for i, p := range in.Rubric {
		mark := "✗"
		if v.Points[i] {
			mark = "✓"
		}
		fmt.Fprintf(q.env.Stdout, "    %s %s\n", mark, p.Point)
	}
}

func (q *quiz) reveal(in *lab.Instance, right bool) {
	w, t := q.env.Stdout, q.t
	switch in.Kind {
	case "number":
		ans := strings.TrimSpace(in.AnswerText + " " + in.ToleranceText)
		if right {
			fmt.Fprintf(w, t.right+"\n", ans)
		} else {
			fmt.Fprintf(w, t.answerIs+"\n", ans)
		}
	case "choice":
		ans := fmt.Sprintf("%d) %s", in.Correct, in.AnswerText)
		if right {
			fmt.Fprintf(w, t.right+"\n", ans)
		} else {
			fmt.Fprintf(w, t.answerIs+"\n", ans)
		}
	case "explain":
		fmt.Fprintf(w, t.modelAnswer+"\n", in.AnswerText)
	}
	if in.Explain != "" {
		fmt.Fprintf(w, t.why+"\n", in.Explain)
	}
	if in.Scenario != nil {
		fmt.Fprintf(w, t.seeRun+"\n", in.Scenario.Command)
	}
}

// readAnswers reads an answers file: TOML "id = answer" or "id = [try, …]".
func readAnswers(path string, xs []*lab.Exercise) (map[string][]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d: column %d: %s", path, row, col, de.Error())
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	ids := map[string]bool{}
	var list []string
	for _, x := range xs {
		ids[x.ID] = true
		list = append(list, x.ID)
	}
	lineOf := func(k string) string {
		for i, l := range strings.Split(string(src), "\n") {
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, k) && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(t, k)), "=") {
				return fmt.Sprintf("%s:%d", path, i+1)
			}
		}
		return path
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := map[string][]string{}
	for _, k := range keys {
		if !ids[k] {
			return nil, fmt.Errorf("%s: no exercise %q in this lab (exercises: %s)", lineOf(k), k, strings.Join(list, ", "))
		}
		var tries []string
		switch v := doc[k].(type) {
		case []any:
			if len(v) == 0 || len(v) > 20 {
				return nil, fmt.Errorf("%s: %s: want 1 to 20 tries", lineOf(k), k)
			}
			for _, e := range v {
				s, err := answerString(e)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %v", lineOf(k), k, err)
				}
				tries = append(tries, s)
			}
		default:
			s, err := answerString(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %v", lineOf(k), k, err)
			}
			tries = []string{s}
		}
		out[k] = tries
	}
	return out, nil
}

func answerString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("want a number, got %v", x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("want a number or a string, got %T", v)
}

func printKey(w io.Writer, l *lab.Lab, lang string, seed uint64, ins []*lab.Instance) {
	t := textsIn(lang)
	fmt.Fprintf(w, t.keyTitle+"\n", titleOf(l), l.File, seed)
	for i, in := range ins {
		title := ""
		if in.Title != "" {
			title = " — " + in.Title
		}
		fmt.Fprintf(w, "\n%d. %s (%s)%s\n   %s\n", i+1, in.ID, in.Kind, title, in.Question)
		switch in.Kind {
		case "number":
			a := in.Answer.(float64)
			if *in.Tolerance > 0 {
				fmt.Fprintf(w, "   %s: %s %s (%s … %s)\n", t.keyAnswer, in.AnswerText, in.ToleranceText,
					lab.FormatNumber(a-*in.Tolerance), lab.FormatNumber(a+*in.Tolerance))
			} else {
				fmt.Fprintf(w, "   %s: %s\n", t.keyAnswer, in.AnswerText)
			}
		case "choice":
			for j, c := range in.Choices {
				mark := ""
				if j+1 == in.Correct {
					mark = "   " + t.keyCorrect
				}
				fmt.Fprintf(w, "   %d) %s%s\n", j+1, c, mark)
			}
		case "explain":
			fmt.Fprintf(w, "   %s: %s\n", t.keyAnswer, in.AnswerText)
		}
		if s := in.Scenario; s != nil {
			desc := "block " + s.Block
			if s.Variant != "" {
				desc += ", variant " + s.Variant
			}
			if len(s.Set) > 0 {
				var kv []string
				for k, v := range s.Set {
					kv = append(kv, k+"="+v)
				}
				sort.Strings(kv)
				desc += ", set " + strings.Join(kv, " ")
			}
			if s.Metric != "" {
				desc += ", metric " + s.Metric
				if s.Call > 0 {
					desc += fmt.Sprintf(" of call %d", s.Call)
				}
			}
			fmt.Fprintf(w, "   %s: %s\n   %s: %s\n", t.keyScenario, desc, t.keyRun, s.Command)
		}
		if in.Explain != "" {
			fmt.Fprintf(w, "   %s\n", strings.TrimSpace(fmt.Sprintf(t.why, in.Explain)))
		}
	}
}
