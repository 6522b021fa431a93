package class

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim/lab"
)

// builtLab writes what `make data` and Hugo make of a lab into a site's
// labs/ folder, as NAME<suffix>.<hash>.json, and returns its name there
// and the data as written.
func builtLab(t *testing.T, public, md, suffix string) (string, *lab.Data) {
	t.Helper()
	l, err := lab.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Data()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Exercises) == 0 {
		t.Fatalf("%s has no exercises", md)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(md), ".md"), ".ko") + suffix + ".9490c0e44d6410ea08dcce6088054c7fe37dfc07cc37b71f75abcbf2976581e7.json"
	os.MkdirAll(filepath.Join(public, "labs"), 0o755)
	if err := os.WriteFile(filepath.Join(public, "labs", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, d
}

// answerStrings are the texts of a lab's exercises that give an answer
// away: the expectations (the answer formulas), explanations and model
// answers.
func answerStrings(d *lab.Data) []string {
	var out []string
	for _, x := range d.Exercises {
		for _, e := range x.Expect {
			out = append(out, e.Text)
		}
		for _, s := range []string{x.Explain, x.ModelAnswer} {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// strs lists every string in a decoded JSON value.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, strs(x)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, x := range v {
			out = append(out, k)
			out = append(out, strs(x)...)
		}
		return out
	}
	return nil
}

// In class mode the lab pages' data files (labs/NAME.<hash>.json, which
// hold each exercise whole: its answer formula, right choice, explanation
// and the scenario that computes it for any seed) are served without their
// exercises, whatever the request asks (a range, a revalidation), and not
// cached; the blocks stay whole, so the page's model still reads the file.
// Without class mode the mux serves the file as built, and other files
// under /labs/ pass through.
func TestLabDataHidden(t *testing.T) {
	public := t.TempDir()
	en, enData := builtLab(t, public, "../../labs/php-persistent-share.md", "")
	ko, koData := builtLab(t, public, "../../labs/php-persistent-share.ko.md", ".ko")
	os.MkdirAll(filepath.Join(public, "labs", php), 0o755)
	os.WriteFile(filepath.Join(public, "labs", php, "index.html"), []byte("<h1>the lab</h1>"), 0o644)
	record := []byte(`{"lab":"php-persistent-share","blocks":[]}`)
	os.WriteFile(filepath.Join(public, "labs", php+".real.json"), record, 0o644)
	// The site as sim serve serves it: fingerprinted files kept for a year.
	site := func() *http.ServeMux {
		mux := http.NewServeMux()
		files := http.FileServerFS(os.DirFS(public))
		mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			files.ServeHTTP(w, r)
		}))
		return mux
	}
	get := func(mux http.Handler, method, path string, header http.Header) *http.Response {
		req := httptest.NewRequest(method, path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Result()
	}
	body := func(resp *http.Response) []byte {
		b, _ := io.ReadAll(resp.Body)
		return b
	}

	// No class: the file as built, answers and all.
	plain := site()
	for _, name := range []string{en, ko} {
		resp := get(plain, "GET", "/labs/"+name, nil)
		want, _ := os.ReadFile(filepath.Join(public, "labs", name))
		if got := body(resp); resp.StatusCode != 200 || string(got) != string(want) {
			t.Errorf("without class mode, %s: %d, %d bytes; want the file's %d", name, resp.StatusCode, len(got), len(want))
		}
	}

	cs, _, _, _ := lanClass(t, Options{})
	mux := site()
	cs.Mount(mux)
	later := time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name   string
		data   *lab.Data
		header http.Header
	}{
		{en, enData, nil},
		{ko, koData, nil},
		{en, enData, http.Header{"Range": {"bytes=0-99"}}},
		{en, enData, http.Header{"If-Modified-Since": {later}}},
	} {
		resp := get(mux, "GET", "/labs/"+tc.name, tc.header)
		b := body(resp)
		if resp.StatusCode != 200 {
			t.Errorf("%s %v: status %d", tc.name, tc.header, resp.StatusCode)
			continue
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tc.name, cc)
		}
		if n, _ := strconv.Atoi(resp.Header.Get("Content-Length")); n != len(b) {
			t.Errorf("%s: Content-Length %d for %d bytes", tc.name, n, len(b))
		}
		var served map[string]any
		if err := json.Unmarshal(b, &served); err != nil {
			t.Fatalf("%s %v: %v: %.200s", tc.name, tc.header, err, b)
		}
		if xs, ok := served["exercises"].([]any); !ok || len(xs) != 0 {
			t.Errorf("%s: exercises %v, want an empty list", tc.name, served["exercises"])
		}
		all := strs(served)
		for _, secret := range answerStrings(tc.data) {
			for _, s := range all {
				if strings.Contains(s, secret) {
					t.Errorf("%s: an exercise's %q is served in class mode", tc.name, secret)
				}
			}
		}
		// The blocks stay whole, and the page's model reads the file.
		var d, built lab.Data
		file, _ := os.ReadFile(filepath.Join(public, "labs", tc.name))
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(file, &built); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d.Blocks, built.Blocks) || d.File != built.File || d.Title != built.Title {
			t.Errorf("%s: the blocks, file or title changed", tc.name)
		}
		if _, err := lab.FromData(&d); err != nil {
			t.Errorf("%s: the model cannot read the served lab: %v", tc.name, err)
		}
	}
	if resp := get(mux, "HEAD", "/labs/"+en, nil); resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || len(body(resp)) != 0 {
		t.Errorf("HEAD: %d %v", resp.StatusCode, resp.Header)
	}
	// Other files under /labs/ are the site's.
	if resp := get(mux, "GET", "/labs/"+php+".real.json", nil); resp.StatusCode != 200 || string(body(resp)) != string(record) {
		t.Errorf("a lab's record in class mode: %d", resp.StatusCode)
	}
	if resp := get(mux, "GET", "/labs/"+php+"/", nil); resp.StatusCode != 200 || !strings.Contains(string(body(resp)), "the lab") {
		t.Errorf("a lab page in class mode: %d", resp.StatusCode)
	}
	if resp := get(mux, "GET", "/labs/"+php, nil); resp.StatusCode != http.StatusMovedPermanently {
		t.Errorf("a lab page without its slash in class mode: %d, want the site's redirect", resp.StatusCode)
	}
	if resp := get(mux, "GET", "/labs/nope.json", nil); resp.StatusCode != 404 {
		t.Errorf("a missing file in class mode: %d", resp.StatusCode)
	}
}

// The teacher's page says what class mode does not hide: the built pages'
// own answers, and the key a seed gives with the lab's file.
func TestTeacherNoticeBuiltKey(t *testing.T) {
	cs, _, mux, _ := lanClass(t, Options{Seed: 7})
	// The page carries the words of its language only (?lang=ko).
	for lang, words := range map[string]string{"en": "the built pages' source holds the answers", "ko": "빌드된 페이지의 소스에는"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/class/teacher?token="+cs.Token()+"&lang="+lang, nil))
		page := rec.Body.String()
		for _, want := range []string{`<span data-t="builtkey">`, words, "sim exercise --key"} {
			if !strings.Contains(page, want) {
				t.Errorf("the teacher's page (%s) lacks %q", lang, want)
			}
		}
	}
}
