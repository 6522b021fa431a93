package wasm

import (
	"context"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// MaxSeed is the largest exercise seed: what a browser's number holds
// exactly (class.MaxSeed; a test holds them equal).
const MaxSeed = 1<<53 - 1

// exercises answers a lab's exercises in a language for a seed: the
// student's numbers, and the model's answers to check them against.
func (s *Session) exercises(m *runsvc.ExercisesReq) {
	var seed uint64
	if m.Seed != nil {
		seed = *m.Seed
	}
	if seed > MaxSeed {
		s.fail(m.ID, "seed", msgf.Sprintf("want a whole number from 0 to %d, got %d", uint64(MaxSeed), seed))
		return
	}
	lang := m.Lang
	if lang == "" {
		lang = "en"
	}
	l, err := s.lookup(m.Lab, lang)
	if err != nil {
		s.fail(m.ID, "lab", err.Error())
		return
	}
	s.mu.Lock()
	_, own := s.labs[labKey(m.Lab, lang)]
	if s.cache == nil {
		s.cache = lab.NewAnswerCache(4096)
	}
	s.mu.Unlock()
	if !own {
		lang = "en"
	}
	xs, err := l.Exercises()
	if err != nil {
		s.fail(m.ID, "source", err.Error())
		return
	}
	if !s.take(context.Background()) {
		return
	}
	defer s.release()
	out := runsvc.Exercises{Type: "exercises", ID: m.ID, Lab: m.Lab, Title: l.Title, Lang: lang, Seed: seed, Exercises: []*lab.Instance{}}
	for _, x := range xs {
		in, err := x.InstanceCached(context.Background(), seed, s.cache)
		if err != nil {
			s.fail(m.ID, "", err.Error())
			return
		}
		out.Exercises = append(out.Exercises, in)
	}
	s.send(out)
}
