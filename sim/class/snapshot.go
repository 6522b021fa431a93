package class

import "github.com/connlab/connlab/sim/lab"

// State is what a teacher's page receives: the class, its join code, and
// the watched lab's exercises with their histograms. Answers appear only
// once revealed.
type State struct {
	Type       string       `json:"type"`
	Version    uint64       `json:"version"`
	Code       string       `json:"code"` // the join code students type
	Students   int          `json:"students"`
	Names      []string     `json:"names"`
	Online     int          `json:"online"`
	PerStudent bool         `json:"per_student"`
	Seed       uint64       `json:"seed"`
	Labs       []LabSummary `json:"labs"`
	Lab        string       `json:"lab"`
	Exercises  []ExState    `json:"exercises"`
	// WrongCodes is the number of wrong join codes the class took in the
	// last minute; at WrongCodesLimit new students wait (addr.go).
	WrongCodes      int `json:"wrong_codes"`
	WrongCodesLimit int `json:"wrong_codes_limit"`
}

// LabSummary names a lab and counts its answers.
type LabSummary struct {
	Name     string `json:"name"`
	Title    string `json:"title"`
	Answers  int    `json:"answers"`
	Revealed int    `json:"revealed"`
}

// ExState is one exercise on the teacher's page.
type ExState struct {
	ID        string           `json:"id"`
	Kind      lab.ExerciseKind `json:"kind"`
	Title     string           `json:"title,omitempty"`
	Question  string           `json:"question"`
	Choices   []string         `json:"choices,omitempty"`
	Histogram Histogram        `json:"histogram"`
	Revealed  bool             `json:"revealed"`
	Answer    *lab.Instance    `json:"answer,omitempty"` // the class seed's instance, once revealed
	Right     int              `json:"right"`            // once revealed: predictions within tolerance / right choice
}

// collected is what the students answered to one exercise.
type collected struct {
	vals  []float64
	picks []int
	texts []string
	right int
}

func (s *Server) snapshot(c *conn) *State {
	s.mu.Lock()
	st := &State{Type: "state", Version: s.version, Code: s.code, Students: len(s.order), PerStudent: s.opt.PerStudent, Seed: s.opt.Seed,
		WrongCodes: s.wrongCodesLocked(), WrongCodesLimit: s.lim.WrongCodesClass, Names: []string{}, Exercises: []ExState{}}
	for _, stu := range s.order {
		st.Names = append(st.Names, stu.name)
	}
	online := map[*student]bool{}
	for cc := range s.conns {
		if cc.stu != nil {
			online[cc.stu] = true
		}
	}
	st.Online = len(online)
	watch := c.watch
	counts := map[exKey]int{}
	for _, stu := range s.order {
		for k := range stu.answers {
			counts[k]++
		}
	}
	for _, l := range s.cat.Labs {
		sum := LabSummary{Name: l.Name, Title: l.Title[c.lang]}
		if sum.Title == "" {
			sum.Title = l.Title["en"]
		}
		for _, id := range l.IDs() {
			k := exKey{l.Name, id}
			sum.Answers += counts[k]
			if s.revealed[k] {
				sum.Revealed++
			}
		}
		st.Labs = append(st.Labs, sum)
		if watch == "" && sum.Answers > 0 {
			watch = l.Name
		}
	}
	if watch == "" && len(s.cat.Labs) > 0 {
		watch = s.cat.Labs[0].Name
	}
	st.Lab = watch
	l := s.cat.Lab(watch)
	col := map[string]*collected{}
	revealed := map[string]bool{}
	if l != nil {
		for _, id := range l.IDs() {
			k := exKey{l.Name, id}
			revealed[id] = s.revealed[k]
			col[id] = s.collectLocked(k)
		}
	}
	s.mu.Unlock()
	if l == nil {
		return st
	}
	for _, x := range l.list(c.lang) {
		if e, ok := s.exState(x, col[x.ID], revealed[x.ID]); ok {
			st.Exercises = append(st.Exercises, e)
		}
	}
	return st
}

// collectLocked gathers the answers to exercise k, latest joiners first.
func (s *Server) collectLocked(k exKey) *collected {
	cl := &collected{}
	for i := len(s.order) - 1; i >= 0; i-- {
		a, ok := s.order[i].answers[k]
		if !ok {
			continue
		}
		if a.Hit {
			cl.right++
		}
		switch {
		case a.Text != "":
			cl.texts = append(cl.texts, a.Text)
		case a.Pick > 0:
			cl.picks = append(cl.picks, a.Orig)
		case s.opt.PerStudent:
			cl.vals = append(cl.vals, a.Rel)
		default:
			cl.vals = append(cl.vals, a.Value)
		}
	}
	return cl
}

// exState draws one exercise: its question for the class's seed, the
// histogram of what was answered and, once revealed, the answer.
func (s *Server) exState(x *lab.Exercise, cl *collected, revealed bool) (ExState, bool) {
	in, err := s.cat.Instance(s.ctx, x, s.opt.Seed)
	if err != nil {
		return ExState{}, false
	}
	e := ExState{ID: x.ID, Kind: x.Kind, Title: in.Title, Question: in.Question, Revealed: revealed}
	var base *lab.Instance
	switch x.Kind {
	case "number":
		e.Histogram = NumberHistogram(cl.vals, s.lim.Bins)
		e.Histogram.Relative = s.opt.PerStudent
		e.Histogram.Unit = in.Unit
		if s.opt.PerStudent {
			e.Histogram.Unit = "%"
		}
	case "choice":
		if base, err = s.cat.Instance(s.ctx, x, 0); err != nil {
			return ExState{}, false
		}
		e.Choices = base.Choices
		e.Histogram = Histogram{Kind: "choice", Count: len(cl.picks), Labels: base.Choices, Counts: make([]int, len(base.Choices))}
		for _, p := range cl.picks {
			if p >= 1 && p <= len(e.Histogram.Counts) {
				e.Histogram.Counts[p-1]++
			}
		}
	case "explain":
		e.Histogram = Histogram{Kind: "explain", Count: len(cl.texts), Counts: []int{}}
		n := min(len(cl.texts), s.lim.Texts)
		e.Histogram.Texts = cl.texts[:n]
		e.Histogram.More = len(cl.texts) - n
	}
	if revealed {
		e.Answer = in
		if base != nil {
			e.Answer = base
		}
		e.Right = cl.right
	}
	return e, true
}
