package server

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/lab"
)

// pages finds the page a run names and keeps it parsed. A page is keyed by
// its file name without .md or .ko.md (a bundle's index.md by its folder),
// so the English and the Korean page share their blocks; the English file
// is read when both exist. A page is parsed again when its file changes, so
// an author's edit reaches the next run without a restart.
type pages struct {
	dirs []string
	logf func(string, ...any)

	mu      sync.Mutex
	index   map[string]string // name → path
	indexed time.Time
	cache   map[string]*parsed // path → parsed page
}

type parsed struct {
	mod  time.Time
	size int64
	lab  *lab.Lab
	err  error
}

var pageNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

func newPages(dirs []string, logf func(string, ...any)) *pages {
	return &pages{dirs: dirs, logf: logf, cache: map[string]*parsed{}}
}

// load indexes the directories and parses every page, logging the pages
// that fail to parse. It returns the number of pages with ```sim blocks.
func (p *pages) load() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reindexLocked()
	names := make([]string, 0, len(p.index))
	for n := range p.index {
		names = append(names, n)
	}
	sort.Strings(names)
	withBlocks := 0
	for _, n := range names {
		l, err := p.parseLocked(p.index[n])
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

func (p *pages) reindexLocked() {
	index := map[string]string{}
	for _, root := range p.dirs {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == root {
					p.logf("sim serve: pages: %v", err)
				}
				return nil
			}
			base := d.Name()
			if d.IsDir() {
				if path != root && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			name, korean := pageName(root, path)
			if name == "" {
				return nil
			}
			prev, seen := index[name]
			switch {
			case !seen:
				index[name] = path
			case strings.HasSuffix(prev, ".ko.md") && !korean:
				index[name] = path
			case !korean && !strings.HasSuffix(prev, ".ko.md"):
				p.logf("sim serve: pages: %s and %s share the name %q; using the first", prev, path, name)
			}
			return nil
		})
	}
	p.index, p.indexed = index, time.Now()
}

// pageName is the key of the page at path, and whether it is a Korean
// translation; "" for files that are not pages.
func pageName(root, path string) (name string, korean bool) {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".ko.md"):
		name, korean = strings.TrimSuffix(base, ".ko.md"), true
	case strings.HasSuffix(base, ".md"):
		name = strings.TrimSuffix(base, ".md")
	default:
		return "", false
	}
	if name == "index" || name == "_index" {
		dir := filepath.Dir(path)
		if filepath.Clean(dir) == filepath.Clean(root) {
			return "", false
		}
		name = filepath.Base(dir)
	}
	if !pageNameRE.MatchString(name) {
		return "", false
	}
	return name, korean
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

// lookup returns the parsed page called name. An unknown name makes it look
// at the directories again (at most twice a second), for pages added while
// the server runs.
func (p *pages) lookup(name string) (*lab.Lab, error) {
	if !pageNameRE.MatchString(name) {
		return nil, fmt.Errorf("lab %q: want a page name such as \"php-persistent-share\" (letters, digits, - and _)", name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	path, ok := p.index[name]
	if !ok && time.Since(p.indexed) > 500*time.Millisecond {
		p.reindexLocked()
		path, ok = p.index[name]
	}
	if !ok {
		return nil, fmt.Errorf("no page %q in %s", name, strings.Join(p.dirs, ", "))
	}
	l, err := p.parseLocked(path)
	if os.IsNotExist(err) {
		p.reindexLocked()
		if path, ok = p.index[name]; ok {
			l, err = p.parseLocked(path)
		}
	}
	return l, err
}
