package class

import (
	"encoding/json"
	"fmt"

	"github.com/connlab/connlab/sim/lab"
)

// The student's side of the protocol: join (with a display name and the
// class's join code, or the token of an earlier join), then answer.

func (c *conn) studentMessage(m *message) {
	switch m.Type {
	case "join":
		c.join(m)
	case "answer":
		c.answer(m)
	case "reveal", "reset", "watch", "remove", "new_code":
		c.fail("type", "only the teacher can %s", m.Type)
		c.strike()
	default:
		c.fail("type", "unknown message type %q (join, answer)", lab.Clip(m.Type, maxEcho))
	}
}

// Joined is the answer to a student's join.
type Joined struct {
	Type       string     `json:"type"`
	Name       string     `json:"name"`
	Token      string     `json:"token"`
	Seed       uint64     `json:"seed"`
	PerStudent bool       `json:"per_student"`
	Revealed   []*Reveal  `json:"revealed"`
	Answered   []Answered `json:"answered"`
}

// Answered tells a student which of their predictions the class has.
type Answered struct {
	Lab      string `json:"lab"`
	Exercise string `json:"exercise"`
	Value    string `json:"value"`
}

// join adds a student, or gives a student who joined before (the token
// the page keeps) their seat back. A new student needs the class's join
// code, in the message or in the cookie the landing page set.
func (c *conn) join(m *message) {
	s := c.s
	if c.stu != nil {
		c.fail("type", "already joined as %q", c.stu.name)
		return
	}
	if c.joinTry++; c.joinTry > s.lim.JoinTries {
		c.fail("", "too many join attempts on one connection: connection closed")
		c.ws.Finish(errJoins)
		return
	}
	s.mu.Lock()
	stu := s.students[m.Token]
	if stu == nil && m.Token != "" && s.removed["token:"+m.Token] {
		s.mu.Unlock()
		c.fail("token", "the teacher removed you from this class")
		return
	}
	if stu == nil {
		field, err := s.admitLocked(c, m)
		if err != nil {
			s.mu.Unlock()
			c.fail(field, "%v", err)
			return
		}
		name, _ := SanitizeName(m.Name, s.lim.MaxName)
		base := name
		for i := 2; s.names[name]; i++ {
			suffix := fmt.Sprintf(" %d", i)
			r := []rune(base)
			if len(r)+len([]rune(suffix)) > s.lim.MaxName {
				r = r[:s.lim.MaxName-len([]rune(suffix))]
			}
			name = string(r) + suffix
		}
		seed := s.opt.Seed
		if s.opt.PerStudent {
			seed = RandomSeed()
		}
		stu = &student{name: name, token: newToken(), addr: c.addr, seed: seed, answers: map[exKey]answer{}}
		s.students[stu.token] = stu
		s.order = append(s.order, stu)
		s.names[name] = true
		s.addrUseLocked(c.addr).students++
		s.version++
	}
	c.stu = stu
	if c.joinWait != nil {
		c.joinWait.Stop()
	}
	j := &Joined{Type: "joined", Name: stu.name, Token: stu.token, Seed: stu.seed, PerStudent: s.opt.PerStudent,
		Revealed: []*Reveal{}, Answered: []Answered{}}
	var revealed []exKey
	for k := range s.revealed {
		revealed = append(revealed, k)
	}
	for k, a := range stu.answers {
		j.Answered = append(j.Answered, Answered{Lab: k.Lab, Exercise: k.ID, Value: a.Raw})
	}
	s.mu.Unlock()
	for _, k := range revealed {
		if r := s.revealFor(stu, k, c.lang); r != nil {
			j.Revealed = append(j.Revealed, r)
		}
	}
	c.reply(j)
	s.touch()
}

