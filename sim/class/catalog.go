package class

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/web"
)

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

// LoadCatalog reads every page of the index that holds an ```exercise
// block, in each of its languages. A file whose exercises do not parse is
// an error with its line.
func LoadCatalog(index *web.Index) (*Catalog, error) {
	c := &Catalog{byKey: map[string]*Lab{}, cache: lab.NewAnswerCache(4096), sem: make(chan struct{}, 2)}
	cwd, _ := os.Getwd()
	for _, page := range index.Pages() { // sorted by name
		for _, lang := range web.Langs {
			f, ok := page.Paths[lang]
			if !ok {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if !bytes.Contains(src, []byte("```exercise")) {
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
			entry := c.byKey[page.Name]
			if entry == nil {
				entry = &Lab{Name: page.Name, Title: map[string]string{}, Exercises: map[string][]*lab.Exercise{}}
				c.byKey[page.Name] = entry
				c.Labs = append(c.Labs, entry)
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
	return c, nil
}

// agree checks that a translation has the same exercises as the English lab.
func agree(l *Lab) error {
	en := l.Exercises["en"]
	for _, lang := range web.Langs[1:] {
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
