package server

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/web"
)

// pages finds the page a run names (web.Index) and keeps it parsed. The
// English and the Korean page share their blocks; the English file is read
// when both exist. A page is parsed again when its file changes, so an
// author's edit reaches the next run without a restart.
type pages struct {
	index *web.Index
	logf  func(string, ...any)

	mu    sync.Mutex
	cache map[string]*parsed // path → parsed page
}

type parsed struct {
	mod  time.Time
	size int64
	lab  *lab.Lab
	err  error
}

func newPages(index *web.Index, logf func(string, ...any)) *pages {
	return &pages{index: index, logf: logf, cache: map[string]*parsed{}}
}

// load parses every page, logging the pages that fail to parse. It returns
// the number of pages with ```sim blocks.
func (p *pages) load() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	withBlocks := 0
	for _, pg := range p.index.Pages() {
		l, err := p.parseLocked(pg.Path(web.Langs[0]))
		if err != nil {
			p.logf("sim serve: %v", err)
			continue
		}
		if len(l.Blocks) > 0 {
			withBlocks++
		}
	}
	return withBlocks
}

func (p *pages) parseLocked(path string) (*lab.Lab, error) {
	fi, err := os.Stat(path)
	if err != nil {
		delete(p.cache, path)
		return nil, err
	}
	if c := p.cache[path]; c != nil && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
		return c.lab, c.err
	}
	l, err := lab.ReadFile(path)
	p.cache[path] = &parsed{mod: fi.ModTime(), size: fi.Size(), lab: l, err: err}
	return l, err
}

// lookup returns the parsed page called name.
func (p *pages) lookup(name string) (*lab.Lab, error) {
	if !web.ValidName(name) {
		return nil, fmt.Errorf("lab %q: want a page name such as \"php-persistent-share\" (letters, digits, - and _)", lab.Clip(name, 100))
	}
	pg, ok := p.index.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("no page %q in %s", name, strings.Join(p.index.Dirs(), ", "))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l, err := p.parseLocked(pg.Path(web.Langs[0]))
	if os.IsNotExist(err) { // moved or removed since it was indexed
		p.index.Refresh()
		if pg, ok = p.index.Lookup(name); ok {
			l, err = p.parseLocked(pg.Path(web.Langs[0]))
		}
	}
	return l, err
}
