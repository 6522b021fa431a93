// Package class is the classroom side of connlab's exercises, mounted into
// `sim serve`: the seeded exercises a lab page asks for (/exercise/api), and
// class mode (--class), where students join with a display name, their
// predictions stream to the teacher's page as a live histogram per exercise,
// and the teacher reveals each answer when ready (/class/...).
package class

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim/lab"
)

// Langs are the languages a lab may be written in; en is the original.
var Langs = []string{"en", "ko"}

// A Catalog holds the exercises of every lab in some directories, in each
// language, and computes their instances with a shared answer cache.
type Catalog struct {
	Labs  []*Lab // sorted by name
	byKey map[string]*Lab
	cache *lab.AnswerCache
	sem   chan struct{} // bounds model runs at once
}

// A Lab is one lab's exercises by language.
type Lab struct {
	Name      string            // file name without .md / .ko.md
	Title     map[string]string // by language
	Exercises map[string][]*lab.Exercise
}

// Exercise returns the exercise with the given id in lang (falling back to
// English), or nil.
func (l *Lab) Exercise(lang, id string) *lab.Exercise {
	for _, x := range l.list(lang) {
		if x.ID == id {
			return x
		}
	}
	return nil
}

func (l *Lab) list(lang string) []*lab.Exercise {
	if xs, ok := l.Exercises[lang]; ok {
		return xs
	}
	return l.Exercises["en"]
}

// IDs lists the lab's exercise ids in order.
func (l *Lab) IDs() []string {
	var ids []string
	for _, x := range l.list("en") {
		ids = append(ids, x.ID)
	}
	return ids
}

var labNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// LoadCatalog reads every Markdown file of dirs that holds an ```exercise
// block. A file whose exercises do not parse is an error with its line.
// Directories that do not exist are skipped.
func LoadCatalog(dirs []string) (*Catalog, error) {
	c := &Catalog{byKey: map[string]*Lab{}, cache: lab.NewAnswerCache(4096), sem: make(chan struct{}, 2)}
	cwd, _ := os.Getwd()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.md"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if !bytes.Contains(src, []byte("```exercise")) {
				continue
			}
			base := filepath.Base(f)
			name, lang := strings.TrimSuffix(base, ".md"), "en"
			if strings.HasSuffix(base, ".ko.md") {
				name, lang = strings.TrimSuffix(base, ".ko.md"), "ko"
			}
			if !labNameRE.MatchString(name) {
				continue
			}
			// Commands in the answers name the file as a user would type it.
			if rel, err := filepath.Rel(cwd, f); err == nil && cwd != "" && !strings.HasPrefix(rel, "..") {
				f = rel
			}
			l, err := lab.Parse(f, src)
			if err != nil {
				return nil, err
			}
			xs, err := l.Exercises()
			if err != nil {
				return nil, err
			}
			if len(xs) == 0 {
				continue
			}
			entry := c.byKey[name]
			if entry == nil {
				entry = &Lab{Name: name, Title: map[string]string{}, Exercises: map[string][]*lab.Exercise{}}
				c.byKey[name] = entry
				c.Labs = append(c.Labs, entry)
			}
			if _, dup := entry.Exercises[lang]; dup {
				return nil, fmt.Errorf("%s: a lab named %q in %s is already loaded from another directory", f, name, lang)
			}
			entry.Title[lang] = l.Title
			entry.Exercises[lang] = xs
		}
	}
	for _, l := range c.Labs {
		if _, ok := l.Exercises["en"]; !ok {
			return nil, fmt.Errorf("lab %q: exercises in Korean only; the English file must have them too", l.Name)
		}
		if err := agree(l); err != nil {
			return nil, err
		}
	}
	sort.Slice(c.Labs, func(i, j int) bool { return c.Labs[i].Name < c.Labs[j].Name })
	return c, nil
}

// agree checks that a translation has the same exercises as the English lab.
func agree(l *Lab) error {
	en := l.Exercises["en"]
	for _, lang := range Langs[1:] {
		xs, ok := l.Exercises[lang]
		if !ok {
			continue
		}
		if len(xs) != len(en) {
			return fmt.Errorf("%s: %d exercises, but the English lab has %d", xs[0].File, len(xs), len(en))
		}
		for i := range xs {
			if xs[i].ID != en[i].ID || xs[i].Kind != en[i].Kind || len(xs[i].Choices) != len(en[i].Choices) || xs[i].Correct != en[i].Correct {
				return fmt.Errorf("%s:%d: exercise %q does not match %s's %q", xs[i].File, xs[i].FenceLine, xs[i].ID, en[i].File, en[i].ID)
			}
		}
	}
	return nil
}

// Lab returns the lab with the given name, or nil.
func (c *Catalog) Lab(name string) *Lab { return c.byKey[name] }

// Count is the number of exercises (in English) over every lab.
func (c *Catalog) Count() int {
	n := 0
	for _, l := range c.Labs {
		n += len(l.Exercises["en"])
	}
	return n
}

// Instance computes one exercise for a seed in a language.
func (c *Catalog) Instance(ctx context.Context, x *lab.Exercise, seed uint64) (*lab.Instance, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.sem }()
	return x.InstanceCached(ctx, seed, c.cache)
}

// Instances computes every exercise of a lab for a seed in a language.
func (c *Catalog) Instances(ctx context.Context, l *Lab, lang string, seed uint64) ([]*lab.Instance, error) {
	var out []*lab.Instance
	for _, x := range l.list(lang) {
		in, err := c.Instance(ctx, x, seed)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// MaxSeed is the largest seed: what a browser's number holds exactly.
const MaxSeed = 1<<53 - 1

// ParseSeed reads a seed as a page's ?seed= gives it.
func ParseSeed(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || n > MaxSeed {
		return 0, fmt.Errorf("want a whole number from 0 to %d, got %q", uint64(MaxSeed), s)
	}
	return n, nil
}

// Hide removes what reveals an answer from an instance (class mode, before
// the teacher reveals).
func Hide(in *lab.Instance) *lab.Instance {
	cp := *in
	cp.Answer, cp.Correct, cp.Tolerance, cp.AnswerText, cp.AnswerShort, cp.Explain = nil, 0, nil, "", "", ""
	if cp.Scenario != nil {
		s := *cp.Scenario
		s.Metric, s.Call = "", 0
		cp.Scenario = &s
	}
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
		if !contains(Langs, lang) {
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
			resp.Lang, resp.Title = "en", l.Title["en"]
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

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
