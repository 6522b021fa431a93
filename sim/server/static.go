package server

import (
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// fingerprinted matches the names Hugo gives fingerprinted resources
// (name.<hex digest>.ext): they never change, so they may be cached for a
// year. Everything else is revalidated on each load (Last-Modified), so a
// rebuilt page shows at once.
var fingerprinted = regexp.MustCompile(`\.[0-9a-f]{16,}\.[A-Za-z0-9]+$`)

// staticHandler serves the built site in dir. It never lists directories,
// never serves dot files, answers a missing file with the site's 404.html
// (status 404) when there is one, and explains how to build the site when
// dir does not exist.
func staticHandler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, fmt.Sprintf("The site is not built: %s does not exist.\nRun `make site` first (or `make serve`, which builds it and starts sim serve).\n", dir), http.StatusServiceUnavailable)
			return
		}
		p := path.Clean("/" + r.URL.Path)
		for _, part := range strings.Split(p, "/") {
			if strings.HasPrefix(part, ".") {
				notFound(w, r, dir)
				return
			}
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		fi, err := os.Stat(full)
		if err == nil && fi.IsDir() {
			fi, err = os.Stat(filepath.Join(full, "index.html"))
		}
		if err != nil || fi.IsDir() {
			notFound(w, r, dir)
			return
		}
		if fingerprinted.MatchString(p) {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
}

// notFound answers with the site's 404 page: the language's own
// (public/ko/404.html for /ko/…) when there is one, else the root one.
func notFound(w http.ResponseWriter, r *http.Request, dir string) {
	w.Header().Set("Cache-Control", "no-cache")
	var page []byte
	err := os.ErrNotExist
	if lang, _, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); ok && lang != "" && !strings.HasPrefix(lang, ".") {
		page, err = os.ReadFile(filepath.Join(dir, lang, "404.html"))
	}
	if err != nil {
		page, err = os.ReadFile(filepath.Join(dir, "404.html"))
	}
	if err != nil {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		w.Write(page)
	}
}
