package web

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Langs are the languages a page may be written in; the first is the
// original, the others are translations named page.<lang>.md.
var Langs = []string{"en", "ko"}

var pageNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

// ValidName reports whether name can be a page's name: letters, digits, -
// and _, at most 100 bytes, so a name from a request is never a path.
func ValidName(name string) bool { return pageNameRE.MatchString(name) }

// PageName is the name and language of the Markdown file at path under
// root: its file name without .md or .<lang>.md, a bundle's index.md named
// by its folder; "" for a file that is not a page.
func PageName(root, path string) (name, lang string) {
	base := filepath.Base(path)
	if !strings.HasSuffix(base, ".md") {
		return "", ""
	}
	name, lang = strings.TrimSuffix(base, ".md"), Langs[0]
	for _, l := range Langs[1:] {
		if strings.HasSuffix(name, "."+l) {
			name, lang = strings.TrimSuffix(name, "."+l), l
		}
	}
	if name == "index" || name == "_index" {
		dir := filepath.Dir(path)
		if filepath.Clean(dir) == filepath.Clean(root) {
			return "", ""
		}
		name = filepath.Base(dir)
	}
	if !ValidName(name) {
		return "", ""
	}
	return name, lang
}

// A Page is one page of the labs' directories and its translations.
type Page struct {
	Name  string
	Root  string            // the directory it was found in
	Paths map[string]string // language → file
}

// Path is the page's file in lang, or the original's when it has no such
// translation, or else any translation's.
func (p *Page) Path(lang string) string {
	if f, ok := p.Paths[lang]; ok {
		return f
	}
	for _, l := range Langs {
		if f, ok := p.Paths[l]; ok {
			return f
		}
	}
	return ""
}

// An Index finds the Markdown pages of some directories by name (the key
// both sim serve's runs and class mode use), with each page's languages.
// Directories starting with . or _ are skipped; when two directories hold a
// page of the same name and language, the first wins and the other is
// logged.
type Index struct {
	dirs []string
	logf func(string, ...any)

	mu      sync.Mutex
	pages   map[string]*Page
	indexed time.Time
}

// NewIndex indexes dirs; logf (nil: discard) hears of unreadable
// directories and duplicate names.
func NewIndex(dirs []string, logf func(string, ...any)) *Index {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	x := &Index{dirs: dirs, logf: logf}
	x.Refresh()
	return x
}

// Dirs are the directories indexed.
func (x *Index) Dirs() []string { return x.dirs }

// Refresh looks at the directories again.
func (x *Index) Refresh() {
	pages := map[string]*Page{}
	for _, root := range x.dirs {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == root {
					x.logf("pages: %v", err)
				}
				return nil
			}
			if d.IsDir() {
				if path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			name, lang := PageName(root, path)
			if name == "" {
				return nil
			}
			p := pages[name]
			if p == nil {
				p = &Page{Name: name, Root: root, Paths: map[string]string{}}
				pages[name] = p
			}
			if prev, dup := p.Paths[lang]; dup {
				x.logf("pages: %s and %s are both page %q (%s); using the first", prev, path, name, lang)
				return nil
			}
			p.Paths[lang] = path
			return nil
		})
	}
	x.mu.Lock()
	x.pages, x.indexed = pages, time.Now()
	x.mu.Unlock()
}

// Pages lists the pages by name.
func (x *Index) Pages() []*Page {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]*Page, 0, len(x.pages))
	for _, p := range x.pages {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the page called name. An unknown name makes it look at the
// directories again (at most twice a second), for pages added while the
// server runs.
func (x *Index) Lookup(name string) (*Page, bool) {
	if !ValidName(name) {
		return nil, false
	}
	x.mu.Lock()
	p, ok := x.pages[name]
	stale := time.Since(x.indexed) > 500*time.Millisecond
	x.mu.Unlock()
	if !ok && stale {
		x.Refresh()
		x.mu.Lock()
		p, ok = x.pages[name]
		x.mu.Unlock()
	}
	return p, ok
}
