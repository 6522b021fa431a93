package class

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"

	"github.com/connlab/connlab/sim/i18n"
)

// The class's pages: the students' landing page (/class/), where the join
// code is typed or arrives in the teacher's link; the teacher's page
// (/class/teacher, behind the token); /class/info for the lab pages.

// codeCookie carries the join code from the landing page to the lab
// pages' join (the WebSocket upgrade sends it along).
const codeCookie = "connlab_class_code"

// Info is what GET /class/info answers: lab pages ask it to learn that
// class mode is on.
type Info struct {
	Class      bool     `json:"class"`
	PerStudent bool     `json:"per_student"`
	Labs       []string `json:"labs"`
}

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request) {
	info := Info{Class: true, PerStudent: s.opt.PerStudent}
	for _, l := range s.cat.Labs {
		info.Labs = append(info.Labs, l.Name)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(info)
}

//go:embed teacher.html
var teacherHTML string

//go:embed landing.html
var landingHTML string

// The pages' words are sim/i18n's, the landing page's (class_landing_) read
// with t LANG KEY, the teacher's page's (class_teacher_) handed to its
// script whole, as T in the page's language.
var (
	teacherTmpl = template.Must(template.New("teacher").Parse(teacherHTML))
	landingTmpl = template.Must(template.New("landing").Funcs(template.FuncMap{"t": pageText}).Parse(landingHTML))
)

// pageText is a string of sim/i18n in lang. A key missing there fails the
// page's rendering (its tests render every state) rather than showing
// nothing or the other language.
func pageText(lang, key string) (string, error) {
	s, ok := i18n.Lookup(lang, key)
	if !ok {
		return "", fmt.Errorf("sim/i18n/%s.toml has no %q", lang, key)
	}
	return s, nil
}

func (s *Server) serveTeacher(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !s.isTeacher(r.URL.Query().Get("token")) {
		http.Error(w, "This is the teacher's page: open the address `sim serve --class` printed (it carries the token).", http.StatusForbidden)
		return
	}
	lang := r.URL.Query().Get("lang")
	if lang != "ko" {
		lang = "en"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	teacherTmpl.Execute(w, map[string]any{"Token": s.token, "Lang": lang, "T": i18n.Prefixed(lang, "class_teacher_"),
		"SeedZero": s.opt.Seed == 0 && !s.opt.PerStudent})
}

// serveLanding shows the labs and the join code's state. A ?code= (typed
// in its form, or in the teacher's link) that is the class's code is kept
// in a cookie for the lab pages' join. Without one, the cookie's code is
// checked. Either counts against the address like a code in a join (a
// code guessed through the cookie is a guess too), and a blocked address
// sees "blocked" whatever it sends. A wrong cookie is cleared: a browser
// that kept an earlier code (the teacher gave a new one) then shows "type
// the code" on its next reload rather than spending a guess on every one.
func (s *Server) serveLanding(w http.ResponseWriter, r *http.Request) {
	type labLink struct{ Name, Title, TitleKo string }
	var labs []labLink
	for _, l := range s.cat.Labs {
		labs = append(labs, labLink{l.Name, l.Title["en"], l.Title["ko"]})
	}
	// state: none, or tryCode's answer; kept: the code came from the cookie.
	state, kept := "none", false
	key := addrKey(r)
	if q := r.URL.Query(); q.Has("code") {
		code := q.Get("code")
		state = s.tryCode(key, code)
		if state == codeOK {
			norm, _ := NormalizeCode(code)
			http.SetCookie(w, &http.Cookie{Name: codeCookie, Value: norm, Path: "/class", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
	} else if ck, err := r.Cookie(codeCookie); err == nil {
		state, kept = s.tryCode(key, ck.Value), true
		if state == codeWrong {
			http.SetCookie(w, &http.Cookie{Name: codeCookie, Path: "/class", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	// The page shows "blocked" for a busy class too, saying why.
	busy := state == classBusy
	if busy {
		state = codeBlocked
	}
	landingTmpl.Execute(w, map[string]any{"Labs": labs, "MaxName": s.lim.MaxName, "Code": state, "Kept": kept, "Busy": busy})
}
