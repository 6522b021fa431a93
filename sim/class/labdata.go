package class

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The lab pages' data in class mode.
//
// Each lab page loads its lab as data, labs/NAME.<hash>.json (`sim lab
// --json`, fingerprinted by Hugo), for the model in the page, which on a
// static host runs the blocks and computes the exercises without a
// server. That file holds every exercise whole: its expectations (the
// answer formula, "answer ≈ 22 ±5%"), its right choice, its explanation
// and model answer, and the block, variant, settings, varied values and
// metric that compute its answer for any seed, the seed a class sends each
// student in "joined". A student would read the answers there before the
// reveal.
//
// In class mode the page needs none of it: sim serve answers, so the
// exercises come from /exercise/api (hidden until the reveal) and the runs
// from /ws; the file is only the page's fallback for running blocks when
// the server's socket fails. So while a class runs, sim serve serves
// labs/*.json with its exercises left out (an empty list, which the page's
// model reads as a lab without exercises); the blocks stay whole. A static
// host and sim serve without --class serve the file as built.

// labDataMax bounds a labs/*.json file the filter reads whole (the built
// ones are a few hundred KB at most).
const labDataMax = 32 << 20

// labData wraps site, the handler that serves the built site, for the
// files under /labs/: a .json file whose object has "exercises" is served
// with an empty list there, and never cached (a browser must not keep the
// class's copy as the file); any other file is site's answer unchanged.
func labData(site http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.PathValue("file"), ".json") {
			site.ServeHTTP(w, r)
			return
		}
		// The whole file, whatever the request asked for (a range, or
		// "not modified" of a copy the browser kept): only a whole file
		// can be filtered.
		in := r.Clone(r.Context())
		in.Method = http.MethodGet
		for _, h := range []string{"Range", "If-Range", "If-Modified-Since", "If-None-Match", "If-Match", "If-Unmodified-Since"} {
			in.Header.Del(h)
		}
		rec := &recorder{header: http.Header{}}
		site.ServeHTTP(rec, in)
		if rec.over {
			http.Error(w, fmt.Sprintf("%s is larger than class mode serves (%d bytes)", r.URL.Path, labDataMax), http.StatusInternalServerError)
			return
		}
		body := rec.body.Bytes()
		if rec.status == 0 || rec.status == http.StatusOK {
			var err error
			if body, err = withoutExercises(body); err != nil {
				http.Error(w, fmt.Sprintf("%s: %v", r.URL.Path, err), http.StatusInternalServerError)
				return
			}
			for _, h := range []string{"Last-Modified", "Etag", "Accept-Ranges", "Content-Range"} {
				rec.header.Del(h)
			}
			rec.header.Set("Cache-Control", "no-store")
			rec.header.Set("Content-Type", "application/json")
			rec.header.Set("X-Content-Type-Options", "nosniff")
		}
		rec.header.Set("Content-Length", strconv.Itoa(len(body)))
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		w.WriteHeader(rec.status)
		if r.Method != http.MethodHead {
			w.Write(body)
		}
	})
}

// withoutExercises returns a lab's data (a JSON object with "exercises")
// with an empty list of exercises; other JSON is returned as it is.
func withoutExercises(body []byte) ([]byte, error) {
	if !bytes.Contains(body, []byte(`"exercises"`)) {
		return body, nil
	}
	var lab map[string]json.RawMessage
	if err := json.Unmarshal(body, &lab); err != nil {
		return nil, fmt.Errorf("not a lab's data: %v", err)
	}
	if _, ok := lab["exercises"]; !ok {
		return body, nil
	}
	lab["exercises"] = json.RawMessage("[]")
	return json.Marshal(lab)
}

// recorder keeps what the site's handler answered, up to labDataMax bytes.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	over   bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body.Len()+len(p) > labDataMax {
		r.over = true
		return 0, fmt.Errorf("more than %d bytes", labDataMax)
	}
	return r.body.Write(p)
}

// mountLabData puts labData in front of the handler mux serves /labs/
// with (the built site's, which sim serve mounts at / before the class):
// nothing when mux serves no site.
func mountLabData(mux *http.ServeMux) {
	site, pattern := mux.Handler(&http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/labs/lab.json"}, Header: http.Header{}})
	if pattern == "" {
		return
	}
	mux.Handle("GET /labs/{file}", labData(site))
}
