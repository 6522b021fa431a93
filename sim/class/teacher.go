package class

import (
	"fmt"

	"github.com/connlab/connlab/sim/lab"
)

// The teacher's side of the protocol: watch a lab, reveal or reset an
// exercise, remove a student, change the join code. The teacher's page
// receives the class's state (snapshot.go) whenever it changes.

func (c *conn) teacherMessage(m *message) {
	s := c.s
	switch m.Type {
	case "watch":
		if s.cat.Lab(m.Lab) == nil {
			c.notFound("lab", m)
			return
		}
		s.mu.Lock()
		c.watch = m.Lab
		s.mu.Unlock()
		c.changed()
	case "reveal", "reset":
		l, x, field := s.exercise(m.Lab, m.Exercise, c.lang)
		if field != "" {
			c.notFound(field, m)
			return
		}
		k := exKey{l.Name, x.ID}
		if m.Type == "reveal" {
			s.reveal(k)
		} else {
			s.reset(k)
		}
	case "remove":
		if !s.remove(m.Name) {
			c.fail("name", "no student %q", lab.Clip(m.Name, maxEcho))
		}
	case "new_code":
		s.mu.Lock()
		s.code = NewCode()
		s.version++
		s.mu.Unlock()
		s.touch()
	default:
		c.fail("type", "unknown message type %q (watch, reveal, reset, remove, new_code)", lab.Clip(m.Type, maxEcho))
	}
}

// changed tells this teacher's updater to send the state again.
func (c *conn) changed() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// touch tells every teacher page that the state changed.
func (s *Server) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchLocked()
}

func (s *Server) touchLocked() {
	for t := range s.teachers {
		t.changed()
	}
}

// Reveal is what a student receives when the teacher reveals an exercise:
// the exercise with that student's numbers, its answer, and how their own
// prediction fared.
type Reveal struct {
	Type     string        `json:"type"`
	Lab      string        `json:"lab"`
	Exercise *lab.Instance `json:"exercise"`
	Yours    *Yours        `json:"yours"`
}

// Yours is a student's own prediction, judged.
type Yours struct {
	Value string `json:"value"`
	OK    bool   `json:"ok"`
}

func (s *Server) revealFor(stu *student, k exKey, lang string) *Reveal {
	l, x, _ := s.exercise(k.Lab, k.ID, lang)
	if x == nil {
		return nil
	}
	in, err := s.cat.Instance(s.ctx, x, stu.seed)
	if err != nil {
		return nil
	}
	r := &Reveal{Type: "reveal", Lab: l.Name, Exercise: in}
	s.mu.Lock()
	a, ok := stu.answers[k]
	s.mu.Unlock()
	if ok {
		r.Yours = &Yours{Value: a.Raw, OK: a.Hit || in.Kind == "explain"}
	}
	return r
}

// studentConnsLocked lists the connections of joined students.
func (s *Server) studentConnsLocked() []*conn {
	var out []*conn
	for c := range s.conns {
		if !c.teacher && c.stu != nil {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) reveal(k exKey) {
	s.mu.Lock()
	if s.revealed[k] {
		s.mu.Unlock()
		return
	}
	s.revealed[k] = true
	s.version++
	targets := s.studentConnsLocked()
	s.mu.Unlock()
	for _, c := range targets {
		if r := s.revealFor(c.stu, k, c.lang); r != nil {
			c.reply(r)
		}
	}
	s.touch()
}

func (s *Server) reset(k exKey) {
	s.mu.Lock()
	delete(s.revealed, k)
	for _, stu := range s.order {
		delete(stu.answers, k)
	}
	s.version++
	targets := s.studentConnsLocked()
	s.mu.Unlock()
	for _, c := range targets {
		c.reply(map[string]string{"type": "reset", "lab": k.Lab, "exercise": k.ID})
	}
	s.touch()
}

// remove takes a student out of the class: their answers leave the
// histograms, their pages are told and closed, and neither their token
// nor their name joins again (a student may rejoin under another name
// with the join code; the teacher can change the code). False when there
// is no such student.
func (s *Server) remove(name string) bool {
	s.mu.Lock()
	var stu *student
	for i, x := range s.order {
		if x.name == name {
			stu = x
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	if stu == nil {
		s.mu.Unlock()
		return false
	}
	delete(s.students, stu.token)
	delete(s.names, stu.name)
	s.removed["token:"+stu.token] = true
	s.removed["name:"+stu.name] = true
	if u := s.addrs[stu.addr]; u != nil {
		u.students--
		s.tidyAddrLocked(stu.addr)
	}
	s.version++
	var targets []*conn
	for c := range s.conns {
		if c.stu == stu {
			targets = append(targets, c)
		}
	}
	s.mu.Unlock()
	msg := map[string]string{"type": "removed", "message": fmt.Sprintf("The teacher removed %q from the class.", stu.name)}
	for _, c := range targets {
		c.reply(msg)
		c.ws.Finish(errRemoved)
	}
	s.touch()
	return true
}
