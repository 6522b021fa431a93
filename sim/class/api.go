package class

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/web"
)

// Hide removes what gives an answer away from an instance (class mode,
// before the teacher reveals): the answer and its explanation, and the
// scenario that computes it (the block, the variant, the settings the
// question does not state, the command). The question and its values stay:
// the student needs them to predict. The reveal sends the whole instance.
func Hide(in *lab.Instance) *lab.Instance {
	cp := *in
	cp.Answer, cp.Correct, cp.Tolerance, cp.ToleranceText, cp.AnswerText, cp.AnswerShort, cp.Explain = nil, 0, nil, "", "", "", ""
	cp.Scenario = nil
	return &cp
}

// APIResponse is what GET /exercise/api answers.
type APIResponse struct {
	Lab       string          `json:"lab"`
	Title     string          `json:"title"`
	Lang      string          `json:"lang"`
	Seed      uint64          `json:"seed"`
	Hidden    bool            `json:"hidden"` // class mode: answers come with the teacher's reveal
	Exercises []*lab.Instance `json:"exercises"`
}

// APIHandler answers GET /exercise/api?lab=NAME&lang=en|ko&seed=N with the
// lab's exercises for that seed. hide, if it returns true, strips the
// answers (class mode).
func (c *Catalog) APIHandler(hide func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpError(w, http.StatusMethodNotAllowed, "", "use GET")
			return
		}
		q := r.URL.Query()
		name := q.Get("lab")
		l := c.Lab(name)
		if l == nil {
			var names []string
			for _, l := range c.Labs {
				names = append(names, l.Name)
			}
			httpError(w, http.StatusNotFound, "lab", fmt.Sprintf("no lab %q with exercises (labs: %s)", name, strings.Join(names, ", ")))
			return
		}
		lang := q.Get("lang")
		if lang == "" {
			lang = "en"
		}
		if !slices.Contains(web.Langs, lang) {
			httpError(w, http.StatusBadRequest, "lang", fmt.Sprintf("want en or ko, got %q", lang))
			return
		}
		seed, err := ParseSeed(q.Get("seed"))
		if err != nil {
			httpError(w, http.StatusBadRequest, "seed", err.Error())
			return
		}
		ins, err := c.Instances(r.Context(), l, lang, seed)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return
			}
			httpError(w, http.StatusInternalServerError, "", err.Error())
			return
		}
		resp := APIResponse{Lab: l.Name, Title: l.Title[lang], Lang: lang, Seed: seed, Exercises: ins}
		if _, ok := l.Exercises[lang]; !ok {
			resp.Lang, resp.Title = web.Langs[0], l.Title[web.Langs[0]]
		}
		if hide != nil && hide() {
			resp.Hidden = true
			for i, in := range resp.Exercises {
				resp.Exercises[i] = Hide(in)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(resp)
	})
}

func httpError(w http.ResponseWriter, code int, field, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg, "field": field})
}