// admitLocked decides whether a new student may join: a display name, the
// join code, room in the class and for their address. It returns the field
// at fault.
func (s *Server) admitLocked(c *conn, m *message) (field string, err error) {
	name, err := SanitizeName(m.Name, s.lim.MaxName)
	if err != nil {
		return "name", err
	}
	if s.removed["name:"+name] {
		return "name", fmt.Errorf("the teacher removed %q from this class: pick another name", name)
	}
	code := m.Code
	if code == "" {
		code = c.cookieCode
	}
	if code == "" {
		return "code", fmt.Errorf("this class needs its join code: open /class/ on this server and type the code your teacher shows")
	}
	switch s.tryCodeLocked(c.addr, code) {
	case codeBlocked:
		return "code", fmt.Errorf("too many wrong join codes from your address: wait a minute")
	case classBusy:
		return "code", fmt.Errorf("the class has seen too many wrong join codes in the last minute, so new students wait: wait a minute and try again")
	case codeWrong:
		return "code", fmt.Errorf("wrong join code: type the code your teacher shows at /class/")
	}
	switch {
	case len(s.order) >= s.lim.MaxStudents:
		return "", fmt.Errorf("the class is full (%d students)", s.lim.MaxStudents)
	case s.addrUseLocked(c.addr).students >= s.lim.PerAddress:
		return "", fmt.Errorf("%d students have joined from your address, the most one address may", s.lim.PerAddress)
	}
	return "", nil
}

// exercise finds a lab's exercise as a page names it.
func (s *Server) exercise(labName, id, lang string) (*Lab, *lab.Exercise, string) {
	l := s.cat.Lab(labName)
	if l == nil {
		return nil, nil, "lab"
	}
	x := l.Exercise(lang, id)
	if x == nil {
		return nil, nil, "exercise"
	}
	return l, x, ""
}

// notFound reports a lab or exercise the page named that the class lacks.
func (c *conn) notFound(field string, m *message) {
	what := m.Lab
	if field == "exercise" {
		what = m.Exercise
	}
	c.fail(field, "no %s %q", field, lab.Clip(what, maxEcho))
}

func rawValue(v json.RawMessage) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, true
	}
	var f json.Number
	if err := json.Unmarshal(v, &f); err == nil {
		return f.String(), true
	}
	return "", false
}

func (c *conn) answer(m *message) {
	s := c.s
	if c.stu == nil {
		c.fail("type", "join first: {\"type\":\"join\",\"name\":\"…\",\"code\":\"…\"}")
		return
	}
	l, x, field := s.exercise(m.Lab, m.Exercise, c.lang)
	if field != "" {
		c.notFound(field, m)
		return
	}
	k := exKey{l.Name, x.ID}
	raw, ok := rawValue(m.Value)
	if !ok {
		c.fail("value", "want the answer as a string or a number")
		return
	}
	s.mu.Lock()
	done, gone := s.revealed[k], s.students[c.stu.token] != c.stu
	s.mu.Unlock()
	if gone {
		c.fail("", "the teacher removed you from this class")
		return
	}
	if done {
		c.fail("exercise", "the teacher has already revealed %q", x.ID)
		return
	}
	in, err := s.cat.Instance(s.ctx, x, c.stu.seed)
	if err != nil {
		c.fail("", "%v", err)
		return
	}
	a, err := judge(in, raw, s.lim.MaxText)
	if err != nil {
		c.fail("value", "%v", err)
		return
	}
	switch in.Kind {
	case "number":
		v, _ := in.Check(raw)
		a.Hit, a.Known = v.OK, true
		a.Rel = relative(a.Value, in.Answer.(float64))
	case "choice":
		a.Hit, a.Known = a.Pick == in.Correct, true
		a.Orig = originalChoice(x, in, a.Pick)
	}
	s.mu.Lock()
	if s.revealed[k] { // revealed meanwhile
		s.mu.Unlock()
		c.fail("exercise", "the teacher has already revealed %q", x.ID)
		return
	}
	c.stu.answers[k] = a
	s.version++
	s.mu.Unlock()
	c.reply(map[string]any{"type": "ack", "lab": l.Name, "exercise": x.ID, "value": raw})
	s.touch()
}

// originalChoice maps a choice as a student saw it to the lab's own order
// (by the seed's order, not the text: a choice's {placeholders} may differ
// between seeds).
func originalChoice(x *lab.Exercise, in *lab.Instance, pick int) int {
	order := x.ChoiceOrder(in.Seed)
	if pick < 1 || pick > len(in.Choices) || pick > len(order) {
		return 0
	}
	return order[pick-1] + 1
}
