package server

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// fingerprinted matches the names Hugo gives fingerprinted resources
// (name.<hex digest>.ext): they never change, so they may be cached for a
// year. Everything else is revalidated on each load (Last-Modified), so a
// rebuilt page shows at once.
var fingerprinted = regexp.MustCompile(`\.[0-9a-f]{16,}\.[A-Za-z0-9]+$`)

// staticHandler serves the built site in dir. It serves only files inside
// dir (through an os.Root: a symbolic link that leads out of it is not
// followed), never lists directories, never serves dot files, answers a
// missing file with the site's 404.html (status 404) when there is one,
// and explains how to build the site when dir does not exist. Range
// requests get one range at most (limitRange).
func staticHandler(dir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// Opened per request: make site replaces the directory.
		root, err := os.OpenRoot(dir)
		if err != nil {
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, fmt.Sprintf("The site is not built: %s does not exist.\nRun `make site` first (or `make serve`, which builds it and starts sim serve).\n", dir), http.StatusServiceUnavailable)
			return
		}
		defer root.Close()
		site := root.FS()
		p := path.Clean("/" + r.URL.Path)
		for _, part := range strings.Split(p, "/") {
			if strings.HasPrefix(part, ".") {
				notFound(w, r, site)
				return
			}
		}
		name := strings.TrimPrefix(p, "/")
		if name == "" {
			name = "."
		}
		fi, err := fs.Stat(site, name)
		if err == nil && fi.IsDir() {
			fi, err = fs.Stat(site, path.Join(name, "index.html"))
		}
		if err != nil || fi.IsDir() {
			notFound(w, r, site)
			return
		}
		if fingerprinted.MatchString(p) {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !limitRange(w, r, fi.Size()) {
			return
		}
		http.FileServerFS(site).ServeHTTP(w, r)
	})
}

// limitRange applies the server's rule for Range headers before the file
// server sees them: a request for several ranges gets the whole file (RFC
// 9110 lets a server ignore Range; serving many small ranges as multipart
// would send more than the file), and a suffix range of zero bytes
// ("bytes=-0") is unsatisfiable (416). False when it has answered.
func limitRange(w http.ResponseWriter, r *http.Request, size int64) bool {
	spec, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes=")
	if !ok {
		return true
	}
	if strings.Contains(spec, ",") {
		r.Header.Del("Range")
		return true
	}
	suffix, ok := strings.CutPrefix(strings.TrimSpace(spec), "-")
	if n, err := strconv.ParseInt(strings.TrimSpace(suffix), 10, 64); ok && err == nil && n == 0 {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		http.Error(w, "416 requested range not satisfiable: a suffix of zero bytes", http.StatusRequestedRangeNotSatisfiable)
		return false
	}
	return true
}

// notFound answers with the site's 404 page: the language's own
// (public/ko/404.html for /ko/…) when there is one, else the root one.
func notFound(w http.ResponseWriter, r *http.Request, site fs.FS) {
	w.Header().Set("Cache-Control", "no-cache")
	var page []byte
	err := fs.ErrNotExist
	if lang, _, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); ok && lang != "" && !strings.HasPrefix(lang, ".") && fs.ValidPath(lang) {
		page, err = fs.ReadFile(site, path.Join(lang, "404.html"))
	}
	if err != nil {
		page, err = fs.ReadFile(site, "404.html")
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
